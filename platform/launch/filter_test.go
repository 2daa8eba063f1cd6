package launch

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
)

// notif is struct seccomp_notif as words: id; pid, flags; nr, arch; ip;
// args[6]. notifResp is struct seccomp_notif_resp.
type notif [10]uint64

func (n *notif) nr() int32      { return int32(uint32(n[2])) }
func (n *notif) args() []uint64 { return n[4:] }

type notifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// TestFilterRoutesCalls loads the sandbox's filter on one thread of the
// test and checks where each kind of call goes: a trapped call stops for
// a tracer (with none attached the kernel fails it with ENOSYS, so a guest
// whose tracer is gone never runs it on the host), a notified call and the
// install call reach the listener, which answers them, and any other call
// runs on the host.
func TestFilterRoutesCalls(t *testing.T) {
	const (
		trapped  = unix.SYS_GETPGRP
		notified = unix.SYS_GETPPID
		// narrowed is notified only when its first argument, as an
		// int, is 5 (getuid ignores its arguments).
		narrowed = unix.SYS_GETUID
		// mixed is notified but stops for 5 (and 7 with the upper
		// half set): without a tracer, ENOSYS.
		mixed = unix.SYS_GETEUID
		// last is the highest number the filter is told of: past it,
		// statmount (which fails with EFAULT on NULL pointers since
		// Linux 6.8) is refused with ENOSYS, as is an x32 call. (Not
		// lower: the filtered thread's Go runtime makes its own calls,
		// futex among them, which must run.)
		last = unix.SYS_FUTEX_REQUEUE
		past = unix.SYS_STATMOUNT
		x32  = 0x40000000 | unix.SYS_GETPID
	)
	type results struct {
		trapped, notified, install, other  uintptr
		narrowed5, narrowed6, narrowedHigh uintptr
		narrowed7, mixed5, mixed6, mixed7  uintptr
		past, x32                          uintptr
		errs                               [13]unix.Errno
	}
	listener := make(chan int, 1)
	done := make(chan results, 1)
	go func() {
		// Never unlocked: the thread carries the filter and ends with
		// this goroutine instead of going back to the scheduler.
		runtime.LockOSThread()
		fd, err := loadFilter([]uintptr{trapped}, []uintptr{notified, narrowed, mixed},
			[]platform.ArgFilter{{Nr: narrowed, Arg: 0, Values: []uint32{5, 7}, Stop: []uint32{7}},
				{Nr: mixed, Arg: 1, Stop: []uint32{5, 7}}}, last)
		if err != nil {
			t.Error(err)
			listener <- -1
			return
		}
		listener <- fd
		var r results
		r.trapped, _, r.errs[0] = unix.RawSyscall(trapped, 0, 0, 0)
		r.notified, _, r.errs[1] = unix.RawSyscall(notified, 0, 0, 0)
		r.narrowed5, _, r.errs[4] = unix.RawSyscall(narrowed, 5, 0, 0)
		r.narrowed6, _, r.errs[5] = unix.RawSyscall(narrowed, 6, 0, 0)
		r.narrowedHigh, _, r.errs[6] = unix.RawSyscall(narrowed, 1<<32|5, 0, 0)
		r.narrowed7, _, r.errs[7] = unix.RawSyscall(narrowed, 7, 0, 0)
		r.mixed5, _, r.errs[8] = unix.RawSyscall(mixed, 0, 5, 0)
		r.mixed6, _, r.errs[9] = unix.RawSyscall(mixed, 0, 6, 0)
		r.mixed7, _, r.errs[10] = unix.RawSyscall(mixed, 0, 1<<32|7, 0)
		r.install, _, r.errs[2] = unix.RawSyscall(platform.SysInstallFD, 7, 8, 9)
		r.other, _, r.errs[3] = unix.RawSyscall(unix.SYS_GETSID, 0, 0, 0)
		r.past, _, r.errs[11] = unix.RawSyscall(past, 0, 0, 0)
		r.x32, _, r.errs[12] = unix.RawSyscall(x32, 0, 0, 0)
		done <- r
	}()
	fd := <-listener
	if fd < 0 {
		return
	}
	defer unix.Close(fd)

	answer := func(wantNr int32, val int64) notif {
		var req notif
		for {
			_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req)))
			if e == unix.ENOENT {
				// A signal (the Go runtime's preemption) withdrew the
				// notification before it was received; the call
				// restarts (SA_RESTART) and notifies again.
				req = notif{}
				continue
			}
			if e != 0 {
				t.Fatalf("NOTIF_RECV: %v", e)
			}
			break
		}
		if req.nr() != wantNr {
			t.Errorf("notified call %d, want %d", req.nr(), wantNr)
		}
		resp := notifResp{id: req[0], val: val}
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp))); e != 0 {
			t.Fatalf("NOTIF_SEND: %v", e)
		}
		return req
	}
	answer(notified, 4242)
	answer(narrowed, 55)
	if req := answer(narrowed, 56); req.args()[0] != 1<<32|5 {
		t.Errorf("narrowed call's argument %#x, want %#x", req.args()[0], uint64(1<<32|5))
	}
	if req := answer(mixed, 66); req.args()[1] != 6 {
		t.Errorf("mixed call's argument %#x, want 6", req.args()[1])
	}
	if req := answer(platform.SysInstallFD, 17); req.args()[0] != 7 || req.args()[2] != 9 {
		t.Errorf("install call's arguments %v, want 7, 8, 9", req.args()[:3])
	}
	var r results
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the filtered thread never finished")
	}
	sid, _ := unix.Getsid(0)
	for _, c := range []struct {
		name string
		got  uintptr
		err  unix.Errno
		want uintptr
		werr unix.Errno
	}{
		{"trapped, no tracer", r.trapped, r.errs[0], ^uintptr(0) - uintptr(unix.ENOSYS) + 1, unix.ENOSYS},
		{"notified", r.notified, r.errs[1], 4242, 0},
		{"install", r.install, r.errs[2], 17, 0},
		{"other", r.other, r.errs[3], uintptr(sid), 0},
		{"narrowed, a listed value", r.narrowed5, r.errs[4], 55, 0},
		{"narrowed, another value: the host's", r.narrowed6, r.errs[5], uintptr(unix.Getuid()), 0},
		{"narrowed, a listed value with the upper half set", r.narrowedHigh, r.errs[6], 56, 0},
		{"narrowed, a listed value that stops", r.narrowed7, r.errs[7], 0, unix.ENOSYS},
		{"notified, a value that stops", r.mixed5, r.errs[8], 0, unix.ENOSYS},
		{"notified, another value", r.mixed6, r.errs[9], 66, 0},
		{"notified, a value that stops with the upper half set", r.mixed7, r.errs[10], 0, unix.ENOSYS},
		{"past the last known number", r.past, r.errs[11], 0, unix.ENOSYS},
		{"x32", r.x32, r.errs[12], 0, unix.ENOSYS},
	} {
		if c.err != c.werr || (c.werr == 0 && c.got != c.want) {
			t.Errorf("%s: got %d (%v), want %d (%v)", c.name, int64(c.got), c.err, int64(c.want), c.werr)
		}
	}
}

func TestCoverInodes(t *testing.T) {
	points := []string{"/tmp", "/tmp/a", "/tmp/a/b/c", "/tmpx", "/var/tmp"}
	for _, tc := range []struct {
		point string
		want  uint64
	}{
		// root + private directory, plus a directory per component
		// of each point below: a (1) and a/b/c (3).
		{"/tmp", 2 + 1 + 3},
		{"/tmp/a", 2 + 2},
		{"/tmpx", 2}, // a name prefix is not a parent
		{"/var/tmp", 2},
	} {
		if got := coverInodes(tc.point, points); got != tc.want {
			t.Errorf("coverInodes(%s) = %d, want %d", tc.point, got, tc.want)
		}
	}
}
