package main

import (
	"encoding/json"
	"testing"
)

// TestConformanceViaDiff runs the probe suite through "sentry diff": every
// trapped call the probe makes natively (on a kernel tmpfs in a private
// mount namespace) and in the sandbox is compared with its result, which
// also catches what the probe does not print (a leaked descriptor shows
// as a different fd number later). Data calls (read, write, lseek, ...)
// are not trapped, so not compared here: their results show in the
// probe's output, which TestDiffProbes compares. No divergence is allowed.
func TestConformanceViaDiff(t *testing.T) {
	probe := buildProbe(t, "fdstat")
	r := runCmd(t, "", sentryBin, "diff", "--json", "--max", "1000", "--", probe, "/tmp/probe")
	if r.code != 0 && r.code != 1 {
		t.Fatalf("sentry diff exited %d: %s", r.code, r.stderr)
	}
	var rep struct {
		Native, Sandbox struct {
			ExitStatus int `json:"exit_status"`
			Calls      int `json:"calls"`
		}
		DivergentCalls int `json:"divergent_calls"`
		Divergences    []struct {
			Native, Sandbox *struct {
				Syscall, Args, Result string
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("bad report: %v\n%s", err, r.stdout)
	}
	if rep.Native.ExitStatus != 0 || rep.Sandbox.ExitStatus != 0 || rep.Native.Calls < 500 {
		t.Fatalf("runs: native %+v, sandbox %+v", rep.Native, rep.Sandbox)
	}
	unexplained := 0
	for _, d := range rep.Divergences {
		unexplained++
		t.Errorf("unexplained divergence: native %+v, sandbox %+v", d.Native, d.Sandbox)
	}
	t.Logf("conformance: %d calls compared, %d equal, %d unexplained",
		rep.Native.Calls, rep.Native.Calls-rep.DivergentCalls, unexplained)
}
