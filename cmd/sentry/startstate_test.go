package main

import "testing"

// TestGuestStartsAsNative: the guest and its children start with the
// scheduling policy, nice value, timer slack, blocked signals and ignored
// signals they would natively, from a caller that set none or some of
// them. The sentry's serving threads and its tracer run SCHED_BATCH with
// every signal blocked and a 1 us timer slack (platform.ServingThread),
// and the sentry catches or ignores signals for itself; none of it may
// reach the guest. Before: the guest had a 1 us timer slack, and lost
// every ignored signal but SIGINT (nohup's SIGHUP among them).
func TestGuestStartsAsNative(t *testing.T) {
	probe := buildC(t, "startstate")
	for _, caller := range []struct{ name, ignored, blocked string }{
		{"plain", "0", "0"},
		// SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGPIPE, SIGTERM ignored;
		// SIGUSR2, SIGALRM, SIGCHLD, SIGRTMIN+3 blocked.
		{"ignoring and blocking", "5207", "400010a00000000"},
	} {
		wrap := []string{probe, "wrap", caller.ignored, caller.blocked}
		native := runCmd(t, "", append(wrap, probe)...)
		if native.code != 0 {
			t.Fatalf("%s: native probe: exit %d: %s", caller.name, native.code, native.stderr)
		}
		for _, flags := range [][]string{nil, {"--cpu", "0"}} {
			argv := append(append(append(wrap, sentryBin, "run"), flags...), "--", probe)
			got := runCmd(t, "", argv...)
			if got.code != 0 {
				t.Fatalf("%s: sandboxed %v: exit %d: %s", caller.name, flags, got.code, got.stderr)
			}
			if got.stdout != native.stdout {
				t.Errorf("%s: sandboxed %v:\n%s\nnative:\n%s", caller.name, flags, got.stdout, native.stdout)
			}
		}
	}
}
