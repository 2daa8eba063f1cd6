package tracediff

// Report is the result of "sentry diff" (its --json document).
type Report struct {
	Command []string `json:"command"`
	Equal   bool     `json:"equal"`
	Native  Side     `json:"native"`
	Sandbox Side     `json:"sandbox"`
	Diverge int      `json:"divergent_calls"` // all of them, not only those listed
	Calls   []Row    `json:"divergences"`     // the first --max
	// Error says why a run could not be made (exit status 125 or 2); the
	// rest of the report is then incomplete.
	Error string `json:"error,omitempty"`
}

// Side is what one run did.
type Side struct {
	ExitStatus int    `json:"exit_status"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Calls      int    `json:"calls"`
}

// Row is one divergence: a pair of calls that differ, or a call only one
// run made (the other side is then nil and its index -1). Indexes count
// the task's calls from 0.
type Row struct {
	Task         string `json:"task"`
	NativeIndex  int    `json:"native_index"`
	SandboxIndex int    `json:"sandbox_index"`
	Native       *Call  `json:"native"`
	Sandbox      *Call  `json:"sandbox"`
}

// Call is one logged call after normalisation.
type Call struct {
	Syscall string `json:"syscall"`
	Args    string `json:"args"`
	Result  string `json:"result"` // the return value, or "-1 ERRNO"
	Path    string `json:"path"`   // emulated or passthrough; not compared
}

// Same reports whether two calls agree: the same call with the same
// arguments and result.
func (c *Call) Same(o *Call) bool {
	// "?" is a result the platform did not see (a call the unotify
	// platform passed through): it matches any.
	return c.Syscall == o.Syscall && c.Args == o.Args && (c.Result == o.Result || c.Result == "?" || o.Result == "?")
}

// Compare fills the report's calls from the two runs' logs: the call
// counts, the divergences (the first max of them listed) and whether the
// runs agree, which also needs the exit statuses and outputs the caller
// put in Native and Sandbox.
func (rep *Report) Compare(native, sandbox *Log, max int) {
	rep.Native.Calls, rep.Sandbox.Calls = native.calls, sandbox.calls
	rep.Diverge, rep.Calls = compareLogs(native, sandbox, max)
	rep.Equal = rep.Diverge == 0 && rep.Native == rep.Sandbox
}

// compareLogs compares the runs task by task and returns how many
// divergences there are and the first max of them. Tasks come in the
// native run's order, then those only the sandbox run has.
func compareLogs(native, sandbox *Log, max int) (int, []Row) {
	order := append([]string(nil), native.order...)
	for _, t := range sandbox.order {
		if _, ok := native.tasks[t]; !ok {
			order = append(order, t)
		}
	}
	count := 0
	rows := []Row{} // [] in the JSON report, not null
	for _, task := range order {
		compareTask(task, native.tasks[task], sandbox.tasks[task], func(r Row) {
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
func compareTask(task string, a, b []Call, emit func(Row)) {
	i, j := 0, 0
	row := func(ia, jb int) Row {
		r := Row{Task: task, NativeIndex: -1, SandboxIndex: -1}
		if ia >= 0 {
			r.NativeIndex, r.Native = ia, &a[ia]
		}
		if jb >= 0 {
			r.SandboxIndex, r.Sandbox = jb, &b[jb]
		}
		return r
	}
	for i < len(a) || j < len(b) {
		if i < len(a) && j < len(b) && a[i].Same(&b[j]) {
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
func resync(a, b []Call) (int, int) {
	agree := func(x, y []Call) bool {
		if len(x) == 0 || len(y) == 0 || !x[0].Same(&y[0]) {
			return false
		}
		return len(x) == 1 || len(y) == 1 || x[1].Same(&y[1])
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
