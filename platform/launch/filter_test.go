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
		// narrowed is notified but runs on the host when its first
		// argument, as an int, is 6, and stops for 7 (getuid ignores
		// its arguments): without a tracer, ENOSYS.
		narrowed = unix.SYS_GETUID
		// mixed is notified but stops for 5 and 7.
		mixed = unix.SYS_GETEUID
		// passing always stops but runs on the host for 3 (its Stop
		// values are ignored: it is not notified).
		passing = unix.SYS_GETGID
		// last is the highest number the filter is told of: past it,
		// statmount (which fails with EFAULT on NULL pointers since
		// Linux 6.8) is refused with ENOSYS, as is an x32 call. (Not
		// lower: the filtered thread's Go runtime makes its own calls,
		// futex among them, which must run.)
		last = unix.SYS_FUTEX_REQUEUE
		past = unix.SYS_STATMOUNT
		x32  = 0x40000000 | unix.SYS_GETPID
	)
	// The calls the filtered thread makes, in order, and what each
	// gets: a notified one the listener's answer (val), an ENOSYS one
	// stopped for a tracer that is not there (or refused), any other
	// the host's (host).
	uid, gid := uintptr(unix.Getuid()), uintptr(unix.Getgid())
	sid, _ := unix.Getsid(0)
	type call struct {
		name string
		nr   uintptr
		args [3]uintptr
		// notified calls: the listener answers val
		val  int64
		host uintptr // else, with werr 0: the host's result
		werr unix.Errno
	}
	calls := []call{
		{name: "trapped, no tracer", nr: trapped, werr: unix.ENOSYS},
		{name: "notified", nr: notified, val: 4242},
		{name: "narrowed, another value: notified", nr: narrowed, args: [3]uintptr{5}, val: 55},
		{name: "narrowed, a passed value: the host's", nr: narrowed, args: [3]uintptr{6}, host: uid},
		{name: "narrowed, a passed value with the upper half set: the host's", nr: narrowed, args: [3]uintptr{1<<32 | 6}, host: uid},
		{name: "narrowed, another value with the upper half of a passed one", nr: narrowed, args: [3]uintptr{6<<32 | 5}, val: 56},
		{name: "narrowed, a value that stops", nr: narrowed, args: [3]uintptr{7}, werr: unix.ENOSYS},
		{name: "notified, a value that stops", nr: mixed, args: [3]uintptr{0, 5}, werr: unix.ENOSYS},
		{name: "notified, another value", nr: mixed, args: [3]uintptr{0, 6}, val: 66},
		{name: "notified, a value that stops with the upper half set", nr: mixed, args: [3]uintptr{0, 1<<32 | 7}, werr: unix.ENOSYS},
		{name: "stopping, a passed value: the host's", nr: passing, args: [3]uintptr{3}, host: gid},
		{name: "stopping, another value: no tracer", nr: passing, args: [3]uintptr{4}, werr: unix.ENOSYS},
		{name: "stopping, a Stop value it ignores: no tracer", nr: passing, args: [3]uintptr{7}, werr: unix.ENOSYS},
		{name: "install", nr: platform.SysInstallFD, args: [3]uintptr{7, 8, 9}, val: 17},
		{name: "other", nr: unix.SYS_GETSID, host: uintptr(sid)},
		{name: "past the last known number", nr: past, werr: unix.ENOSYS},
		{name: "x32", nr: x32, werr: unix.ENOSYS},
	}
	type result struct {
		r   uintptr
		err unix.Errno
	}
	listener := make(chan int, 1)
	done := make(chan []result, 1)
	go func() {
		// Never unlocked: the thread carries the filter and ends with
		// this goroutine instead of going back to the scheduler.
		runtime.LockOSThread()
		fd, err := loadFilter([]uintptr{trapped, passing}, []uintptr{notified, narrowed, mixed},
			[]platform.ArgFilter{{Nr: narrowed, Arg: 0, Pass: []uint32{6}, Stop: []uint32{7}},
				{Nr: mixed, Arg: 1, Stop: []uint32{5, 7}},
				{Nr: passing, Arg: 0, Pass: []uint32{3}, Stop: []uint32{7}}}, last)
		if err != nil {
			t.Error(err)
			listener <- -1
			return
		}
		listener <- fd
		rs := make([]result, len(calls))
		for i, c := range calls {
			rs[i].r, _, rs[i].err = unix.RawSyscall(c.nr, c.args[0], c.args[1], c.args[2])
		}
		done <- rs
	}()
	fd := <-listener
	if fd < 0 {
		return
	}
	defer unix.Close(fd)

	answer := func(c call) {
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
		if req.nr() != int32(c.nr) {
			t.Errorf("%s: notified call %d, want %d", c.name, req.nr(), c.nr)
		}
		for i, a := range c.args {
			if req.args()[i] != uint64(a) {
				t.Errorf("%s: argument %d is %#x, want %#x", c.name, i, req.args()[i], a)
			}
		}
		resp := notifResp{id: req[0], val: c.val}
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp))); e != 0 {
			t.Fatalf("NOTIF_SEND: %v", e)
		}
	}
	for _, c := range calls {
		if c.val != 0 {
			answer(c)
		}
	}
	var rs []result
	select {
	case rs = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the filtered thread never finished")
	}
	for i, c := range calls {
		want := c.host
		if c.val != 0 {
			want = uintptr(c.val)
		}
		if got := rs[i]; got.err != c.werr || (c.werr == 0 && got.r != want) {
			t.Errorf("%s: got %d (%v), want %d (%v)", c.name, int64(got.r), got.err, int64(want), c.werr)
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
