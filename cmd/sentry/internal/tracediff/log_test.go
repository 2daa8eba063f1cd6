package tracediff

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"sentry/sentry"
)

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"3", []string{"3"}},
		{"3, 0x7ffd0000, 10", []string{"3", "0x7ffd0000", "10"}},
		// A ", " inside a quoted path does not split it.
		{`AT_FDCWD, "/tmp/a, b", O_RDONLY`, []string{"AT_FDCWD", `"/tmp/a, b"`, "O_RDONLY"}},
		// An escaped quote does not end the quote...
		{`"a\", b", 3`, []string{`"a\", b"`, "3"}},
		// ... and an escaped backslash does not escape the quote after it.
		{`"a\\", 3`, []string{`"a\\"`, "3"}},
		// Only ", " separates: a comma alone is part of the argument.
		{"a,b, c", []string{"a,b", "c"}},
		{"1, ", []string{"1", ""}},
	}
	for _, tc := range tests {
		if got := splitArgs(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNormaliseArgs(t *testing.T) {
	read := []sentry.ArgKind{sentry.ArgFD, sentry.ArgPtr, sentry.ArgInt}
	open := []sentry.ArgKind{sentry.ArgFD, sentry.ArgPath, sentry.ArgOpenFlags, sentry.ArgMode}
	tests := []struct {
		name, args string
		kinds      []sentry.ArgKind
		want       string
	}{
		{"read", "3, 0x7ffd1234, 10", read, "3, PTR, 10"},
		// NULL is the same in every run and stays.
		{"read", "3, 0x0, 10", read, "3, 0x0, 10"},
		// Only arguments of pointer kind: a hex int is a value.
		{"read", "3, 0x7ffd1234, 0x7ffd1234", read, "3, PTR, 0x7ffd1234"},
		// A path the sentry could not read prints as its address, but it
		// is not a pointer argument: the address is the divergence.
		{"openat", "AT_FDCWD, 0x7ffd1234, O_RDONLY, 0", open, "AT_FDCWD, 0x7ffd1234, O_RDONLY, 0"},
		{"openat", `AT_FDCWD, "/tmp/x, 0x1", O_RDONLY, 0`, open, `AT_FDCWD, "/tmp/x, 0x1", O_RDONLY, 0`},
		// No kinds known: nothing changes.
		{"read", "3, 0x7ffd1234, 10", nil, "3, 0x7ffd1234, 10"},
		// Fewer arguments printed than kinds.
		{"read", "3", read, "3"},
		// clone's fifth argument is the TLS, whatever the table says.
		{"clone", "CLONE_VM|SIGCHLD, 0x0, 0x0, 0x0, 0x7f0011223344", nil, "CLONE_VM|SIGCHLD, 0x0, 0x0, 0x0, PTR"},
		{"clone", "CLONE_VM|SIGCHLD, 0x0, 0x0, 0x0, 0x0", nil, "CLONE_VM|SIGCHLD, 0x0, 0x0, 0x0, 0x0"},
		{"clone3", "0x7ffd1234, 0x58, 0x7f0011223344, 0x0, 0x7f0011223344", nil, "0x7ffd1234, 0x58, 0x7f0011223344, 0x0, 0x7f0011223344"},
		// fcntl's third argument, by command.
		{"fcntl", "3, F_GETFD, 0x7ffd1234", nil, "3, F_GETFD, _"},
		{"fcntl", "3, F_GETFL, 0x0", nil, "3, F_GETFL, _"},
		{"fcntl", "3, F_SETFD, 0x1", nil, "3, F_SETFD, 0x1"},
		{"fcntl", "3, F_SETFL, 0x800", nil, "3, F_SETFL, 0x800"},
		{"fcntl", "3, F_DUPFD, 0xa", nil, "3, F_DUPFD, 0xa"},
		{"fcntl", "3, F_DUPFD_CLOEXEC, 0x10000", nil, "3, F_DUPFD_CLOEXEC, 0x10000"},
		{"fcntl", "3, F_SETLK, 0x7ffd1234", nil, "3, F_SETLK, PTR"},
		// Commands printed by number: small values are values...
		{"fcntl", "3, 1033, 0xf", nil, "3, 1033, 0xf"},
		{"fcntl", "3, 1033, 0xffff", nil, "3, 1033, 0xffff"},
		// ... large ones addresses.
		{"fcntl", "3, 1033, 0x10000", nil, "3, 1033, PTR"},
		{"fcntl", "3, 1033, junk", nil, "3, 1033, junk"},
	}
	for _, tc := range tests {
		if got := normaliseArgs(tc.name, tc.args, tc.kinds); got != tc.want {
			t.Errorf("normaliseArgs(%s, %q) = %q, want %q", tc.name, tc.args, got, tc.want)
		}
	}
}

func TestKindsOf(t *testing.T) {
	var table sentry.SyscallTable
	table[0] = sentry.Syscall{Name: "read", Args: []sentry.ArgKind{sentry.ArgFD, sentry.ArgPtr, sentry.ArgInt}}
	table[257] = sentry.Syscall{Name: "openat", Args: []sentry.ArgKind{sentry.ArgFD, sentry.ArgPath}}
	got := KindsOf(&table)
	want := ArgKinds{"read": table[0].Args, "openat": table[257].Args}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("KindsOf = %v, want %v", got, want)
	}
}

// ev is one --strace JSON line: ret is an int64, "?" or nil (none).
type ev struct {
	tid        int
	call, args string
	ret        any
	errno      string
}

func (e ev) json() string {
	m := map[string]any{"level": "info", "msg": "syscall", "tid": e.tid, "syscall": e.call, "args": e.args, "path": "emulated"}
	if e.ret != nil {
		m["ret"] = e.ret
	}
	if e.errno != "" {
		m["errno"] = e.errno
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func logOf(t *testing.T, evs ...ev) *Log {
	t.Helper()
	var lines []string
	for _, e := range evs {
		lines = append(lines, e.json())
	}
	l, err := ParseLog(strings.NewReader(strings.Join(lines, "\n")+"\n"), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// tasksOf renders a log as task: call=result, ... lines.
func tasksOf(l *Log) []string {
	var out []string
	for _, task := range l.Tasks() {
		var calls []string
		for _, c := range l.Task(task) {
			calls = append(calls, c.Syscall+"("+c.Args+")="+c.Result)
		}
		out = append(out, task+": "+strings.Join(calls, " "))
	}
	return out
}

func TestParseLog(t *testing.T) {
	text := strings.Join([]string{
		`{"level":"info","msg":"sentry starting","platform":"ptrace"}`,
		ev{7, "openat", `AT_FDCWD, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC, 0`, int64(3), ""}.json(),
		ev{10, "execve", `"/bin/sh", 0x7ffd0000, 0x7ffd0100`, int64(0), ""}.json(),
		`{"level":"info","msg":"syscall","tid":10,"args":"no syscall name"}`,
		ev{10, "openat", `AT_FDCWD, "/tmp/x", O_RDONLY, 0`, nil, "ENOENT"}.json(),
		ev{10, "read", "3, 0x7ffd1234, 10", "?", ""}.json(),
		ev{10, "mmap", "0x0, 0x1000, 0x3, 0x22, 0xffffffff, 0x0", int64(0x7f0000001000), ""}.json(),
		ev{10, "close", "3", int64(0), ""}.json(),
		``,
	}, "\n")
	kinds := ArgKinds{"read": {sentry.ArgFD, sentry.ArgPtr, sentry.ArgInt}, "execve": {sentry.ArgPath, sentry.ArgPtr, sentry.ArgPtr}}
	l, err := ParseLog(strings.NewReader(text), "x.log", kinds)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`1: execve("/bin/sh", PTR, PTR)=0 openat(AT_FDCWD, "/tmp/x", O_RDONLY, 0)=-1 ENOENT read(3, PTR, 10)=? ` +
		`mmap(0x0, 0x1000, 0x3, 0x22, 0xffffffff, 0x0)=ADDR close(3)=0`}
	if got := tasksOf(l); !reflect.DeepEqual(got, want) {
		t.Errorf("tasks:\n%q\nwant\n%q", got, want)
	}
	if !l.Started() || l.Calls() != 5 {
		t.Errorf("started %v, %d calls; want true, 5", l.Started(), l.Calls())
	}
	if c := l.Task("1")[0]; c.Path != "emulated" {
		t.Errorf("path %q, want emulated", c.Path)
	}

	for _, tc := range []struct{ text, want string }{
		{ev{1, "close", "3", int64(0), ""}.json() + "\nnot json\n", "x.log:2: "},
		{`{"msg":"syscall","tid":1,"syscall":"close","ret":"zero"}`, "x.log:1: ret: "},
		{`{"msg":"syscall","tid":1,"syscall":"close","ret":1.5}`, "x.log:1: ret: "},
		{`{"msg":"syscall","tid":"one","syscall":"close"}`, "x.log:1: "},
	} {
		if _, err := ParseLog(strings.NewReader(tc.text), "x.log", nil); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("ParseLog(%q) error %v, want one starting %q", tc.text, err, tc.want)
		}
	}
	if _, err := ReadLogFile(t.TempDir()+"/missing", nil); err == nil || !strings.Contains(err.Error(), "reading the call log") {
		t.Errorf("ReadLogFile of a missing file: %v", err)
	}
	long := ev{10, "execve", `"` + strings.Repeat("a", 200000) + `"`, int64(0), ""}.json()
	if l, err := ParseLog(strings.NewReader(long), "x.log", nil); err != nil || l.Calls() != 1 {
		t.Errorf("a 200 kB line: %v", err)
	}
}

func TestBuildLogTasks(t *testing.T) {
	tests := []struct {
		name string
		evs  []ev
		want []string
	}{{
		name: "no execve: not started",
		evs:  []ev{{7, "openat", "AT_FDCWD", int64(3), ""}, {7, "close", "3", int64(0), ""}},
		want: nil,
	}, {
		name: "failed execve starts too",
		evs:  []ev{{7, "execve", `"/x"`, nil, "ENOENT"}},
		want: []string{`1: execve("/x")=-1 ENOENT`},
	}, {
		// The init stage's calls before the execve are dropped, and so
		// are a runtime thread's after it: it is not COMMAND's.
		name: "init stage dropped",
		evs: []ev{
			{7, "openat", "a", int64(3), ""},
			{10, "execve", "b", int64(0), ""},
			{8, "close", "c", int64(0), ""},
			{10, "close", "d", int64(0), ""},
		},
		want: []string{"1: execve(b)=0 close(d)=0"},
	}, {
		// Children are named by descent and in order of creation;
		// the clone's result is the child's name.
		name: "descent",
		evs: []ev{
			{100, "execve", "", int64(0), ""},
			{100, "clone", "", int64(101), ""},
			{101, "getpid", "", int64(0), ""},
			{100, "fork", "", int64(102), ""},
			{101, "vfork", "", int64(103), ""},
			{103, "execve", "", int64(0), ""},
			{102, "clone3", "", int64(104), ""},
			{104, "exit", "", int64(0), ""},
		},
		want: []string{
			"1: execve()=0 clone()=task 1.1 fork()=task 1.2",
			"1.1: getpid()=0 vfork()=task 1.1.1",
			"1.1.1: execve()=0",
			"1.2: clone3()=task 1.2.1",
			"1.2.1: exit()=0",
		},
	}, {
		// A failed clone makes no task; a child's 0 return is not a tid.
		name: "failed clone",
		evs: []ev{
			{100, "execve", "", int64(0), ""},
			{100, "clone", "", nil, "EAGAIN"},
			{100, "clone", "", int64(101), ""},
			{101, "clone", "", int64(0), ""},
		},
		want: []string{"1: execve()=0 clone()=-1 EAGAIN clone()=task 1.1", "1.1: clone()=0"},
	}, {
		// A tid the kernel gave again keeps the name of its first task.
		name: "reused tid",
		evs: []ev{
			{100, "execve", "", int64(0), ""},
			{100, "clone", "", int64(101), ""},
			{101, "exit", "", int64(0), ""},
			{100, "clone", "", int64(101), ""},
			{101, "exit", "", int64(0), ""},
		},
		want: []string{"1: execve()=0 clone()=task 1.1 clone()=task 1.1", "1.1: exit()=0 exit()=0"},
	}, {
		name: "addresses",
		evs: []ev{
			{100, "execve", "", int64(0), ""},
			{100, "brk", "0x0", int64(0x5555000), ""},
			{100, "mremap", "", int64(0x7f0000), ""},
			{100, "shmat", "", int64(0x7f0000), ""},
			{100, "mmap", "", nil, "ENOMEM"},
			{100, "munmap", "", int64(0), ""},
		},
		want: []string{"1: execve()=0 brk(0x0)=ADDR mremap()=ADDR shmat()=ADDR mmap()=-1 ENOMEM munmap()=0"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := logOf(t, tc.evs...)
			if got := tasksOf(l); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tasks:\n%q\nwant\n%q", got, tc.want)
			}
			if l.Started() != (tc.want != nil) {
				t.Errorf("started %v", l.Started())
			}
		})
	}
}

// TestBuildLogInterleaving: two runs whose tasks have other tids and
// interleave otherwise name their tasks the same.
func TestBuildLogInterleaving(t *testing.T) {
	a := logOf(t,
		ev{100, "execve", "", int64(0), ""},
		ev{100, "clone", "", int64(101), ""},
		ev{100, "clone", "", int64(102), ""},
		ev{101, "write", "1", int64(1), ""},
		ev{102, "write", "2", int64(1), ""},
	)
	b := logOf(t,
		ev{500, "execve", "", int64(0), ""},
		ev{500, "clone", "", int64(777), ""},
		ev{777, "write", "1", int64(1), ""},
		ev{500, "clone", "", int64(600), ""},
		ev{600, "write", "2", int64(1), ""},
	)
	for _, task := range []string{"1", "1.1", "1.2"} {
		if !reflect.DeepEqual(a.Task(task), b.Task(task)) {
			t.Errorf("task %s: %v vs %v", task, a.Task(task), b.Task(task))
		}
	}
	if n, rows := compareLogs(a, b, 10); n != 0 {
		t.Errorf("%d divergences: %+v", n, rows)
	}
}
