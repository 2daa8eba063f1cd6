package syscalls_test

import (
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/syscalls"
)

// TestPolicyCoversEverySyscall: every x86-64 number has exactly one
// decision with a reason, the trapped ones (served, checked, refused) have
// a handler in the table, the harmless ones have none, and nothing past
// LastSyscall is trapped.
func TestPolicyCoversEverySyscall(t *testing.T) {
	p := syscalls.Policies()
	if len(p) != syscalls.LastSyscall+1 {
		t.Fatalf("%d decisions for %d numbers", len(p), syscalls.LastSyscall+1)
	}
	tb := syscalls.NewTable()
	count := map[syscalls.Decision]int{}
	for nr, pol := range p {
		count[pol.Decision]++
		trapped := tb[nr].Fn != nil
		name := tb[nr].Name
		switch pol.Decision {
		case syscalls.Served, syscalls.Checked, syscalls.Refused:
			if !trapped {
				t.Errorf("syscall %d is %v but has no handler in NewTable()", nr, pol.Decision)
			}
		case syscalls.Harmless:
			if trapped {
				t.Errorf("syscall %d (%s) is harmless but trapped", nr, name)
			}
		default:
			t.Errorf("syscall %d (%s) has no decision", nr, name)
			continue
		}
		if !strings.HasPrefix(pol.Reason, pol.Decision.String()+":") || len(pol.Reason) < len("harmless: ")+10 {
			t.Errorf("syscall %d (%s): reason %q does not say %v and why", nr, name, pol.Reason, pol.Decision)
		}
		if (pol.Decision == syscalls.Refused) != (pol.Errno != 0) {
			t.Errorf("syscall %d (%s): %v with errno %v", nr, name, pol.Decision, pol.Errno)
		}
	}
	for nr := syscalls.LastSyscall + 1; nr < len(tb); nr++ {
		if tb[nr].Fn != nil {
			t.Errorf("syscall %d (%s) is trapped but past LastSyscall: it needs a decision", nr, tb[nr].Name)
		}
	}
	t.Logf("decisions: %d served, %d checked, %d refused, %d harmless", count[syscalls.Served],
		count[syscalls.Checked], count[syscalls.Refused], count[syscalls.Harmless])
}

// TestRefusedAnswerTheirErrno: each refused number is answered with its
// errno whatever its arguments, and never reaches the host.
func TestRefusedAnswerTheirErrno(t *testing.T) {
	h := newHarness(t, sentry.Options{})
	for nr, pol := range syscalls.Policies() {
		if pol.Decision != syscalls.Refused {
			continue
		}
		for _, args := range [][]uintptr{{}, {1, 2, 3, 4, 5, 6}, {^uintptr(0), 0, 0, 0, 0, 0}} {
			r := h.call(uintptr(nr), args...)
			if r.Action != platform.Done || r.Ret != -int64(pol.Errno) {
				t.Errorf("syscall %d%v: %+v, want -%v", nr, args, r, pol.Errno)
			}
		}
	}
}

// TestUnknownNotifiedTaskKilled: a notification from a thread the sentry
// never saw created is never passed through: the thread is killed and the
// call fails.
func TestUnknownNotifiedTaskKilled(t *testing.T) {
	h := newHarness(t, sentry.Options{})
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	p := []byte("/sentry-test-mount/x\x00")
	cwd := int64(unix.AT_FDCWD)
	args := platform.SyscallArgs{uintptr(cwd), uintptr(unsafe.Pointer(&p[0])), unix.O_CREAT | unix.O_WRONLY}
	r := h.k.SyscallNotify(int32(cmd.Process.Pid), unix.SYS_OPENAT, &args, 1, 0)
	if r.Action != platform.Done || r.Ret != -int64(unix.ENOSYS) {
		t.Fatalf("unknown task's openat: %+v, want ENOSYS", r)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(interface{ Signal() unix.Signal }); !ok || err == nil || ws.Signal() != unix.SIGKILL {
		t.Errorf("unknown task not killed: %v", err)
	}
}
