package sentry

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry/vfs"
)

// Call is one trapped system call: everything the sentry knows of it from
// the platform's report of its entry to the result the guest sees. A call
// ends in one of the platform's actions (platform.Action):
//
//   - pass (Passthrough): the host runs the guest's own call; the sentry
//     may have served it too (a close of a virtual fd drops the entry,
//     the host closes the placeholder);
//   - done (Done): the sentry answered; the host runs nothing;
//   - rewrite (Rewrite): the host runs another call, or the same one with
//     other arguments, and the call's Continuation turns the host's result
//     into the guest's at the syscall-exit stop (stopping platform only);
//   - responded (Responded): a notified call was answered while it was
//     served (a descriptor installed by ADDFD), or will be answered later
//     from another goroutine (OpenFIFO);
//   - install (Install): a stopped call becomes the install call
//     (platform.SysInstallFD), whose notification installs the descriptor
//     the handler made (InstallFile).
//
// A Continuation may also reissue: make the thread issue one more call as
// soon as this one returns (Reissue), whose own exit another Continuation
// sees.
//
// A task has one call in flight at a time (a guest thread is in one system
// call): the Call lives in its Task and is made anew, zeroed, at every
// entry, so that nothing of one call leaks into the next and serving a
// call allocates nothing. Handlers see it embedding the Task for the
// thread's own state (descriptor table, credentials, fs context).
type Call struct {
	*Task

	// Sysno and Args are the call as the guest issued it.
	Sysno uintptr
	Args  platform.SyscallArgs

	// notified says the call is served by notification: no register
	// can change and nothing can be written on the guest's stack; a
	// descriptor it makes is installed by the Injector under notifID.
	notified bool
	notifID  uint64
	// ip is the guest's instruction pointer at a notified call
	// (Kernel.Interrupted compares it).
	ip uintptr

	// sp is the guest's stack pointer at a stopped call; stackUsed is how
	// much below its red zone the call has written (WriteStackString,
	// StackBuffer).
	sp, stackUsed uintptr
	// redirect are path arguments (guest address -> address of the
	// sentry's replacement on the stack) for a stopped call the host runs
	// on a path the sentry resolved; hostPath is that path for a notified
	// one, which the table entry's Host serves instead.
	redirect  [2][2]uintptr
	nredirect int
	hostPath  string

	// then finishes a rewritten call at its exit stop; rewritten says the
	// call is between its rewrite and that stop (a notification of the
	// task meanwhile is the rewritten call, which is the sentry's own).
	then      Continuation
	rewritten bool

	// traceArgs and traceServed hold a rewritten call's decoded arguments
	// until its exit, for --strace.
	traceArgs   string
	traceServed bool

	// waitsOff says the call waits off the serving threads
	// (OpenFIFO), where a signal interrupts it with ERESTARTSYS as
	// the host would (so a signal stop must leave that to the guest's
	// SA_RESTART: Interrupted).
	waitsOff bool

	// nul is the empty string WriteStackString copies out.
	nul [1]byte
}

// Continuation finishes a rewritten call at its syscall-exit stop: Exit
// sees the host's result and returns what the guest's call returns. Each
// family that needs one has its own small type, whose fields are what that
// family carries from entry to exit.
type Continuation interface {
	Exit(c *Call, ret int64) int64
}

// Identity is the Continuation that gives the guest the host's result.
type Identity struct{}

// Exit implements Continuation.
func (Identity) Exit(_ *Call, ret int64) int64 { return ret }

// reissue is a call the sentry makes a thread issue once its current call
// returns (Call.Reissue), as Linux's restart_block makes a thread re-enter
// the kernel: it outlives the call that asked for it.
type reissue struct {
	// pending is set until the platform has taken the call (Reissue).
	pending bool
	sysno   uintptr
	args    platform.SyscallArgs
	// then, when set, sees the reissued call's exit; it stays until that
	// call enters (the platform issues it) and becomes its Continuation.
	then Continuation
}

// isThis reports whether the guest's call sysno with args is the call r
// asked for. Not its number alone: the reissued call may never come (the
// guest's own seccomp filter can fail it without a stop, as it outranks
// the sentry's trap, or a signal handler can jump away before it runs),
// and the guest's next call of that number, with its own arguments, then
// ran on the host unserved, as if it were the sentry's. A reissue that did
// not come is dropped: what it was to finish is left as a consistent
// state (FailAfterClose drops the entry only once the kernel closed it;
// exec's descriptor is unreadable), though the guest keeps a descriptor
// Linux would not have given it.
func (r *reissue) isThis(sysno uintptr, args *platform.SyscallArgs) bool {
	return r.then != nil && sysno == r.sysno && *args == r.args
}

// begin makes t's call in flight a new call of sysno with args.
func (t *Task) begin(sysno uintptr, args *platform.SyscallArgs) *Call {
	c := &t.call
	*c = Call{Task: t, Sysno: sysno, Args: *args}
	return c
}

// Observe lets the host run the call unchanged and gives its result to
// then at the exit.
func Observe(c *Call, sysno uintptr, args *platform.SyscallArgs, then Continuation, served bool) Result {
	c.then = then
	return Result{Result: platform.Result{Action: platform.Rewrite, Sysno: sysno, Args: *args}, Served: served}
}

// ThenAtExit makes a stopped call the handler passes through (Pass, with
// the paths it redirected) run with an exit stop, whose result then sees.
func (c *Call) ThenAtExit(then Continuation) { c.then = then }

// RewriteTo makes the host run sysno with args instead and gives its result
// to then at the exit.
func RewriteTo(c *Call, sysno uintptr, args platform.SyscallArgs, then Continuation) Result {
	c.then = then
	return Result{Result: platform.Result{Action: platform.Rewrite, Sysno: sysno, Args: args}, Served: true}
}

// Reissue makes the guest issue sysno with args as soon as the current
// (rewritten) call returns, instead of returning from it. If then is set,
// it sees that call's result at its exit, and what it returns is what the
// guest's own call returns. With then, sysno must be in the table; if the
// platform serves it by notification, it does not run and then's result
// (given 0) answers it. Call it from a Continuation.
func (c *Call) Reissue(sysno uintptr, args platform.SyscallArgs, then Continuation) {
	c.Task.next = reissue{pending: true, sysno: sysno, args: args, then: then}
}

// Notified reports whether the call is served by notification: it cannot
// be rewritten, and a descriptor it creates is installed with InstallFD.
func (c *Call) Notified() bool { return c.notified }

// ReadPath copies a path argument from the guest (getname): EFAULT,
// ENAMETOOLONG past PATH_MAX. The bytes are valid until the next call.
func (c *Call) ReadPath(addr uintptr) ([]byte, error) {
	t := c.Task
	if t.bufs.path == nil {
		t.bufs.path = make([]byte, 0, 256)
	}
	p, err := platform.ReadString(t.TID, addr, unix.PathMax-1, t.bufs.path)
	if p != nil && cap(p) > cap(t.bufs.path) {
		t.bufs.path = p[:0]
	}
	if err == nil && !c.restartable() && !c.CallValid() {
		// The thread left the call (or died, and its id may name
		// another process now): what was read is not its path. The
		// answer is never delivered. (A restartable call skips the
		// check, one system call: whatever it serves then is answered
		// to nobody, and changes nothing.)
		return nil, unix.EINTR
	}
	return p, err
}

// ReadArg copies an argument the guest points at (a struct, a value), as
// ReadPath does a path: then a notified call that changes something checks
// that the thread still waits, EINTR if not (what was read may not be its
// memory). EFAULT if the memory cannot be read.
func (c *Call) ReadArg(addr uintptr, dst []byte) error {
	if c.CopyIn(addr, dst) != nil {
		return unix.EFAULT
	}
	if !c.restartable() && !c.CallValid() {
		return unix.EINTR
	}
	return nil
}

// restartable reports whether the call's table entry is Restartable.
func (c *Call) restartable() bool {
	return c.Sysno < MaxSyscall && c.k.table[c.Sysno].Restartable
}

// redZone is the x86-64 ABI's red zone below the stack pointer, which a
// leaf function may use without moving the stack pointer.
const redZone = 128

// WriteStackString writes s and a NUL below the guest's stack pointer (past
// the red zone) and returns its address. The guest is stopped in a system
// call, so nothing of its own lives there.
func (c *Call) WriteStackString(s string) (uintptr, error) {
	if c.notified {
		// No register can point at it: RedirectHost records the path
		// for the table's Host instead.
		return 0, unix.EFAULT
	}
	if c.sp == 0 {
		return 0, unix.EFAULT
	}
	addr := (c.sp - redZone - c.stackUsed - uintptr(len(s)) - 1) &^ 15
	var b []byte
	if s == "" {
		b = c.nul[:]
	} else {
		b = make([]byte, len(s)+1)
		copy(b, s)
	}
	if err := c.CopyOut(addr, b); err != nil {
		return 0, err
	}
	c.stackUsed = c.sp - redZone - addr
	return addr, nil
}

// StackBuffer reserves n bytes below the guest's stack pointer (past the
// red zone and what this call already wrote there) and, if data is not
// nil, copies it there. It returns the address. Only memory the guest's
// stack mapping already covers can be used: the kernel does not grow a
// stack for another process's writes.
func (c *Call) StackBuffer(n int, data []byte) (uintptr, error) {
	if c.sp == 0 {
		return 0, unix.EFAULT
	}
	addr := (c.sp - redZone - c.stackUsed - uintptr(n)) &^ 15
	if data != nil {
		if err := c.CopyOut(addr, data); err != nil {
			return 0, err
		}
	} else {
		// Probe that the range is mapped and writable.
		var probe [1]byte
		if c.CopyIn(addr, probe[:]) != nil || c.CopyOut(addr, probe[:]) != nil {
			return 0, unix.EFAULT
		}
	}
	c.stackUsed = c.sp - redZone - addr
	return addr, nil
}

// RedirectPath makes a passed-through call use the string at newAddr
// where the guest passed oldAddr.
func (c *Call) RedirectPath(oldAddr, newAddr uintptr) {
	if c.nredirect < len(c.redirect) {
		c.redirect[c.nredirect] = [2]uintptr{oldAddr, newAddr}
		c.nredirect++
	}
}

// RedirectHost records that a passed-through notified call must act on
// host path p instead of the guest's path: the table entry's Host serves
// it on the host for the guest.
func (c *Call) RedirectHost(p string) {
	c.hostPath = p
	c.nredirect = 1
}

// CallValid reports whether the notified call is still waiting: a guest
// thread that died or was interrupted meanwhile is not answered with what
// the sentry read of memory that may no longer be its own. Always true on
// a stopping platform (the thread cannot leave its stop).
func (c *Call) CallValid() bool {
	inj := c.k.injector()
	if !c.notified || inj == nil {
		return true
	}
	return inj.Valid(c.notifID)
}

// Blocking tells a concurrent platform that the handler is about to wait
// for something the guest may do, so that other calls are served
// meanwhile.
func (c *Call) Blocking() {
	if inj := c.k.injector(); c.notified && inj != nil {
		inj.Blocking()
	}
}

// InstallFD installs a copy of the sentry's descriptor fd in the guest's
// table at the lowest free number and completes the notified call with
// that number (everything else must be done first). The sentry's fd stays
// the caller's to close.
func (c *Call) InstallFD(fd int, cloexec bool) (int32, error) {
	inj := c.k.injector()
	if inj == nil || !c.notified {
		return -1, unix.ENOSYS
	}
	return inj.InstallFD(c.notifID, fd, cloexec)
}

// InstallFile gives the guest a descriptor for f: a copy of f.HostFD, the
// file's placeholder, at the lowest free number, with FD_CLOEXEC if
// cloexec; f is installed in the task's FDTable at that number, and that
// number is the result of the guest's call. On a notified call this
// happens now (the platform's ADDFD); a stopped call becomes the install
// call (platform.Install) and it happens when that call is notified. If
// no number is free (EMFILE), undo runs and the call fails. The caller
// keeps its own reference on f.
func (c *Call) InstallFile(f *vfs.FileDescription, cloexec bool, undo func()) Result {
	if c.notified {
		return c.install(c.notifID, f, cloexec, undo)
	}
	if c.k.injector() == nil {
		if undo != nil {
			undo()
		}
		return Err(unix.ENOSYS)
	}
	c.pushInstall(pendingInstall{file: f, cloexec: cloexec, undo: undo, sysno: c.Sysno})
	return Result{Result: platform.Result{Action: platform.Install}, Served: true}
}

// InstallAt answers notified call c by giving the guest a copy of the
// sentry's descriptor src at number at (Injector.InstallFDAt: dup2's own
// path in the kernel, which closes what at held), with FD_CLOEXEC if
// cloexec; the task's table then maps at to f (nil: a host file, no
// entry). The table is locked throughout, as for InstallFile. src stays
// the caller's.
func (c *Call) InstallAt(src int, at int32, f *vfs.FileDescription, cloexec bool) Result {
	inj := c.k.injector()
	if inj == nil || !c.notified {
		return Err(unix.ENOSYS)
	}
	_, old, err := c.fdt.InstallWith(func() (int32, error) {
		return at, inj.InstallFDAt(c.notifID, src, at, cloexec)
	}, f, cloexec)
	if err != nil {
		return ErrOf(err)
	}
	if old != nil {
		// What at held is closed (do_dup2 -> filp_close).
		old.DecRef()
	}
	return Result{Result: platform.Result{Action: platform.Responded, Ret: int64(at)}, Served: true}
}

// InstallFileThen is InstallFile for a stopped call whose handler goes on
// at the call's exit: the call becomes the install call with an exit stop
// (a Rewrite), and then sees the installed number (or the install's
// error), free to reissue further calls (exec: execveat of the number).
func (c *Call) InstallFileThen(f *vfs.FileDescription, cloexec bool, undo func(), then Continuation) Result {
	if c.notified || c.k.injector() == nil {
		if undo != nil {
			undo()
		}
		return Err(unix.ENOSYS)
	}
	c.pushInstall(pendingInstall{file: f, cloexec: cloexec, undo: undo, sysno: c.Sysno, inRewrite: true})
	return RewriteTo(c, platform.SysInstallFD, platform.SyscallArgs{}, then)
}

// failAfterClose is the Continuation of the close_range FailAfterClose
// reissues: the guest's call fails with ret.
// failAfterClose finishes FailAfterClose at its close_range's exit.
type failAfterClose struct {
	fd   int32
	file *vfs.FileDescription
	ret  int64
}

// Exit drops the entry once the kernel has closed the descriptor, if it
// still holds the file the call installed (in a shared table another
// thread may have put one at the freed number since). Dropped before the
// close, it left the guest a placeholder the table did not know when the
// close never ran (the guest's own seccomp filter can fail it).
func (f failAfterClose) Exit(c *Call, ret int64) int64 {
	if ret == 0 {
		for _, d := range c.fdt.RemoveIfFile(func(fd int32, file *vfs.FileDescription, _ bool) bool {
			return fd == f.fd && file == f.file
		}) {
			d.DecRef()
		}
	}
	return f.ret
}

// FailAfterClose makes the guest's call fail with errno after closing its
// descriptor fd, which the call made and the sentry installed (exec of a
// sentry file: the installed descriptor of its backing, when the execveat
// of it failed): the guest closes it by a reissued close_range(fd, fd, 0),
// which stops on every platform (close itself may be notified, and a
// notified call cannot both run and be seen), and fd then leaves the
// task's table. Call it from a Continuation, and return ret.
func (c *Call) FailAfterClose(fd int32, errno unix.Errno) {
	var file *vfs.FileDescription
	if f := c.fdt.Get(fd); f != nil {
		file = f
		f.DecRef()
	}
	c.Reissue(unix.SYS_CLOSE_RANGE, platform.SyscallArgs{uintptr(fd), uintptr(fd), 0}, failAfterClose{fd: fd, file: file, ret: -int64(errno)})
}

// errnoOf is err as an errno (EIO for anything else).
func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}
