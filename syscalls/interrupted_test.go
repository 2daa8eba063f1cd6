package syscalls_test

import (
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// TestWithdrawnFIFOOpenInterrupted: on unotify, a signal that withdraws an
// open before the sentry received it (the tracer's signal stop finds
// ERESTARTSYS) leaves an open that would wait for one of the sentry's
// FIFOs interrupted, as Linux's wait_for_partner would be: EINTR, or a
// restart by the handler's SA_RESTART (Kernel.Interrupted false). Every
// open that would not wait restarts (true), and the look changes nothing.
// Restarted regardless, the FIFO's open waited with the signal already
// taken: fifoflood.py's alarm, lost that way, left its open waiting for
// ever (TestInterruptedFIFOOpensBounded's guest, 4 of 19 runs on unotify
// with two busy loops on the sandbox's CPU).
func TestWithdrawnFIFOOpenInterrupted(t *testing.T) {
	host := filepath.Join(t.TempDir(), "hostfifo")
	if err := unix.Mkfifo(host, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo, file, link, missing := mountPoint+"/fifo", mountPoint+"/file", mountPoint+"/link", mountPoint+"/missing"
	at := func(nr uintptr, path string, flags int) (uintptr, platform.SyscallArgs) {
		cwd := int64(unix.AT_FDCWD)
		return nr, platform.SyscallArgs{uintptr(cwd), addr(cstr(path)), uintptr(flags), 0o644}
	}
	how := func(path string, flags, resolve uint64) (uintptr, platform.SyscallArgs) {
		h := make([]byte, 24)
		*(*[3]uint64)(unsafe.Pointer(&h[0])) = [3]uint64{flags, 0, resolve}
		cwd := int64(unix.AT_FDCWD)
		return unix.SYS_OPENAT2, platform.SyscallArgs{uintptr(cwd), addr(cstr(path)), addr(h), 24}
	}
	plain := func(nr uintptr, path string, a ...uintptr) (uintptr, platform.SyscallArgs) {
		args := platform.SyscallArgs{addr(cstr(path))}
		copy(args[1:], a)
		return nr, args
	}
	tests := []struct {
		name    string
		call    func() (uintptr, platform.SyscallArgs)
		restart bool
	}{
		{"openat fifo for reading", func() (uintptr, platform.SyscallArgs) { return at(unix.SYS_OPENAT, fifo, unix.O_RDONLY) }, false},
		{"openat fifo for writing", func() (uintptr, platform.SyscallArgs) {
			return at(unix.SYS_OPENAT, fifo, unix.O_WRONLY|unix.O_CLOEXEC)
		}, false},
		{"openat fifo through a link", func() (uintptr, platform.SyscallArgs) { return at(unix.SYS_OPENAT, link, unix.O_RDONLY) }, false},
		{"openat fifo O_CREAT", func() (uintptr, platform.SyscallArgs) { return at(unix.SYS_OPENAT, fifo, unix.O_CREAT|unix.O_WRONLY) }, false},
		{"open fifo", func() (uintptr, platform.SyscallArgs) { return plain(unix.SYS_OPEN, fifo, unix.O_RDONLY) }, false},
		{"creat fifo", func() (uintptr, platform.SyscallArgs) { return plain(unix.SYS_CREAT, fifo, 0o644) }, false},
		{"openat2 fifo", func() (uintptr, platform.SyscallArgs) { return how(fifo, unix.O_RDONLY, unix.RESOLVE_NO_SYMLINKS) }, false},
		// fifo_open does not wait: for both ends, or without blocking.
		{"openat fifo O_RDWR", func() (uintptr, platform.SyscallArgs) { return at(unix.SYS_OPENAT, fifo, unix.O_RDWR) }, true},
		{"openat fifo O_NONBLOCK", func() (uintptr, platform.SyscallArgs) {
			return at(unix.SYS_OPENAT, fifo, unix.O_RDONLY|unix.O_NONBLOCK)
		}, true},
		{"openat fifo O_PATH", func() (uintptr, platform.SyscallArgs) { return at(unix.SYS_OPENAT, fifo, unix.O_PATH) }, true},
		// The open fails first.
		{"openat fifo O_CREAT|O_EXCL", func() (uintptr, platform.SyscallArgs) {
			return at(unix.SYS_OPENAT, fifo, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY)
		}, true},
		{"openat fifo O_DIRECTORY", func() (uintptr, platform.SyscallArgs) {
			return at(unix.SYS_OPENAT, fifo, unix.O_RDONLY|unix.O_DIRECTORY)
		}, true},
		{"openat link O_NOFOLLOW", func() (uintptr, platform.SyscallArgs) {
			return at(unix.SYS_OPENAT, link, unix.O_RDONLY|unix.O_NOFOLLOW)
		}, true},
		{"openat2 fifo bad how", func() (uintptr, platform.SyscallArgs) { return how(fifo, unix.O_RDONLY, 1<<40) }, true},
		// Not a FIFO: it completes without waiting.
		{"openat file", func() (uintptr, platform.SyscallArgs) { return at(unix.SYS_OPENAT, file, unix.O_RDONLY) }, true},
		{"openat missing O_CREAT", func() (uintptr, platform.SyscallArgs) {
			return at(unix.SYS_OPENAT, missing, unix.O_CREAT|unix.O_WRONLY)
		}, true},
		{"creat missing", func() (uintptr, platform.SyscallArgs) { return plain(unix.SYS_CREAT, missing, 0o644) }, true},
		// A host FIFO is the host's to open.
		{"openat host fifo", func() (uintptr, platform.SyscallArgs) { return at(unix.SYS_OPENAT, host, unix.O_RDONLY) }, true},
	}
	h := newHarness(t, sentry.Options{Notifying: true})
	cwd := int64(unix.AT_FDCWD)
	for _, mk := range []struct {
		path string
		mode uintptr
	}{{fifo, unix.S_IFIFO | 0o644}, {file, unix.S_IFREG | 0o644}} {
		if r := h.call(unix.SYS_MKNODAT, uintptr(cwd), addr(cstr(mk.path)), mk.mode, 0); r.Ret != 0 {
			t.Fatalf("mknodat %s: %+v", mk.path, r)
		}
	}
	if r := h.call(unix.SYS_SYMLINKAT, addr(cstr("fifo")), uintptr(cwd), addr(cstr(link))); r.Ret != 0 {
		t.Fatalf("symlinkat: %+v", r)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nr, args := tc.call()
			if got := h.k.Interrupted(h.tid, nr, &args, 0); got != tc.restart {
				t.Errorf("Interrupted = %v, want %v (true: restarted after the handler)", got, tc.restart)
			}
		})
	}
	// The look made nothing.
	var st unix.Stat_t
	if r := h.call(unix.SYS_NEWFSTATAT, uintptr(cwd), addr(cstr(missing)), uintptr(unsafe.Pointer(&st)), 0); r.Ret != -int64(unix.ENOENT) {
		t.Errorf("%s after the opens: %+v, want ENOENT", missing, r)
	}
	// On ptrace the open is the guest's own, rewritten to the host FIFO:
	// its interruption is the host's, whatever the file.
	p := newHarness(t, sentry.Options{})
	if r := p.call(unix.SYS_MKNODAT, uintptr(cwd), addr(cstr(fifo)), unix.S_IFIFO|0o644, 0); r.Ret != 0 {
		t.Fatalf("mknodat: %+v", r)
	}
	nr, args := at(unix.SYS_OPENAT, fifo, unix.O_RDONLY)
	if p.k.Interrupted(p.tid, nr, &args, 0) {
		t.Errorf("ptrace: a FIFO's open restarted")
	}
}
