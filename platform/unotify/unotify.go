// Package unotify serves the notifications of the sandbox's seccomp
// filter (SECCOMP_RET_USER_NOTIF): the guest thread sleeps in the kernel
// while a sentry thread reads the notification, serves it and answers, and
// with SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP the two hand the CPU to each other
// without a scheduler round trip. No registers can be changed this way, so
// a call is either passed through (SECCOMP_USER_NOTIF_FLAG_CONTINUE),
// answered, or given a descriptor (SECCOMP_IOCTL_NOTIF_ADDFD).
//
// Every platform runs a Server: the install call the tracer rewrites calls
// into (platform.SysInstallFD) is always notified. On the unotify
// platform the hot calls (open, close, stat, ...) are notified too, and
// the tracer only stops at the rarer ones and at fork, exec, exit and
// signals.
package unotify

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
)

// seccompNotif is struct seccomp_notif.
type seccompNotif struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

// seccompNotifResp is struct seccomp_notif_resp.
type seccompNotifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// seccompNotifAddfd is struct seccomp_notif_addfd.
type seccompNotifAddfd struct {
	id         uint64
	flags      uint32
	srcfd      uint32
	newfd      uint32
	newfdFlags uint32
}

// server answers the notifications of one listener.
type server struct {
	sup      platform.NotifySupervisor
	cpu      int
	stats    *platform.Stats
	listener int
	// mountNS is the guest's mount namespace (-1: the sentry's), which
	// every serving thread joins: a path the sentry acts on for the
	// guest (a host path it resolved, served by the sentry itself) must
	// land where the guest's own call would, under the covers over the
	// mount points (launch/namespace.go), not in the host's copy.
	mountNS int
	// recvMu lets one serving thread at a time wait in
	// SECCOMP_IOCTL_NOTIF_RECV (the leader; the others wait for it here,
	// parked by Go): every thread in RECV is woken for each notification,
	// and a Go thread woken after a long wait has lost its P, which cost
	// 3x on fstat; one waiter is what makes the synchronous wake-up pay
	// off.
	recvMu sync.Mutex
	// threads are the serving threads started, busy those serving a call.
	// Another starts when all are busy and a notification is already
	// waiting (guest threads calling at once are served concurrently) or
	// a handler is about to block; threads stay until the guest is gone
	// (starting one per burst cost more than 100 us each).
	threads atomic.Int32
	busy    atomic.Int32
	stopped atomic.Bool
	// watching: the tracer receives the install calls it makes itself
	// (ServeInstall), so the serving threads do not wait in RECV, where
	// they would take every notification first (the kernel hands a
	// notification to the longest waiter in RECV); they wait in poll and
	// serve only what nobody else receives (see watch).
	watching bool
	// eagerUntil (UnixNano) is set when the tracer gave up an install
	// call it had continued a thread into (a signal withdrew it, or it
	// did not come in time): until then a watching thread receives
	// without its pause, as the tracer will not.
	eagerUntil atomic.Int64
	// signalsUntil (UnixNano): signals withdrew install calls lately,
	// so the tracer waits for its install calls in short slices.
	signalsUntil atomic.Int64
}

// Server answers the notifications of one listener.
type Server = server

// Start serves listener (the sentry's own copy, which the Server closes
// at Stop, as mountNS) for sup, its serving threads in mount namespace
// mountNS (-1: the sentry's); cpu >= 0 pins them; stats, if set, gets
// the time the guest waited for the sentry. With watching, the only
// notified call is the install call and the tracer serves the ones it
// makes (BeginInstall, ServeInstall); the serving threads serve the rest
// (a guest's own, one the tracer gave up on).
func Start(listener, mountNS int, sup platform.NotifySupervisor, cpu int, stats *platform.Stats, watching bool) *Server {
	s := &server{sup: sup, cpu: cpu, stats: stats, mountNS: mountNS, watching: watching}
	// The flags are the ioctl's argument itself, not a pointer to them
	// (seccomp_notify_set_flags).
	// Linux before 6.6 refuses it: correct, only slower.
	unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	s.listener = listener
	s.sup.SetInjector(s)
	s.threads.Add(1)
	go s.serve()
	return s
}

// fail reports a serving thread that could not start; the ones running go
// on.
func (s *server) fail(err error) {
	fmt.Fprintf(os.Stderr, "sentry: unotify: %v\n", err)
}

// Stop ends the serving threads once the guest is gone: closing the
// listener makes their waits fail.
func (s *server) Stop() {
	if s.listener > 0 && s.stopped.CompareAndSwap(false, true) {
		unix.Close(s.listener)
		if s.mountNS >= 0 {
			unix.Close(s.mountNS)
		}
	}
}

// serve is one serving thread. It is locked to its OS thread and, with
// --cpu, pinned: the synchronous wake-up then switches between the guest
// and this thread on one CPU.
func (s *server) serve() {
	// The thread stays locked to the end and dies with this goroutine:
	// its fs_struct is unshared (CLONE_FS), so that a call served on the
	// host for the guest can use the guest's umask without changing the
	// sentry's, and Go must not run anything else on it.
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		s.threads.Add(-1)
		s.fail(fmt.Errorf("unshare(CLONE_FS) of a serving thread: %w", err))
		return
	}
	// With its own fs_struct the thread may join another mount namespace
	// (mntns_install); it never leaves it again.
	if s.mountNS >= 0 {
		if err := unix.Setns(s.mountNS, unix.CLONE_NEWNS); err != nil {
			s.threads.Add(-1)
			if !s.stopped.Load() {
				s.fail(fmt.Errorf("setns(CLONE_NEWNS) of a serving thread: %w", err))
			}
			return
		}
	}
	if s.cpu >= 0 {
		var set unix.CPUSet
		set.Set(s.cpu)
		unix.SchedSetaffinity(0, &set)
	}
	platform.ServingThread()
	var req seccompNotif
	var resp seccompNotifResp
	var args platform.SyscallArgs
	for {
		if s.watching && !s.watch(&req) || !s.watching && !s.receive(&req) {
			s.threads.Add(-1)
			return
		}
		if s.busy.Add(1) >= s.threads.Load() && s.cpu < 0 && s.sup.Threads() > 1 && s.pending() {
			// Another guest thread's call is waiting already and no
			// serving thread is free: start one while this one serves.
			// Not when pinned: the guest and every serving thread share
			// one CPU, so a second thread could not serve at the same
			// time, and handing the receive over between threads costs
			// a context switch per call (--threads 2, pinned: 17k open1
			// with the extra threads); only a handler about to block
			// (Blocking) needs another.
			s.spawn()
		}
		s.handle(&req, &resp, &args)
		s.busy.Add(-1)
	}
}

// handle serves one received notification and answers it.
func (s *server) handle(req *seccompNotif, resp *seccompNotifResp, args *platform.SyscallArgs) {
	*args = platform.SyscallArgs{uintptr(req.args[0]), uintptr(req.args[1]), uintptr(req.args[2]),
		uintptr(req.args[3]), uintptr(req.args[4]), uintptr(req.args[5])}
	start := s.stats.Start()
	res := s.sup.SyscallNotify(int32(req.pid), uintptr(req.nr), args, req.id, uintptr(req.ip))
	if res.Action != platform.Responded {
		*resp = seccompNotifResp{id: req.id}
		switch res.Action {
		case platform.Done:
			if res.Ret < 0 {
				resp.error = int32(res.Ret)
			} else {
				resp.val = res.Ret
			}
		default:
			resp.flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
		}
		// ENOENT: the thread died or was interrupted meanwhile; its
		// call is restarted or gone, nothing to answer.
		unix.RawSyscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(resp)))
	}
	outcome := platform.Unseen // continued: the host runs it
	if res.Action == platform.Done || res.Action == platform.Responded {
		outcome = platform.Answered
	}
	s.stats.Done(uintptr(req.nr), start, res.Ret, outcome, true)
}

// watchIdle is how long a watching serving thread waits, once the
// listener has a notification, before it looks whether the notification is
// still there for it to receive: each install call wakes every poller,
// and without the pause the serving thread would cost the guest a context
// switch per open, and take the tracer's calls from it. A guest's own
// install call (answered ENOSYS) or one the tracer gave up on waits this
// much longer.
const watchIdle = time.Millisecond

// watch waits until a notification is pending that nobody else receives
// and receives it; false once the listener is gone. RECV cannot block
// here: it is entered only with recvMu held and a notification pending,
// and only holders of recvMu receive (the kernel's count of notifications
// to receive is at least the number pending).
func (s *server) watch(req *seccompNotif) bool {
	for {
		fds := [1]unix.PollFd{{Fd: int32(s.listener), Events: unix.POLLIN}}
		// The wait blocks: through the scheduler.
		_, _, e := unix.Syscall(unix.SYS_POLL, uintptr(unsafe.Pointer(&fds[0])), 1, ^uintptr(0))
		switch {
		case e == unix.EINTR:
			continue
		case e != 0 || fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 || s.stopped.Load():
			// POLLHUP: no guest thread is left to notify.
			return false
		}
		// Leave the notification to the tracer for a while first: it is
		// almost always the tracer's own install call, and a serving
		// thread that took recvMu now would often make the tracer leave
		// its next install call to it (BeginInstall fails), a
		// millisecond late.
		eager := time.Now().UnixNano() < s.eagerUntil.Load()
		if !eager {
			time.Sleep(watchIdle)
		}
		if s.recvMu.TryLock() {
			got := s.pending() && s.recv(req)
			s.recvMu.Unlock()
			if got {
				return true
			}
		}
		if eager {
			// The tracer holds recvMu: look again soon.
			time.Sleep(installSlice)
		}
	}
}

// eagerFor is how long the watching threads receive without their pause
// after the tracer gave up an install call (Expect).
const eagerFor = 10 * time.Millisecond

// Expect tells the watching threads that an install call the tracer
// continued a thread into will come without the tracer waiting for it (a
// signal withdrew it and it is made again after the handler, or it did not
// come in time): for a while they receive without their pause.
func (s *server) Expect() {
	if s.watching {
		now := time.Now()
		s.eagerUntil.Store(now.Add(eagerFor).UnixNano())
		s.signalsUntil.Store(now.Add(signalsFor).UnixNano())
	}
}

// recv receives a notification known to be pending (recvMu held).
func (s *server) recv(req *seccompNotif) bool {
	*req = seccompNotif{}
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(req)))
	// ENOENT: the guest thread was interrupted meanwhile.
	return e == 0
}

// installSlice is how long the tracer waits for the install call it has
// just continued a thread into before it asks whether the tracer has
// something else to do: the thread may never make the call (killed), or a
// signal may have withdrawn it before it was received (it restarts after
// the signal's delivery stop, which the tracer must serve: with a 200 us
// itimer, one install in a few). While signals have lately withdrawn
// install calls (signalsFor after Expect) the slice is signalSlice:
// otherwise short slices cost the common case (the tracer waking on the
// guest's CPU before the guest got to its call: open1 0.7x when pinned,
// under load), long ones the signal storm (sigio 1.9x main).
// installWait bounds the whole wait; the serving threads then serve the
// call, as any other. (The tracer thread's timer slack is made small for
// a slice to mean anything: Linux's default of 50 us would double
// signalSlice.)
const (
	installSlice = time.Millisecond
	signalSlice  = 50 * time.Microsecond
	signalsFor   = 100 * time.Millisecond
	installWait  = 3 * time.Millisecond
)

// BeginInstall is called by the tracer thread before it continues a
// stopped thread into the install call: true if the tracer may receive
// that call itself (ServeInstall must follow), false if a serving thread
// is receiving at the moment and will serve it.
func (s *server) BeginInstall() bool {
	return s.watching && s.recvMu.TryLock()
}

// ServeInstall serves, on the calling thread (the tracer's), the install
// call thread tid was just continued into after BeginInstall: what the
// serving threads would do, without waking one, and without the tracer
// and a serving thread handing the guest to each other through the Go
// scheduler on every open. Other pending notifications met on the way (a
// guest's own install calls) are served too. It returns once tid's is
// served, as soon as stopped reports that a guest thread has a state
// change for the tracer (checked every installSlice without a
// notification: tid may have been stopped by a signal instead), or after
// installWait without one (the guest thread did not get a CPU in time, or
// another thread took its call); the serving threads are then told to
// receive without their pause (Expect).
func (s *server) ServeInstall(tid int32, stopped func() bool) {
	defer s.recvMu.Unlock()
	var req seccompNotif
	var resp seccompNotifResp
	var args platform.SyscallArgs
	slice := installSlice
	if time.Now().UnixNano() < s.signalsUntil.Load() {
		slice = signalSlice
	}
	for waited := time.Duration(0); waited < installWait; {
		ts := unix.NsecToTimespec(slice.Nanoseconds())
		fds := [1]unix.PollFd{{Fd: int32(s.listener), Events: unix.POLLIN}}
		// Through the scheduler: the runtime must be able to stop the
		// world meanwhile.
		n, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		switch {
		case e == unix.EINTR:
			continue
		case e != 0 || fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0:
			return
		case n == 0:
			if stopped() {
				s.Expect()
				return
			}
			// Each slice twice the last: a guest thread that did
			// not get a CPU yet should not have the tracer waking
			// on its CPU every few microseconds meanwhile.
			waited += slice
			slice = min(2*slice, installWait-waited)
			continue
		}
		if !s.recv(&req) {
			continue
		}
		s.handle(&req, &resp, &args)
		if int32(req.pid) == tid {
			return
		}
	}
	s.Expect()
}

// receive waits for the next notification as the leader; false once the
// listener is gone.
func (s *server) receive(req *seccompNotif) bool {
	s.recvMu.Lock()
	defer s.recvMu.Unlock()
	for {
		*req = seccompNotif{}
		// The wait blocks: through the scheduler, so that other
		// goroutines keep running.
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(req)))
		switch e {
		case 0:
			return true
		case unix.EINTR, unix.ENOENT:
			// ENOENT: the guest thread was interrupted before this
			// thread received its notification.
		default:
			return false
		}
	}
}

// maxThreads bounds the serving threads: as many guest threads as this
// may wait in handlers (FIFO opens) before the others wait for them.
const maxThreads = 64

// spawn starts another serving thread.
func (s *server) spawn() {
	if s.stopped.Load() {
		return
	}
	if n := s.threads.Add(1); n > maxThreads {
		s.threads.Add(-1)
		return
	}
	go s.serve()
}

// pending reports whether a notification is waiting to be received.
func (s *server) pending() bool {
	fds := [1]unix.PollFd{{Fd: int32(s.listener), Events: unix.POLLIN}}
	n, _, _ := unix.RawSyscall(unix.SYS_POLL, uintptr(unsafe.Pointer(&fds[0])), 1, 0)
	return int(n) == 1 && fds[0].Revents&unix.POLLIN != 0
}

// Blocking implements platform.Injector: the calling handler is about to
// wait (a FIFO's open), so another thread must serve meanwhile.
func (s *server) Blocking() {
	if s.busy.Load() >= s.threads.Load() {
		s.spawn()
	}
}

// InstallFD implements platform.Injector.
func (s *server) InstallFD(id uint64, fd int, cloexec bool) (int32, error) {
	a := seccompNotifAddfd{id: id, srcfd: uint32(fd), flags: unix.SECCOMP_ADDFD_FLAG_SEND}
	if cloexec {
		a.newfdFlags = unix.O_CLOEXEC
	}
	// The kernel marks the call answered before the guest thread installs
	// the fd, and a signal interrupting this wait (the Go runtime's
	// preemption signal, say) withdraws the install: the guest would then
	// return 0 from its open. The calling thread blocks signals
	// (platform.BlockSignals), so nothing interrupts it.
	r, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_ADDFD, uintptr(unsafe.Pointer(&a)))
	if e != 0 {
		return -1, e
	}
	return int32(r), nil
}

// InstallFDAt implements platform.Injector.
func (s *server) InstallFDAt(id uint64, fd int, at int32, cloexec bool) error {
	a := seccompNotifAddfd{id: id, srcfd: uint32(fd), newfd: uint32(at),
		flags: unix.SECCOMP_ADDFD_FLAG_SETFD | unix.SECCOMP_ADDFD_FLAG_SEND}
	if cloexec {
		a.newfdFlags = unix.O_CLOEXEC
	}
	// As InstallFD: the calling thread blocks signals.
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_ADDFD, uintptr(unsafe.Pointer(&a)))
	if e != 0 {
		return e
	}
	return nil
}

// Respond implements platform.Injector.
func (s *server) Respond(id uint64, ret int64) {
	resp := seccompNotifResp{id: id}
	if ret < 0 {
		resp.error = int32(ret)
	} else {
		resp.val = ret
	}
	unix.RawSyscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
}

// Valid implements platform.Injector.
func (s *server) Valid(id uint64) bool {
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(s.listener), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
	return e == 0
}
