// Package tracediff is the engine of "sentry diff": it reads two runs'
// --strace JSON logs (one native, one in the sandbox), names their tasks by
// descent, normalises what must differ between any two runs (guest
// addresses, child tids), and compares the calls task by task. The CLI
// (cmd/sentry/diff.go) makes the runs; this package never runs anything,
// so it is tested on logs alone.
package tracediff

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"sentry/sentry"
)

// Log is one run's calls, by task.
type Log struct {
	order   []string // task names, in order of first call
	tasks   map[string][]Call
	calls   int  // calls compared, over all tasks
	started bool // an execve was logged: COMMAND started
}

// Started reports whether the run logged an execve, that is started
// COMMAND. A run that did not either failed in the sentry or did not find
// COMMAND; comparing two such runs says nothing about the sandbox.
func (l *Log) Started() bool { return l.started }

// Calls is the number of calls compared, over all tasks.
func (l *Log) Calls() int { return l.calls }

// Tasks are the task names in order of their first call.
func (l *Log) Tasks() []string { return l.order }

// Task is the normalised call sequence of one task.
func (l *Log) Task(name string) []Call { return l.tasks[name] }

// ArgKinds maps each syscall name to how --strace printed its arguments
// (the table's Args), which says which arguments are guest addresses.
type ArgKinds map[string][]sentry.ArgKind

// KindsOf collects the argument kinds of every named call in table: the
// same table the logging sentry decoded the arguments with.
func KindsOf(table *sentry.SyscallTable) ArgKinds {
	m := ArgKinds{}
	for _, s := range table {
		if s.Name != "" {
			m[s.Name] = s.Args
		}
	}
	return m
}

// line is the part of a --strace JSON line the engine reads.
type line struct {
	Msg     string          `json:"msg"`
	TID     int             `json:"tid"`
	Syscall string          `json:"syscall"`
	Args    string          `json:"args"`
	Ret     int64           `json:"-"`
	RawRet  json.RawMessage `json:"ret"`
	Errno   string          `json:"errno"`
	Path    string          `json:"path"`
	// unknown: the log says "?", a host result the platform did not see.
	unknown bool
}

// ReadLogFile reads the --strace JSON log in the file name.
func ReadLogFile(name string, kinds ArgKinds) (*Log, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading the call log: %w", err)
	}
	defer f.Close()
	return ParseLog(f, name, kinds)
}

// ParseLog reads a --strace JSON log from r; name is what errors call it.
// Lines other than logged calls (the sentry's own messages) are skipped.
func ParseLog(r io.Reader, name string, kinds ArgKinds) (*Log, error) {
	var lines []line
	sc := bufio.NewScanner(r)
	// A line holds up to a few quoted PATH_MAX paths.
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if string(l.RawRet) == `"?"` {
			l.unknown = true
		} else if len(l.RawRet) > 0 {
			if err := json.Unmarshal(l.RawRet, &l.Ret); err != nil {
				return nil, fmt.Errorf("%s:%d: ret: %w", name, n, err)
			}
		}
		if l.Msg == "syscall" && l.Syscall != "" {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return buildLog(lines, kinds), nil
}

// cloneCalls return the new task's tid.
var cloneCalls = map[string]bool{"clone": true, "clone3": true, "fork": true, "vfork": true}

// addrCalls return an address, which ASLR makes differ.
var addrCalls = map[string]bool{"mmap": true, "mremap": true, "brk": true, "shmat": true}

// buildLog names the tasks and normalises their calls.
func buildLog(lines []line, kinds ArgKinds) *Log {
	cl := &Log{tasks: map[string][]Call{}}
	// The init stage is the sentry binary, a Go program whose runtime
	// threads may make a trapped call after the filter is loaded and
	// before its main thread execs COMMAND; COMMAND starts at the first
	// execve, and its tid is the root task.
	first := -1
	for i, l := range lines {
		if l.Syscall == "execve" || l.Syscall == "execveat" {
			first = i
			break
		}
	}
	if first < 0 {
		return cl
	}
	cl.started = true
	lines = lines[first:]
	// Tasks are named by descent, as found from the clone-family returns,
	// so that the name does not depend on how the runs' tasks interleave.
	children := map[int][]int{}
	for _, l := range lines {
		if cloneCalls[l.Syscall] && l.Errno == "" && l.Ret > 0 {
			children[l.TID] = append(children[l.TID], int(l.Ret))
		}
	}
	names := map[int]string{lines[0].TID: "1"}
	queue := []int{lines[0].TID}
	for len(queue) > 0 {
		tid := queue[0]
		queue = queue[1:]
		for i, c := range children[tid] {
			if _, dup := names[c]; dup {
				continue // a reused tid: keep its first name
			}
			names[c] = names[tid] + "." + strconv.Itoa(i+1)
			queue = append(queue, c)
		}
	}
	for _, l := range lines {
		task, ok := names[l.TID]
		if !ok {
			continue // not descended from COMMAND: the init stage's
		}
		c := Call{Syscall: l.Syscall, Args: normaliseArgs(l.Syscall, l.Args, kinds[l.Syscall]), Path: l.Path}
		switch {
		case l.unknown:
			c.Result = "?"
		case l.Errno != "":
			c.Result = "-1 " + l.Errno
		case cloneCalls[l.Syscall] && l.Ret > 0:
			c.Result = "task " + names[int(l.Ret)]
		case addrCalls[l.Syscall]:
			c.Result = "ADDR"
		default:
			c.Result = strconv.FormatInt(l.Ret, 10)
		}
		if _, seen := cl.tasks[task]; !seen {
			cl.order = append(cl.order, task)
		}
		cl.tasks[task] = append(cl.tasks[task], c)
		cl.calls++
	}
	return cl
}

// normaliseArgs replaces the arguments that are addresses in the guest
// (which ASLR moves between runs) by PTR; NULL stays 0x0.
func normaliseArgs(name, args string, kinds []sentry.ArgKind) string {
	parts := splitArgs(args)
	for i, p := range parts {
		ptr := i < len(kinds) && kinds[i] == sentry.ArgPtr
		// clone's last argument is the new thread's TLS, an address
		// printed as hex.
		ptr = ptr || (name == "clone" && i == 4)
		if ptr && strings.HasPrefix(p, "0x") && p != "0x0" {
			parts[i] = "PTR"
		}
	}
	if name == "fcntl" && len(parts) == 3 {
		parts[2] = fcntlArg(parts[1], parts[2])
	}
	return strings.Join(parts, ", ")
}

// fcntlArg normalises fcntl's third argument, printed as hex whatever the
// command: the commands that read no argument get whatever was left in the
// register (often a stack address), and the lock commands get a pointer.
func fcntlArg(cmd, arg string) string {
	switch cmd {
	case "F_DUPFD", "F_DUPFD_CLOEXEC", "F_SETFD", "F_SETFL":
		return arg
	case "F_GETFD", "F_GETFL":
		return "_"
	}
	// The lock commands and those --strace prints by number: keep what
	// cannot be an address.
	if v, err := strconv.ParseUint(strings.TrimPrefix(arg, "0x"), 16, 64); err == nil && v >= 0x10000 {
		return "PTR"
	}
	return arg
}

// splitArgs splits a decoded argument list at the ", " between arguments,
// not at those inside a quoted path.
func splitArgs(s string) []string {
	if s == "" {
		return nil
	}
	var parts []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++ // the escaped byte cannot end the quote
		case s[i] == '"':
			quoted = !quoted
		case !quoted && strings.HasPrefix(s[i:], ", "):
			parts = append(parts, s[start:i])
			start = i + 2
			i++
		}
	}
	return append(parts, s[start:])
}
