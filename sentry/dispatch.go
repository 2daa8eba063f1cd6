package sentry

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
)

// Dispatch: the platform reports a call at one of two entry points, a
// stopped call (Syscall, from a ptrace syscall-entry stop) or a notified
// one (SyscallNotify, from a seccomp user notification). Each makes the
// task's Call and hands it to the same core: serve runs the handler and
// turns its decision into the platform's action (path redirects, --strace's
// exit stop, --inject-fault, the counters), complete finishes it (task work,
// --strace). A rewritten call completes at its exit stop (SyscallExit),
// after its Continuation.

// callingTask is tid's task, locked, for a call of the table; nil when
// the call is the host's: sysno is not in the table, or the sentry never
// saw the thread created (impossible unless the platform lost an event).
// Another platform thread may have served this thread's previous call;
// the lock orders the two for the race detector as the guest's own order
// does for the kernel.
func (k *Kernel) callingTask(tid int32, sysno uintptr) *Task {
	t := k.Task(tid)
	if t == nil || sysno >= MaxSyscall || k.table[sysno].Fn == nil {
		return nil
	}
	lockTask(t)
	return t
}

// taskYields bounds how often lockTask gives the CPU to the holder of a
// task's lock before it parks on it.
const taskYields = 64

// lockTask takes t.mu for a call of t. A thread makes one call at a time,
// but a notified call answered by ADDFD with SECCOMP_ADDFD_FLAG_SEND
// (open, dup2) resumes the guest inside the ioctl, before its serving
// thread has let go of the task, and the guest's next call (a stop for the
// tracer, say) then finds the lock held by a thread that is runnable but
// not running: pinned, the two share one CPU. Parking a goroutine locked
// to its thread hands its P to another thread and takes several wake-ups
// to come back (stoplockedm, startlockedm): fcntl after a tmpfs open
// waited 31 us instead of 5 on unotify. Yielding lets the holder finish
// first.
func lockTask(t *Task) {
	for i := 0; i < taskYields; i++ {
		if t.mu.TryLock() {
			return
		}
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	t.mu.Lock()
}

// Syscall implements platform.Supervisor.Syscall.
func (k *Kernel) Syscall(tid int32, sysno uintptr, args *platform.SyscallArgs, sp uintptr) platform.Result {
	t := k.callingTask(tid, sysno)
	if t == nil {
		return platform.Result{}
	}
	defer t.mu.Unlock()
	t.clearClosing()
	t.continued.valid = false
	c := t.begin(sysno, args)
	c.sp = sp
	next := t.next
	t.next = reissue{}
	if next.isThis(sysno, args) {
		// The call a Reissue asked for: the host runs it, its exit goes
		// to the Continuation given (FailAfterClose's close: the host
		// closes the placeholder, the guest sees the error).
		c.then = next.then
		c.rewritten = true
		if k.Opts.Strace != nil {
			c.traceArgs = k.decodeArgs(t, sysno, args)
		}
		return platform.Result{Action: platform.Rewrite, Sysno: sysno, Args: *args}
	}
	t.endWindows()
	res := k.serve(c)
	switch res.Action {
	case platform.Install:
		// Completed when the install call is notified
		// (completeInstall), which traces it.
		if k.Opts.Strace != nil {
			t.installs[len(t.installs)-1].traceArgs = k.decodeArgs(t, sysno, args)
		}
		return res.Result
	case platform.Rewrite:
		if k.Opts.Strace != nil {
			c.traceArgs = k.decodeArgs(t, sysno, args)
			c.traceServed = res.Served
		}
		c.rewritten = true
		return res.Result
	}
	k.complete(c, res.Ret, res.Served)
	return res.Result
}

// SyscallNotify implements platform.NotifySupervisor.SyscallNotify: a call
// of the table's notify set (Syscall.Notify), whose handler finishes it
// without changing registers. A path the sentry resolved back to the host
// cannot be handed to the host's call (no register can point at it), so
// the table entry's Host serves such calls on the host itself.
func (k *Kernel) SyscallNotify(tid int32, sysno uintptr, args *platform.SyscallArgs, id uint64, ip uintptr) platform.Result {
	if sysno == platform.SysInstallFD {
		return k.completeInstall(tid, id)
	}
	t := k.callingTask(tid, sysno)
	if t == nil {
		return k.unknownNotified(tid, id)
	}
	defer t.mu.Unlock()
	if err := k.ThreadUsable(); err != nil {
		// This serving thread could not take the sentry's identity
		// back: it serves nothing with another one.
		return platform.Result{Action: platform.Done, Ret: -int64(err.(unix.Errno))}
	}
	if t.call.rewritten {
		// The call a stopped call was rewritten into (the seccomp filter
		// runs again on it): it is the sentry's own, for the host.
		return platform.Result{}
	}
	t.clearClosing()
	next := t.next
	t.next = reissue{}
	if next.isThis(sysno, args) {
		// A reissued call served by notification cannot both run and
		// be seen: it is answered with what its Continuation makes of
		// it. (The sentry reissues only calls that stop on every
		// platform.)
		c := t.begin(sysno, args)
		return platform.Result{Action: platform.Done, Ret: next.then.Exit(c, 0)}
	}
	k.Counters.Notified.Add(1)
	t.endWindows()
	c := t.begin(sysno, args)
	c.notified, c.notifID, c.ip = true, id, ip
	res := k.serve(c)
	// The host runs a passed-through call now, and may be interrupted
	// doing so, as may a call that waits off the serving threads: a
	// signal stop that finds this very call interrupted must leave that
	// to the host (Interrupted). Any other call of the task makes that
	// record stale.
	t.continued = continuedCall{sysno: sysno, args: *args, ip: ip, valid: res.Action == platform.Passthrough || c.waitsOff}
	ret := res.Ret
	if res.Action == platform.Passthrough {
		// The host's result is not seen on this platform.
		ret = retUnknown
	}
	k.complete(c, ret, res.Served)
	return res.Result
}

// serve runs c's handler and makes its decision one the platform can carry
// out, then applies --inject-fault and counts the call.
func (k *Kernel) serve(c *Call) Result {
	res := k.table[c.Sysno].Fn(c, &c.Args)
	if res.Action == platform.Passthrough {
		switch {
		case c.nredirect > 0 && c.notified:
			if host := k.table[c.Sysno].Host; host != nil {
				res = host(c, &c.Args, c.hostPath)
			} else {
				res = Result{Result: platform.Result{Action: platform.Rewrite}}
			}
		case c.nredirect > 0:
			// The host must see the paths the sentry resolved, not
			// the guest's (they led through a sentry mount back to
			// the host).
			res.Action = platform.Rewrite
			res.Sysno = c.Sysno
			res.Args = c.Args
			for _, r := range c.redirect[:c.nredirect] {
				for i := range res.Args {
					if res.Args[i] == r[0] {
						res.Args[i] = r[1]
						break
					}
				}
			}
		case (k.Opts.Strace != nil || c.then != nil) && !c.notified:
			// Tracing needs the host's result, as does a handler that
			// asked to see it (ThenAtExit): observe the call's exit.
			res.Action = platform.Rewrite
			res.Sysno = c.Sysno
			res.Args = c.Args
		}
		if res.Action == platform.Rewrite && c.then == nil {
			c.then = Identity{}
		}
	}
	if c.notified && (res.Action == platform.Rewrite || res.Action == platform.Install) {
		// A handler of the notify set asked for what only a stop can
		// do: a sentry bug, reported as such rather than run wrongly.
		k.Counters.NotifyRewrite.Add(1)
		res = Err(unix.ENOSYS)
	}
	k.account(c.Sysno, &res)
	return res
}

// complete finishes c once the guest's result is ret (retUnknown for a
// notified call the host runs): the task work close queued runs before the
// task returns to the guest, and --strace logs the call.
func (k *Kernel) complete(c *Call, ret int64, served bool) {
	if len(c.deferred) > 0 {
		c.runTaskWork()
	}
	if k.Opts.Strace != nil {
		if !c.rewritten {
			c.traceArgs = k.decodeArgs(c.Task, c.Sysno, &c.Args)
		}
		k.trace(c.Task, c.Sysno, c.traceArgs, ret, served)
	}
}

// account applies --inject-fault to a call the sentry answered itself and
// counts the call on the path it took.
func (k *Kernel) account(sysno uintptr, res *Result) {
	if k.Opts.FaultErrno != 0 && sysno == k.Opts.FaultSysno && res.Served && res.Action == platform.Done {
		res.Ret = -int64(k.Opts.FaultErrno)
	}
	if res.Served {
		k.Counters.emulated[sysno].Add(1)
	} else {
		k.Counters.passthrough[sysno].Add(1)
	}
}

// SyscallExit implements platform.Supervisor.SyscallExit: the exit stop of
// a rewritten call.
func (k *Kernel) SyscallExit(tid int32, ret int64) int64 {
	t := k.Task(tid)
	if t == nil {
		return ret
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := &t.call
	if then := c.then; then != nil {
		c.then = nil
		ret = then.Exit(c, ret)
	}
	if !t.next.pending {
		// The call (and its chain) is over: a window its event or
		// exit did not take (a clone or an exec that failed) ends.
		t.endWindows()
	}
	k.complete(c, ret, c.traceServed)
	c.rewritten = false
	return ret
}

// Reissue implements platform.Supervisor.Reissue.
func (k *Kernel) Reissue(tid int32) (uintptr, platform.SyscallArgs, bool) {
	t := k.Task(tid)
	if t == nil {
		return 0, platform.SyscallArgs{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.next.pending {
		return 0, platform.SyscallArgs{}, false
	}
	t.next.pending = false
	// A copy, taken under the lock: the reissued call may never come
	// (a guest's own filter), and the thread's next call, notified, then
	// clears t.next on another thread.
	return t.next.sysno, t.next.args, true
}

// completeInstall serves the install call (platform.SysInstallFD) that a
// stopped call was turned into (Call.InstallFile): the newest pending
// install of the task is carried out, at the lowest free number, and its
// number (or the install's error, after the handler's undo) is the
// result of the guest's own call. A guest that issues the call itself
// gets ENOSYS, as from a kernel without such a call. The task's call in
// flight is left alone: it may be waiting for this call's exit
// (InstallFileThen).
func (k *Kernel) completeInstall(tid int32, id uint64) platform.Result {
	enosys := platform.Result{Action: platform.Done, Ret: -int64(unix.ENOSYS)}
	t := k.Task(tid)
	if t == nil {
		return enosys
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.installs)
	if n == 0 {
		return enosys
	}
	in := t.installs[n-1]
	t.installs[n-1] = pendingInstall{}
	t.installs = t.installs[:n-1]
	t.continued.valid = false
	res := t.install(id, in.file, in.cloexec, in.undo)
	in.file.DecRef()
	if k.Opts.Strace != nil && !in.inRewrite {
		k.trace(t, in.sysno, in.traceArgs, res.Ret, true)
	}
	return res.Result
}

// unknownNotified answers a notified call of a thread the sentry never saw
// created (one that escaped tracing, CLONE_UNTRACED say): its calls would
// reach the host unseen, so it never gets a pass. It is killed, and its
// call fails with ENOSYS, as SECCOMP_RET_TRACE fails a call nobody traces.
// The kill goes through a pidfd taken while the call still waits
// (Injector.Valid), so that the id cannot name another process by then.
func (k *Kernel) unknownNotified(tid int32, id uint64) platform.Result {
	pidfd, err := unix.PidfdOpen(int(tid), unix.PIDFD_THREAD)
	if err == unix.EINVAL {
		// Before Linux 6.9 (no PIDFD_THREAD): a process's leader.
		pidfd, err = unix.PidfdOpen(int(tid), 0)
	}
	if err == nil {
		if inj := k.injector(); inj == nil || inj.Valid(id) {
			unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		}
		unix.Close(pidfd)
	}
	return platform.Result{Action: platform.Done, Ret: -int64(unix.ENOSYS)}
}

// Interrupted implements platform.Supervisor.Interrupted.
func (k *Kernel) Interrupted(tid int32, sysno uintptr, args *platform.SyscallArgs, ip uintptr) bool {
	if sysno == platform.SysInstallFD {
		// Never run by the host: only the sentry completes it.
		return true
	}
	if !k.Opts.Notifying || sysno >= MaxSyscall || !k.table[sysno].Notify {
		// A stopped call the sentry let the host run: the host's
		// interruption is the guest's to see.
		return false
	}
	switch sysno {
	case unix.SYS_OPEN, unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_CREAT:
		// The one family the sentry passes through that blocks on the
		// host interruptibly, and may wait there for ever: an open of a
		// host FIFO or device.
	default:
		// The others do not come back from the host with ERESTARTSYS
		// (close turns it into EINTR itself; the stat family, access,
		// readlink, getdents64, fstatfs and the notified fcntl commands
		// do not sleep interruptibly on local file systems), or only
		// from a wait that ends (a FUSE file's xattrs; the ioctls that
		// wait on a terminal or a console stop instead: ioctlBlocking in
		// syscalls): restarted after the handler, they are what Linux
		// does had the signal come just before the call. That is also
		// what makes a call withdrawn before the sentry received it
		// restart, and a record of the task's previous, identical call
		// cannot tell the two apart.
		return true
	}
	t := k.Task(tid)
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.continued
	// The sentry let the host run this very call (same number, arguments
	// and place, and no other call of the task since): the host was
	// interrupted, as it would be natively.
	if c.valid && c.sysno == sysno && c.args == *args && c.ip == ip {
		return false
	}
	// Withdrawn before the sentry received it. An open that would wait
	// for a FIFO's other end is interrupted, as Linux's wait_for_partner
	// would be by a signal that comes once the thread is in the call
	// (EINTR, or a restart by the handler's SA_RESTART); restarted after
	// the handler regardless, it would wait with the signal already
	// taken, for ever if the signal was the guest's only way out (an
	// alarm cutting a FIFO's open short). Any other open restarts: it
	// completes without waiting, as if the signal had come just before.
	if waits := k.table[sysno].Waits; waits != nil && !t.call.rewritten {
		// (A call a stopped one was rewritten into is the sentry's
		// own, whose exit its Continuation still awaits: it restarts
		// as it was.)
		wc := t.begin(sysno, args)
		return !waits(wc, &wc.Args)
	}
	return true
}
