package main

import "testing"

// TestGuestStartsAsNative: the guest and its children start with the
// scheduling policy, nice value, timer slack and signal mask and
// dispositions they would natively. The sentry's serving threads and its
// tracer run SCHED_BATCH with every signal blocked and a 1 us timer slack
// (platform.ServingThread); none of it may reach the guest, which the
// tracer's thread forks.
func TestGuestStartsAsNative(t *testing.T) {
	probe := buildC(t, "startstate")
	native := runCmd(t, "", probe)
	if native.code != 0 {
		t.Fatalf("native probe: exit %d: %s", native.code, native.stderr)
	}
	for _, flags := range [][]string{nil, {"--cpu", "0"}} {
		got := sandboxed(t, flags, probe)
		if got.code != 0 {
			t.Fatalf("sandboxed %v: exit %d: %s", flags, got.code, got.stderr)
		}
		if got.stdout != native.stdout {
			t.Errorf("sandboxed %v:\n%s\nnative:\n%s", flags, got.stdout, native.stdout)
		}
	}
}
