package platform

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// threadStatus returns field of /proc/thread-self/status.
func threadStatus(t *testing.T, field string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range bytes.Lines(data) {
		if name, val, ok := bytes.Cut(line, []byte(":")); ok && string(name) == field {
			return string(bytes.TrimSpace(val))
		}
	}
	t.Fatalf("no %s in /proc/thread-self/status", field)
	return ""
}

// TestServingThreads: a serving thread blocks every signal but a fault's
// and runs SCHED_BATCH; the tracer's leaves SIGCHLD unblocked too (each
// guest stop sends it one, which a blocked SIGCHLD would make wake another
// sentry thread). (A process either forked would inherit both: the
// tracer's thread forks the guest's init stage before,
// TestGuestStartsAsNative.)
func TestServingThreads(t *testing.T) {
	for _, tc := range []struct {
		name      string
		setup     func()
		unblocked uint64
	}{
		{"serving", ServingThread, 0},
		{"tracer", TracerThread, 1 << (unix.SIGCHLD - 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				// Locked and never unlocked: the thread ends with the
				// goroutine, taking its settings with it.
				runtime.LockOSThread()
				tc.setup()
				blk, err := strconv.ParseUint(threadStatus(t, "SigBlk"), 16, 64)
				if err != nil {
					t.Error(err)
					return
				}
				// SIGKILL and SIGSTOP cannot be blocked.
				if want := ^uint64(syncSignals | tc.unblocked | 1<<(unix.SIGKILL-1) | 1<<(unix.SIGSTOP-1)); blk != want {
					t.Errorf("SigBlk %016x, want %016x", blk, want)
				}
				for _, s := range []unix.Signal{unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP} {
					if blk&(1<<(s-1)) != 0 {
						t.Errorf("%v blocked: a fault would kill the sentry without Go's panic", s)
					}
				}
				if policy, _, _ := unix.RawSyscall(unix.SYS_SCHED_GETSCHEDULER, 0, 0, 0); policy != unix.SCHED_BATCH {
					t.Errorf("policy %#x, want SCHED_BATCH", policy)
				}
			}()
			<-done
		})
	}
}
