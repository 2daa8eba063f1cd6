package tracediff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// seq makes a call sequence from "name=result" words.
func seq(words string) []Call {
	var out []Call
	for _, w := range strings.Fields(words) {
		name, res, _ := strings.Cut(w, "=")
		out = append(out, Call{Syscall: name, Args: "3", Result: strings.ReplaceAll(res, "_", " ")})
	}
	return out
}

// rowsOf renders rows as "i/j" (- for no call).
func rowsOf(rows []Row) string {
	var out []string
	for _, r := range rows {
		out = append(out, showIndex(r.NativeIndex)+"/"+showIndex(r.SandboxIndex))
	}
	return strings.Join(out, " ")
}

func TestCallSame(t *testing.T) {
	base := Call{Syscall: "read", Args: "3, PTR, 10", Result: "10", Path: "emulated"}
	tests := []struct {
		other Call
		same  bool
	}{
		{base, true},
		// The path (emulated or passthrough) is not compared.
		{Call{"read", "3, PTR, 10", "10", "passthrough"}, true},
		{Call{"read", "3, PTR, 10", "?", ""}, true},
		{Call{"read", "3, PTR, 10", "9", ""}, false},
		{Call{"read", "4, PTR, 10", "10", ""}, false},
		{Call{"pread64", "3, PTR, 10", "10", ""}, false},
		{Call{"read", "3, PTR, 10", "-1 EIO", ""}, false},
	}
	for _, tc := range tests {
		if got := base.Same(&tc.other); got != tc.same {
			t.Errorf("%+v same as %+v: %v, want %v", base, tc.other, got, tc.same)
		}
		if got := tc.other.Same(&base); got != tc.same {
			t.Errorf("%+v same as %+v: %v, want %v (not symmetric)", tc.other, base, got, tc.same)
		}
	}
	unknown := Call{Syscall: "read", Args: "3", Result: "?"}
	if !unknown.Same(&unknown) {
		t.Error("two unknown results differ")
	}
}

func TestCompareTask(t *testing.T) {
	extras := func(n int) string {
		var w []string
		for i := range n {
			w = append(w, "e"+strconv.Itoa(i)+"=0")
		}
		return strings.Join(w, " ")
	}
	// nativeOnly is n rows of native calls from index i on.
	nativeOnly := func(i, n int) string {
		var w []string
		for k := range n {
			w = append(w, strconv.Itoa(i+k)+"/-")
		}
		return strings.Join(w, " ")
	}
	tests := []struct {
		name, native, sandbox string
		want                  string
	}{
		{"equal", "a=0 b=1 c=2", "a=0 b=1 c=2", ""},
		{"both empty", "", "", ""},
		{"unknown result matches", "a=0 b=? c=2", "a=0 b=5 c=2", ""},
		{"different result", "a=0 b=1 c=2", "a=0 b=-1_EIO c=2", "1/1"},
		{"extra native call", "a=0 x=0 b=1 c=2", "a=0 b=1 c=2", "1/-"},
		{"extra sandbox call", "a=0 b=1 c=2", "a=0 x=0 b=1 c=2", "-/1"},
		{"extra calls at the start", "x=0 y=0 a=0 b=1", "a=0 b=1", "0/- 1/-"},
		{"native longer", "a=0 b=1 c=2 d=3", "a=0 b=1", "2/- 3/-"},
		{"sandbox longer", "a=0", "a=0 b=1 c=2", "-/1 -/2"},
		{"only native", "a=0 b=1", "", "0/- 1/-"},
		{"only sandbox", "", "a=0", "-/0"},
		// Agreeing again on the last call is enough...
		{"resync on the last call", "a=0 b=1", "a=0 x=0 b=1", "-/1"},
		// ... elsewhere it takes two in a row, or a lone equal call
		// would pull the walk out of step.
		{"one equal call does not resync", "a=0 b=1 c=2", "a=0 x=0 b=1 y=0", "1/1 2/2 -/3"},
		// The fewest skipped calls win, native side first.
		{"fewest skips", "a=0 x=0 y=0 b=1 c=2", "a=0 y=0 b=1 c=2", "1/-"},
		{"resync window edge", "a=0 " + extras(resyncWindow) + " b=1 c=2", "a=0 b=1 c=2", nativeOnly(1, resyncWindow)},
		// Past the window the calls are paired instead.
		{"past the window", "a=0 " + extras(resyncWindow+1) + " b=1 c=2", "a=0 b=1 c=2",
			"1/1 2/2 " + nativeOnly(3, resyncWindow+1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := seq(tc.native), seq(tc.sandbox)
			var rows []Row
			compareTask("1", a, b, func(r Row) { rows = append(rows, r) })
			if got := rowsOf(rows); got != tc.want {
				t.Errorf("rows %q, want %q", got, tc.want)
			}
			for _, r := range rows {
				if r.Task != "1" || (r.Native == nil) != (r.NativeIndex < 0) || (r.Sandbox == nil) != (r.SandboxIndex < 0) ||
					(r.Native != nil && r.Native != &a[r.NativeIndex]) || (r.Sandbox != nil && r.Sandbox != &b[r.SandboxIndex]) {
					t.Errorf("row %+v does not point at its calls", r)
				}
			}
		})
	}
}

// logFrom makes a log from "task: name=result ..." lines.
func logFrom(tasks ...string) *Log {
	l := &Log{tasks: map[string][]Call{}, started: true}
	for _, line := range tasks {
		task, calls, _ := strings.Cut(line, ":")
		l.order = append(l.order, task)
		l.tasks[task] = seq(calls)
		l.calls += len(l.tasks[task])
	}
	return l
}

func TestReportCompare(t *testing.T) {
	tests := []struct {
		name            string
		native, sandbox *Log
		nativeSide      Side
		max             int
		wantDiverge     int
		wantRows        string // task:i/j
		wantEqual       bool
	}{{
		name:      "equal",
		native:    logFrom("1: a=0 b=1", "1.1: c=0"),
		sandbox:   logFrom("1: a=0 b=1", "1.1: c=0"),
		max:       10,
		wantEqual: true,
	}, {
		// Equal calls but another exit status: not equal.
		name:       "exit status",
		native:     logFrom("1: a=0"),
		sandbox:    logFrom("1: a=0"),
		nativeSide: Side{ExitStatus: 1},
		max:        10,
	}, {
		name:       "stdout",
		native:     logFrom("1: a=0"),
		sandbox:    logFrom("1: a=0"),
		nativeSide: Side{Stdout: "x"},
		max:        10,
	}, {
		// Tasks in the native order, then those only the sandbox has.
		name:        "task order",
		native:      logFrom("1: a=0", "1.2: b=0", "1.1: c=0"),
		sandbox:     logFrom("1.3: d=0", "1: a=1", "1.1: c=0"),
		max:         10,
		wantDiverge: 3,
		wantRows:    "1:0/0 1.2:0/- 1.3:-/0",
	}, {
		// --max lists the first N and counts them all.
		name:        "max",
		native:      logFrom("1: a=0 b=0 c=0", "1.1: d=0"),
		sandbox:     logFrom("1: a=1 b=1 c=1", "1.1: d=1"),
		max:         2,
		wantDiverge: 4,
		wantRows:    "1:0/0 1:1/1",
	}, {
		name:        "max 0",
		native:      logFrom("1: a=0"),
		sandbox:     logFrom("1: a=1"),
		max:         0,
		wantDiverge: 1,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := Report{Native: tc.nativeSide}
			rep.Compare(tc.native, tc.sandbox, tc.max)
			var rows []string
			for _, r := range rep.Calls {
				rows = append(rows, r.Task+":"+showIndex(r.NativeIndex)+"/"+showIndex(r.SandboxIndex))
			}
			if got := strings.Join(rows, " "); got != tc.wantRows || rep.Diverge != tc.wantDiverge || rep.Equal != tc.wantEqual {
				t.Errorf("rows %q, %d divergences, equal %v; want %q, %d, %v", got, rep.Diverge, rep.Equal, tc.wantRows, tc.wantDiverge, tc.wantEqual)
			}
			if rep.Native.Calls != tc.native.Calls() || rep.Sandbox.Calls != tc.sandbox.Calls() {
				t.Errorf("calls %d, %d; want %d, %d", rep.Native.Calls, rep.Sandbox.Calls, tc.native.Calls(), tc.sandbox.Calls())
			}
			// The JSON report lists no divergences as [], not null.
			b, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Calls) == 0 && !bytes.Contains(b, []byte(`"divergences":[]`)) {
				t.Errorf("JSON report without divergences: %s", b)
			}
		})
	}
}

// TestReportJSON pins the --json field names scripts read.
func TestReportJSON(t *testing.T) {
	rep := Report{
		Command: []string{"true"},
		Native:  Side{ExitStatus: 0, Stdout: "o", Stderr: "e", Calls: 2},
		Sandbox: Side{ExitStatus: 1, Calls: 1},
		Diverge: 1,
		Calls:   []Row{{Task: "1", NativeIndex: 1, SandboxIndex: -1, Native: &Call{"close", "3", "0", "emulated"}}},
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"command":["true"],"equal":false,` +
		`"native":{"exit_status":0,"stdout":"o","stderr":"e","calls":2},` +
		`"sandbox":{"exit_status":1,"stdout":"","stderr":"","calls":1},"divergent_calls":1,` +
		`"divergences":[{"task":"1","native_index":1,"sandbox_index":-1,` +
		`"native":{"syscall":"close","args":"3","result":"0","path":"emulated"},"sandbox":null}]}`
	if string(b) != want {
		t.Errorf("JSON:\n%s\nwant\n%s", b, want)
	}
	rep.Error = "native run: boom"
	if b, _ := json.Marshal(rep); !bytes.Contains(b, []byte(`"error":"native run: boom"`)) {
		t.Errorf("error missing: %s", b)
	}
}

func TestReportPrint(t *testing.T) {
	open := Call{Syscall: "openat", Args: `AT_FDCWD, "/tmp/x", O_RDONLY, 0`, Result: "3"}
	openFail := open
	openFail.Result = "-1 EIO"
	stat := Call{Syscall: "newfstatat", Args: strings.Repeat("x", 70), Result: "0"}
	rep := Report{
		Command: []string{"sh", "-c", "cat /tmp/x"},
		Native:  Side{ExitStatus: 0, Stdout: "hi\n", Stderr: "", Calls: 10},
		Sandbox: Side{ExitStatus: 1, Stdout: "", Stderr: "cat: /tmp/x: I/O error", Calls: 9},
		Diverge: 4,
		Calls: []Row{
			{Task: "1.1", NativeIndex: 3, SandboxIndex: 3, Native: &open, Sandbox: &openFail},
			{Task: "1.1", NativeIndex: 4, SandboxIndex: -1, Native: &stat},
			{Task: "1.2", NativeIndex: 0, SandboxIndex: 0, Native: &open, Sandbox: &stat},
		},
	}
	var b bytes.Buffer
	rep.Print(&b)
	want := `sentry diff: sh -c cat /tmp/x
calls: native 10, sandbox 9; 4 divergences

first 3 (task 1 ran COMMAND, 1.2 is its second child; #N, #S: index of the call in the task):
task  #N  #S  syscall     args                                                          native                                       sandbox
1.1   3   3   openat      AT_FDCWD, "/tmp/x", O_RDONLY, 0                               3                                            -1 EIO
1.1   4   -   newfstatat  xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...  0                                            (no call)
1.2   0   0   -           -                                                             openat(AT_FDCWD, "/tmp/x", O_RDONLY, 0) = 3  newfstatat(xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... = 0
... and 1 more (--max)

exit status: native 0, sandbox 1

stdout differs:
--- native stdout
hi
--- sandbox stdout

stderr differs:
--- native stderr
--- sandbox stderr
cat: /tmp/x: I/O error

DIFFERENT
`
	if b.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", b.String(), want)
	}

	same := Report{Command: []string{"true"}, Equal: true, Native: Side{Calls: 1}, Sandbox: Side{Calls: 1}, Calls: []Row{}}
	b.Reset()
	same.Print(&b)
	want = "sentry diff: true\ncalls: native 1, sandbox 1; 0 divergences\n\nexit status: native 0, sandbox 0\n\nsame calls, exit status and output\n"
	if b.String() != want {
		t.Errorf("report:\n%q\nwant:\n%q", b.String(), want)
	}
}

func TestClipOutput(t *testing.T) {
	lines := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%d\n", i)
		}
		return b.String()
	}
	tests := []struct{ in, want string }{
		{"", ""},
		{"a", "a\n"},
		{"a\n", "a\n"},
		// 20 whole lines are all there: not truncated.
		{lines(20), lines(20)},
		{lines(19) + "19", lines(20)},
		{lines(21), lines(20) + "[truncated]\n"},
		{lines(20) + "20", lines(20) + "[truncated]\n"},
		{strings.Repeat("x", 2048), strings.Repeat("x", 2048) + "\n"},
		{strings.Repeat("x", 2049), strings.Repeat("x", 2048) + "\n[truncated]\n"},
	}
	for _, tc := range tests {
		if got := clipOutput(tc.in); got != tc.want {
			t.Errorf("clipOutput(%.30q...) = %.60q, want %.60q", tc.in, got, tc.want)
		}
	}
	if got := clip("abcdef", 6); got != "abcdef" {
		t.Errorf("clip at length: %q", got)
	}
	if got := clip("abcdefg", 6); got != "abc..." {
		t.Errorf("clip past length: %q", got)
	}
}
