package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"golang.org/x/sys/unix"

	"sentry/sentry"
	"sentry/syscalls"
)

// diffNativeCmd is the hidden subcommand that sets up the native run's
// mount namespace and then becomes "sentry run --tmpfs none". It is an
// argv word, not a flag, so that "sentry diff" cannot be talked into it.
const diffNativeCmd = "__diff-native"

const diffUsage = `Usage: sentry diff [flags] [run flags] -- COMMAND [ARG...]

Runs COMMAND twice and compares what it did:

  native   every call executed by the host kernel, with a fresh kernel
           tmpfs mounted at each --tmpfs path (default /tmp) in a private
           mount namespace, so the host's own directories are untouched
           (this needs root: unshare(CLONE_NEWNS) and mount(2));
  sandbox  "sentry run" with the given run flags.

Both runs are traced with --strace (the native one with --tmpfs none, so
every trapped call passes through to the host and is still logged); their
stdout and stderr are captured, not shown, and stdin is /dev/null.

The call logs are compared task by task. A task is a process or thread,
named by where it came from rather than by its tid, so that the two runs'
different pids match: "1" is the task that ran COMMAND, "1.2" the second
task that 1 created with clone, fork or vfork, and so on. Within a task the
sequence of (syscall, arguments, result) must be equal. At a divergence
the comparison looks up to 16 calls ahead for the two to agree again, so a
call only one run made is reported alone rather than shifting every later
call. The first --max divergences are printed side by side, then both exit
statuses, and both runs' stdout/stderr when they differ.

What is normalised because it must differ between two runs: pointer
arguments (buffers, stacks, the clone TLS) print as PTR and addresses that
mmap returns as ADDR (ASLR); the child tid returned by clone, fork and vfork
prints as the child's task name; calls the sentry's own init stage makes
before it execs COMMAND are dropped. File descriptor numbers and paths are
compared as they are, since both runs use the same ones.

Limitations: the comparison is sequential per task, so a program whose
call sequence depends on timing or chance (threads racing, polling loops,
retries, Python's randomised hashing moving an mmap: set PYTHONHASHSEED)
can differ without a bug; output that holds times, pids or inode numbers
differs between any two runs. Calls are matched by position, and the
interleaving of tasks is not compared. Only trapped calls (the file system
family, mmap, execve, clone, ...) are logged and compared.

Exit status: 0 when the calls, the exit statuses and the outputs agree; 1
when they diverge; 125 when a run could not be made (setting up the native
namespace failed, or the sentry failed or never started COMMAND); 2 for
usage errors.

Flags of diff:
  --max N    print at most N divergences (default 10; 0 prints none)
  --json     print the report as JSON instead

Run flags (passed to the sandbox run; --cpu to both; --log, --log-format
and --strace are set by diff; --stats is refused, as its table would land in
the stderr that is compared: use --stats-json):
`

// diffFlags are the flags of "sentry diff" besides the run flags.
type diffFlags struct {
	max  int
	json bool
}

// diffMain is "sentry diff" and, with diffNativeCmd first, the native
// run's namespace stage.
func diffMain(args []string) int {
	if len(args) > 0 && args[0] == diffNativeCmd {
		return diffNativeMain(args[1:])
	}
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	var df diffFlags
	var rf runFlags
	fs.IntVar(&df.max, "max", 10, "print at most `N` divergences")
	fs.BoolVar(&df.json, "json", false, "print the report as JSON")
	rf.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), diffUsage)
		runOnly := flag.NewFlagSet("run", flag.ContinueOnError)
		runOnly.SetOutput(fs.Output())
		(&runFlags{}).register(runOnly)
		runOnly.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "sentry diff: no command given (usage: sentry diff [flags] -- COMMAND [ARG...])")
		return exitUsage
	}
	if df.max < 0 {
		fmt.Fprintf(os.Stderr, "sentry diff: --max %d: want 0 or more\n", df.max)
		return exitUsage
	}
	// The runs' run flags are rebuilt from what was set rather than passed
	// on verbatim: the diff flags are mixed in, and --tmpfs must be split
	// (its String joins the specs with commas, which a spec may contain).
	var sandboxFlags, nativeFlags []string
	var usageErr error
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "max", "json", "tmpfs":
		case "log", "log-format":
			usageErr = fmt.Errorf("--%s: diff writes the logs itself", fl.Name)
		case "stats":
			usageErr = errors.New("--stats: the table would be compared as the guest's stderr; use --stats-json")
		case "strace":
			// Always on; accepted so a run command line can be reused.
		case "cpu":
			nativeFlags = append(nativeFlags, "--cpu="+fl.Value.String())
			sandboxFlags = append(sandboxFlags, "--cpu="+fl.Value.String())
		default:
			sandboxFlags = append(sandboxFlags, "--"+fl.Name+"="+fl.Value.String())
		}
	})
	if usageErr != nil {
		fmt.Fprintf(os.Stderr, "sentry diff: %v\n", usageErr)
		return exitUsage
	}
	for _, s := range rf.tmpfs.specs {
		sandboxFlags = append(sandboxFlags, "--tmpfs="+s)
	}
	specs, err := parseTmpfs(rf.tmpfs.specs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry diff: %v\n", err)
		return exitUsage
	}
	rep, code := diff(&df, specs, nativeFlags, sandboxFlags, argv)
	if rep == nil {
		return code
	}
	if df.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(os.Stderr, "sentry diff: writing the report: %v\n", err)
			return exitSandbox
		}
	} else {
		printDiffReport(os.Stdout, rep)
	}
	return code
}

// diffReport is the result of "sentry diff" (the --json document).
type diffReport struct {
	Command []string  `json:"command"`
	Equal   bool      `json:"equal"`
	Native  diffSide  `json:"native"`
	Sandbox diffSide  `json:"sandbox"`
	Diverge int       `json:"divergent_calls"` // all of them, not only those listed
	Calls   []diffRow `json:"divergences"`     // the first --max
	// Error says why a run could not be made (exit status 125 or 2); the
	// rest of the report is then incomplete.
	Error string `json:"error,omitempty"`
}

// diffSide is what one run did.
type diffSide struct {
	ExitStatus int    `json:"exit_status"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Calls      int    `json:"calls"`
}

// diffRow is one divergence: a pair of calls that differ, or a call only
// one run made (the other side is then nil and its index -1). Indexes
// count the task's calls from 0.
type diffRow struct {
	Task         string    `json:"task"`
	NativeIndex  int       `json:"native_index"`
	SandboxIndex int       `json:"sandbox_index"`
	Native       *diffCall `json:"native"`
	Sandbox      *diffCall `json:"sandbox"`
}

// diffCall is one logged call after normalisation.
type diffCall struct {
	Syscall string `json:"syscall"`
	Args    string `json:"args"`
	Result  string `json:"result"` // the return value, or "-1 ERRNO"
	Path    string `json:"path"`   // emulated or passthrough; not compared
}

func (c *diffCall) same(o *diffCall) bool {
	// "?" is a result the platform did not see (a call the unotify
	// platform passed through): it matches any.
	return c.Syscall == o.Syscall && c.Args == o.Args && (c.Result == o.Result || c.Result == "?" || o.Result == "?")
}

// diff makes both runs and compares them. A nil report comes with the
// exit status of a failure already reported on stderr.
func diff(df *diffFlags, specs []mountSpec, nativeFlags, sandboxFlags, argv []string) (*diffReport, int) {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry diff: finding the sentry binary: %v\n", err)
		return nil, exitSandbox
	}
	dir, err := diffTempDir(specs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry diff: %v\n", err)
		return nil, exitSandbox
	}
	defer os.RemoveAll(dir)

	// The native stage gets its mounts as one JSON argument: paths may
	// hold any character but NUL.
	setup := nativeSetup{ErrFile: filepath.Join(dir, "native.err")}
	for _, m := range specs {
		opts := "mode=" + strconv.FormatUint(uint64(m.mode), 8)
		if m.size > 0 {
			opts += ",size=" + strconv.FormatInt(m.size, 10)
		}
		setup.Mounts = append(setup.Mounts, nativeMount{Point: m.point, Opts: opts})
	}
	setupArg, err := json.Marshal(setup)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry diff: encoding the native setup: %v\n", err)
		return nil, exitSandbox
	}
	nativeLog := filepath.Join(dir, "native.log")
	sandboxLog := filepath.Join(dir, "sandbox.log")
	traceFlags := func(log string) []string {
		return []string{"--strace", "--log-format=json", "--log=" + log}
	}

	rep := &diffReport{Command: argv}
	// One after the other, not in parallel: the runs share the host
	// outside the tmpfs paths, and --cpu pins both to the same CPU.
	// The native run is traced on the ptrace platform, which sees every
	// call's result.
	nativeArgs := append([]string{"diff", diffNativeCmd, string(setupArg), "--", "--tmpfs=none", "--platform=ptrace"}, nativeFlags...)
	nativeArgs = append(append(append(nativeArgs, traceFlags(nativeLog)...), "--"), argv...)
	rep.Native, err = diffRun(self, nativeArgs)
	if err != nil {
		return diffFailed(rep, df, fmt.Errorf("native run: %w", err), exitSandbox)
	}
	if b, _ := os.ReadFile(setup.ErrFile); len(b) > 0 {
		return diffFailed(rep, df, fmt.Errorf("native run: %s", bytes.TrimSpace(b)), exitSandbox)
	}
	sandboxArgs := append(append([]string{"run"}, sandboxFlags...), traceFlags(sandboxLog)...)
	sandboxArgs = append(append(sandboxArgs, "--"), argv...)
	rep.Sandbox, err = diffRun(self, sandboxArgs)
	if err != nil {
		return diffFailed(rep, df, fmt.Errorf("sandbox run: %w", err), exitSandbox)
	}

	native, err := readCallLog(nativeLog)
	if err != nil {
		return diffFailed(rep, df, fmt.Errorf("native run: %w", err), exitSandbox)
	}
	sandbox, err := readCallLog(sandboxLog)
	if err != nil {
		return diffFailed(rep, df, fmt.Errorf("sandbox run: %w", err), exitSandbox)
	}
	// A run that logged no execve never started COMMAND: the sentry
	// failed, or COMMAND was not found. Comparing two such runs says
	// nothing about the sandbox, so that is a run not made.
	for _, r := range []struct {
		name string
		log  *callLog
		side diffSide
	}{{"native", native, rep.Native}, {"sandbox", sandbox, rep.Sandbox}} {
		if r.log.started {
			continue
		}
		code := exitSandbox
		if r.side.ExitStatus == exitUsage && r.name == "sandbox" {
			// The sentry rejected a run flag only it parses (such as
			// --inject-fault): the user's mistake.
			code = exitUsage
		}
		return diffFailed(rep, df, fmt.Errorf("%s run: exited %d without starting %s: %s",
			r.name, r.side.ExitStatus, argv[0], diffLastLine(r.side.Stderr)), code)
	}
	// The sentry failing mid-run exits 125 with its own message last; the
	// guest may exit 125 too, so only the message tells them apart.
	for _, r := range []struct {
		name string
		side diffSide
	}{{"native", rep.Native}, {"sandbox", rep.Sandbox}} {
		if last := diffLastLine(r.side.Stderr); r.side.ExitStatus == exitSandbox && strings.HasPrefix(last, "sentry: ") {
			return diffFailed(rep, df, fmt.Errorf("%s run: the sentry failed: %s", r.name, last), exitSandbox)
		}
	}
	rep.Native.Calls, rep.Sandbox.Calls = native.calls, sandbox.calls
	rep.Diverge, rep.Calls = compareCallLogs(native, sandbox, df.max)
	rep.Equal = rep.Diverge == 0 && rep.Native == rep.Sandbox
	if rep.Equal {
		return rep, 0
	}
	return rep, 1
}

// diffFailed reports a run that could not be made: on stderr, and in the
// report too with --json so a script reading stdout sees it.
func diffFailed(rep *diffReport, df *diffFlags, err error, code int) (*diffReport, int) {
	fmt.Fprintf(os.Stderr, "sentry diff: %v\n", err)
	if !df.json {
		return nil, code
	}
	rep.Error = err.Error()
	return rep, code
}

// diffRun runs the sentry binary with args, capturing its output. An
// error means it could not be run at all; its exit status is not one.
func diffRun(self string, args []string) (diffSide, error) {
	cmd := exec.Command(self, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	side := diffSide{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		// The sentry reports a guest killed by a signal as 128+N itself;
		// the sentry killed by one is reported the same way.
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			side.ExitStatus = 128 + int(ws.Signal())
		} else {
			side.ExitStatus = ee.ExitCode()
		}
	case err != nil:
		return side, fmt.Errorf("running %s: %w", self, err)
	}
	return side, nil
}

// diffTempDir makes the directory for the logs. It must not be under a
// tmpfs path: the native sentry writes its log from inside the namespace,
// where a fresh tmpfs hides what is below.
func diffTempDir(specs []mountSpec) (string, error) {
	var errs []error
	for _, base := range []string{os.TempDir(), "/var/tmp", "/dev/shm", "/run"} {
		hidden := false
		for _, m := range specs {
			if base == m.point || strings.HasPrefix(base, m.point+"/") {
				hidden = true
			}
		}
		if hidden {
			continue
		}
		dir, err := os.MkdirTemp(base, "sentry-diff-")
		if err == nil {
			return dir, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("no directory for the logs outside the tmpfs paths: %w", errors.Join(errs...))
}

// nativeSetup is what the native stage needs besides the run arguments.
type nativeSetup struct {
	ErrFile string        `json:"err_file"`
	Mounts  []nativeMount `json:"mounts"`
}

type nativeMount struct {
	Point string `json:"point"`
	Opts  string `json:"opts"`
}

// diffNativeMain is the native run's first stage: "__diff-native SETUP --
// RUN ARGS". It makes a private mount namespace with a kernel tmpfs at each
// path and execs "sentry run RUN ARGS" in it. Failures go to the setup's
// error file so diff can tell them from the guest's exit status.
func diffNativeMain(args []string) int {
	if len(args) < 2 || args[1] != "--" {
		fmt.Fprintf(os.Stderr, "sentry diff %s: internal: want SETUP -- RUN ARGS\n", diffNativeCmd)
		return exitUsage
	}
	var setup nativeSetup
	if err := json.Unmarshal([]byte(args[0]), &setup); err != nil {
		fmt.Fprintf(os.Stderr, "sentry diff %s: internal: decoding the setup: %v\n", diffNativeCmd, err)
		return exitUsage
	}
	err := diffNativeExec(&setup, args[2:])
	// Only reached on failure: diffNativeExec execs.
	msg := []byte(err.Error() + "\n")
	if werr := os.WriteFile(setup.ErrFile, msg, 0o644); werr != nil {
		fmt.Fprintf(os.Stderr, "sentry diff %s: %v (and writing %s: %v)\n", diffNativeCmd, err, setup.ErrFile, werr)
	}
	return exitSandbox
}

func diffNativeExec(setup *nativeSetup, runArgs []string) error {
	// A mount namespace belongs to a thread until exec, which then
	// carries it into the new image: all of it must happen on one thread.
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWNS): %w (diff needs root for the native run's mounts)", err)
	}
	// Mounts made in the new namespace must not propagate back to the
	// host's (a shared / would carry them).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private in the new mount namespace: %w", err)
	}
	for _, m := range setup.Mounts {
		if err := unix.Mount("tmpfs", m.Point, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, m.Opts); err != nil {
			return fmt.Errorf("mount tmpfs on %s (%s): %w", m.Point, m.Opts, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the sentry binary: %w", err)
	}
	argv := append([]string{self, "run"}, runArgs...)
	// Through /proc/self/exe: the binary may live under a path the new
	// tmpfs mounts just hid.
	if err := syscall.Exec("/proc/self/exe", argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s run: %w", self, err)
	}
	return nil
}

// callLog is one run's calls, by task.
type callLog struct {
	order   []string // task names, in order of first call
	tasks   map[string][]diffCall
	calls   int  // calls compared, over all tasks
	started bool // an execve was logged: COMMAND started
}

// logLine is the part of a --strace JSON line diff reads.
type logLine struct {
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

func readCallLog(name string) (*callLog, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading the call log: %w", err)
	}
	defer f.Close()
	var lines []logLine
	sc := bufio.NewScanner(f)
	// A line holds up to a few quoted PATH_MAX paths.
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		var l logLine
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
	return buildCallLog(lines), nil
}

// cloneCalls return the new task's tid.
var cloneCalls = map[string]bool{"clone": true, "clone3": true, "fork": true, "vfork": true}

// addrCalls return an address, which ASLR makes differ.
var addrCalls = map[string]bool{"mmap": true, "mremap": true, "brk": true, "shmat": true}

// buildCallLog names the tasks and normalises their calls.
func buildCallLog(lines []logLine) *callLog {
	cl := &callLog{tasks: map[string][]diffCall{}}
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
	argKinds := syscallArgKinds()
	for _, l := range lines {
		task, ok := names[l.TID]
		if !ok {
			continue // not descended from COMMAND: the init stage's
		}
		c := diffCall{Syscall: l.Syscall, Args: normaliseArgs(l.Syscall, l.Args, argKinds[l.Syscall]), Path: l.Path}
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

// syscallArgKinds maps each syscall name to how --strace printed its
// arguments, from the same table.
func syscallArgKinds() map[string][]sentry.ArgKind {
	m := map[string][]sentry.ArgKind{}
	for _, s := range syscalls.NewTable() {
		if s.Name != "" {
			m[s.Name] = s.Args
		}
	}
	return m
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
	// Commands --strace prints by number: keep what cannot be an address.
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

// compareCallLogs compares the runs task by task and returns how many
// divergences there are and the first max of them. Tasks come in the
// native run's order, then those only the sandbox run has.
func compareCallLogs(native, sandbox *callLog, max int) (int, []diffRow) {
	order := append([]string(nil), native.order...)
	for _, t := range sandbox.order {
		if _, ok := native.tasks[t]; !ok {
			order = append(order, t)
		}
	}
	count := 0
	rows := []diffRow{} // [] in the JSON report, not null
	for _, task := range order {
		compareTask(task, native.tasks[task], sandbox.tasks[task], func(r diffRow) {
			count++
			if len(rows) < max {
				rows = append(rows, r)
			}
		})
	}
	return count, rows
}

// resyncWindow is how far compareTask looks ahead for the two sequences to
// agree again after a divergence.
const resyncWindow = 16

// compareTask walks one task's two call sequences in step. At a
// divergence it looks a little ahead for calls one run made and the other
// did not (an error path, an allocation that moved): those are reported
// alone and the walk goes on in step, so one extra call does not make every
// later one differ. Otherwise the two calls are reported as a pair.
func compareTask(task string, a, b []diffCall, emit func(diffRow)) {
	i, j := 0, 0
	row := func(ia, jb int) diffRow {
		r := diffRow{Task: task, NativeIndex: -1, SandboxIndex: -1}
		if ia >= 0 {
			r.NativeIndex, r.Native = ia, &a[ia]
		}
		if jb >= 0 {
			r.SandboxIndex, r.Sandbox = jb, &b[jb]
		}
		return r
	}
	for i < len(a) || j < len(b) {
		if i < len(a) && j < len(b) && a[i].same(&b[j]) {
			i, j = i+1, j+1
			continue
		}
		skipA, skipB := resync(a[i:], b[j:])
		if skipA+skipB > 0 {
			for ; skipA > 0; skipA-- {
				emit(row(i, -1))
				i++
			}
			for ; skipB > 0; skipB-- {
				emit(row(-1, j))
				j++
			}
			continue
		}
		switch {
		case i < len(a) && j < len(b):
			emit(row(i, j))
			i, j = i+1, j+1
		case i < len(a):
			emit(row(i, -1))
			i++
		default:
			emit(row(-1, j))
			j++
		}
	}
}

// resync returns how many calls to skip in a or in b (one of them 0) for
// the two to agree again on two calls in a row (or on the last call), the
// fewest first; 0, 0 when that takes more than resyncWindow.
func resync(a, b []diffCall) (int, int) {
	agree := func(x, y []diffCall) bool {
		if len(x) == 0 || len(y) == 0 || !x[0].same(&y[0]) {
			return false
		}
		return len(x) == 1 || len(y) == 1 || x[1].same(&y[1])
	}
	for d := 1; d <= resyncWindow; d++ {
		if d < len(a) && agree(a[d:], b) {
			return d, 0
		}
		if d < len(b) && agree(a, b[d:]) {
			return 0, d
		}
	}
	return 0, 0
}

// printDiffReport writes the human-readable report.
func printDiffReport(w io.Writer, rep *diffReport) {
	fmt.Fprintf(w, "sentry diff: %s\n", strings.Join(rep.Command, " "))
	fmt.Fprintf(w, "calls: native %d, sandbox %d; %d divergences\n", rep.Native.Calls, rep.Sandbox.Calls, rep.Diverge)
	if len(rep.Calls) > 0 {
		fmt.Fprintf(w, "\nfirst %d (task 1 ran COMMAND, 1.2 is its second child; #N, #S: index of the call in the task):\n", len(rep.Calls))
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "task\t#N\t#S\tsyscall\targs\tnative\tsandbox")
		for _, r := range rep.Calls {
			// The call's name and arguments get their own columns when
			// both runs made the same call or only one made it; for two
			// different calls each side shows its whole call.
			common := r.Native
			switch {
			case common == nil:
				common = r.Sandbox
			case r.Sandbox != nil && (r.Native.Syscall != r.Sandbox.Syscall || r.Native.Args != r.Sandbox.Args):
				common = nil
			}
			name, args := "-", "-"
			if common != nil {
				name, args = common.Syscall, clip(common.Args, 60)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Task, showIndex(r.NativeIndex), showIndex(r.SandboxIndex),
				name, args, showCall(r.Native, common), showCall(r.Sandbox, common))
		}
		tw.Flush()
		if rep.Diverge > len(rep.Calls) {
			fmt.Fprintf(w, "... and %d more (--max)\n", rep.Diverge-len(rep.Calls))
		}
	}
	fmt.Fprintf(w, "\nexit status: native %d, sandbox %d\n", rep.Native.ExitStatus, rep.Sandbox.ExitStatus)
	for _, o := range []struct{ name, native, sandbox string }{
		{"stdout", rep.Native.Stdout, rep.Sandbox.Stdout},
		{"stderr", rep.Native.Stderr, rep.Sandbox.Stderr},
	} {
		if o.native == o.sandbox {
			continue
		}
		fmt.Fprintf(w, "\n%s differs:\n--- native %s\n%s--- sandbox %s\n%s", o.name, o.name, clipOutput(o.native), o.name, clipOutput(o.sandbox))
	}
	if rep.Equal {
		fmt.Fprintln(w, "\nsame calls, exit status and output")
	} else {
		fmt.Fprintln(w, "\nDIFFERENT")
	}
}

func showIndex(i int) string {
	if i < 0 {
		return "-"
	}
	return strconv.Itoa(i)
}

// showCall renders one side of a divergence: just the result when the
// call is in the common columns, else the whole call.
func showCall(c, common *diffCall) string {
	switch {
	case c == nil:
		return "(no call)"
	case common != nil:
		return c.Result
	default:
		return clip(c.Syscall+"("+c.Args+")", 50) + " = " + c.Result
	}
}

// diffLastLine is the last non-empty line of a run's stderr: where the
// sentry puts its own error.
func diffLastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// clipOutput keeps a differing output readable: at most 20 lines or 2 KiB.
func clipOutput(s string) string {
	const maxBytes, maxLines = 2048, 20
	cut := false
	if len(s) > maxBytes {
		s, cut = s[:maxBytes], true
	}
	if lines := strings.SplitAfter(s, "\n"); len(lines) > maxLines {
		s, cut = strings.Join(lines[:maxLines], ""), true
	}
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	if cut {
		s += "[truncated]\n"
	}
	return s
}
