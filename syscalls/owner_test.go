package syscalls_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// TestSetsigRefused: F_SETSIG may name only a signal no sentry acts on;
// the others are EPERM, after the kernel's own EBADF for a number not
// open or an O_PATH descriptor; what Linux refuses anyway (EINVAL) is the
// host's to say.
func TestSetsigRefused(t *testing.T) {
	h := newHarness(t, sentry.Options{})
	sv, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sv[0])
	defer unix.Close(sv[1])
	opath, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(opath)
	const notOpen = 4999
	for _, tc := range []struct {
		name string
		fd   int
		sig  uintptr
		want int64 // 1: passed to the host
	}{
		{"SIGIO's default", sv[0], 0, 1},
		{"SIGIO", sv[0], uintptr(unix.SIGIO), 1},
		{"SIGURG", sv[0], uintptr(unix.SIGURG), 1},
		{"SIGCHLD", sv[0], uintptr(unix.SIGCHLD), 1},
		{"SIGRTMIN", sv[0], 34, 1},
		{"SIGRTMAX", sv[0], 64, 1},
		{"no such signal", sv[0], 65, 1},
		{"negative", sv[0], ^uintptr(0), 1},
		{"upper half ignored", sv[0], 1<<32 | 34, 1},
		{"SIGKILL", sv[0], uintptr(unix.SIGKILL), -int64(unix.EPERM)},
		{"SIGSTOP", sv[0], uintptr(unix.SIGSTOP), -int64(unix.EPERM)},
		{"SIGTERM, passed on to the guest", sv[0], uintptr(unix.SIGTERM), -int64(unix.EPERM)},
		{"SIGUSR1, passed on to the guest", sv[0], uintptr(unix.SIGUSR1), -int64(unix.EPERM)},
		{"SIGSEGV", sv[0], uintptr(unix.SIGSEGV), -int64(unix.EPERM)},
		{"glibc's SIGSETXID", sv[0], 33, -int64(unix.EPERM)},
		{"SIGKILL, O_PATH", opath, uintptr(unix.SIGKILL), -int64(unix.EBADF)},
		{"SIGKILL, not open", notOpen, uintptr(unix.SIGKILL), -int64(unix.EBADF)},
	} {
		r := h.call(unix.SYS_FCNTL, uintptr(tc.fd), unix.F_SETSIG, tc.sig)
		switch {
		case tc.want == 1 && r.Action != platform.Passthrough:
			t.Errorf("%s: %+v, want the host's", tc.name, r)
		case tc.want != 1 && (r.Action != platform.Done || r.Ret != tc.want):
			t.Errorf("%s: %+v, want %d", tc.name, r, tc.want)
		}
	}
}
