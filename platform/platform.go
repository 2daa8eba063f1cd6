// Package platform is the boundary between the sentry and the mechanism that
// stops a guest at a system call (ptrace, seccomp user notification). A
// platform runs the guest, reports each trapped call to a Supervisor and
// carries out what the Supervisor decides. It imports nothing of the
// sentry's: the sentry implements Supervisor.
package platform

// SyscallArgs are the six argument registers of a system call (x86-64 rdi,
// rsi, rdx, r10, r8, r9).
type SyscallArgs [6]uintptr

// ArgFilter narrows the trap of call Nr by its argument Arg, taken as the
// 32-bit int the kernel reads (the register's upper half is ignored, as
// the kernel ignores it): for the values in Pass the call runs on the host
// untrapped; every other value is trapped. A list of what may pass, not of
// what is trapped, fails closed: a value a newer kernel gives a meaning
// (a new fcntl command) reaches the sentry instead of acting on a
// placeholder behind its back. A guest that sets the upper half is
// trapped or passed as the kernel will read the call.
//
// Stop lists the values of Arg for which a notified call stops the guest
// instead (its handler may rewrite the call, which a notification cannot
// carry, or the call may wait on the host); a call that always stops
// ignores it.
type ArgFilter struct {
	Nr   uintptr
	Arg  int
	Pass []uint32
	Stop []uint32
}

// Action says what the platform does with a trapped system call.
type Action uint8

const (
	// Passthrough lets the host kernel run the call unchanged.
	Passthrough Action = iota
	// Done skips the host call: the guest sees Result.Ret.
	Done
	// Rewrite makes the host run Result.Sysno with Result.Args instead
	// (possibly the same call, to observe its result); the Supervisor's
	// SyscallExit sees the host's return value and may replace it.
	Rewrite
	// Responded says the call was already answered while it was served
	// (an Injector.InstallFD that completed it): the platform does
	// nothing more.
	Responded
	// Install makes the host issue SysInstallFD instead, with the same
	// argument registers, and does not stop at its exit: the filter
	// reports that call to the listener, and the Supervisor's
	// SyscallNotify completes it with Injector.InstallFD, whose number is
	// what the guest's own call returns. It is how a stopping platform
	// gives the guest a descriptor the sentry opened (the guest's
	// registers stay its own, so no exit stop has to restore them). Only
	// valid from Syscall.
	Install
)

// SysInstallFD is the sentry's install call: a syscall number no x86-64
// kernel has (Linux's numbers end below 512, where x32's begin), which the
// sandbox's filter reports to the sentry's notification listener. The
// tracer rewrites a trapped call into it (Install). A guest that issues it
// itself is answered ENOSYS, as a kernel answers an unknown number.
const SysInstallFD = 0x5e47

// Restart errnos (include/linux/errno.h): a call interrupted by a signal
// returns one of these to the signal code, which restarts the call or
// turns it into EINTR; user space never sees them.
const (
	ERESTARTSYS           = 512
	ERESTARTNOINTR        = 513
	ERESTARTNOHAND        = 514
	ERESTART_RESTARTBLOCK = 516
)

// IsRestart reports whether ret (a syscall's return value) is a restart
// errno.
func IsRestart(ret int64) bool {
	switch -ret {
	case ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND, ERESTART_RESTARTBLOCK:
		return true
	}
	return false
}

// Result is a Supervisor's decision for one trapped call.
type Result struct {
	Action Action
	// Ret is the return value for Done: a value, or -errno.
	Ret int64
	// Sysno and Args are the call the host runs for Rewrite.
	Sysno uintptr
	Args  SyscallArgs
}

// Event kinds for Supervisor.NewTask, as the ptrace events that report them.
const (
	NewTaskClone = iota
	NewTaskFork
	NewTaskVfork
	// NewTaskOrphan is a process whose creator died in the clone that
	// made it, before any event named it: served as a forked child of
	// the creator, whose state the platform kept for it.
	NewTaskOrphan
)

// Supervisor serves the trapped calls of a guest. A platform calls it for
// each guest thread in order: a thread's calls never overlap, different
// threads' calls may (on a concurrent platform).
type Supervisor interface {
	// Syscall is called when thread tid enters trapped call sysno; sp is
	// its stack pointer, below whose red zone the sentry may write data
	// a rewritten call needs (a path the host must see instead).
	Syscall(tid int32, sysno uintptr, args *SyscallArgs, sp uintptr) Result
	// SyscallExit is called when a call rewritten by Syscall returns ret
	// (a value or -errno); the guest sees the value it returns.
	SyscallExit(tid int32, ret int64) int64
	// Reissue is asked after SyscallExit: when it returns ok, the guest
	// does not return from the call but issues sysno with args at once
	// (its syscall instruction runs again), as the second step of a call
	// the sentry serves in two (exec of a sentry file: a placeholder, then
	// execveat on it). The guest's argument registers are then args.
	Reissue(tid int32) (sysno uintptr, args SyscallArgs, ok bool)
	// NewTask is called when thread parent has created thread or process
	// child (kind is NewTaskClone, NewTaskFork, NewTaskVfork or
	// NewTaskOrphan), before child runs any guest code.
	NewTask(parent, child int32, kind int)
	// Orphaned is called when the platform kills new process tid, which
	// ran no guest code: its creator died in the clone that made it, and
	// the creator's state, its table's source, is gone.
	Orphaned(tid int32)
	// Exec is called after a successful execve in thread tid; formerTID is
	// the thread that called it (it differs from tid when a non-leader
	// thread exec'd and took over the leader's id).
	Exec(tid, formerTID int32)
	// Exit is called when thread tid has exited.
	Exit(tid int32)
	// Interrupted is asked at a signal-delivery stop of thread tid whose
	// call sysno (args, at instruction pointer ip) was interrupted with
	// ERESTARTSYS: true if that call never reached the sentry (a
	// notification the signal withdrew before the sentry received it).
	// Such a call is restarted whatever the handler's SA_RESTART says
	// (ERESTARTNOINTR): it had no effect yet, and the file calls the
	// sentry serves are not interruptible on Linux, so restarting it is
	// what the guest would see had the signal come just before the call.
	Interrupted(tid int32, sysno uintptr, args *SyscallArgs, ip uintptr) bool
}

// NotifySupervisor is a Supervisor that can also serve calls a platform
// reports without stopping the guest in a debugger stop (seccomp user
// notification). Every platform runs one: the install call (SysInstallFD)
// is always notified. Such a call's registers cannot be changed: its handler
// must finish it with Passthrough or Done, and when it needs the guest's
// descriptor table changed it asks the platform's Injector.
type NotifySupervisor interface {
	Supervisor
	// SyscallNotify is Syscall for a notified call; id names the
	// notification for the Injector and ip is the guest's instruction
	// pointer. Rewrite and Install are not valid answers. The install call
	// (SysInstallFD) arrives here too.
	SyscallNotify(tid int32, sysno uintptr, args *SyscallArgs, id uint64, ip uintptr) Result
	// SetInjector gives the supervisor the platform's Injector before the
	// first notified call.
	SetInjector(Injector)
	// Threads is how many guest threads exist: with one, no two calls can
	// wait at once.
	Threads() int
}

// Injector changes a guest's descriptor table from outside, for a call
// reported by notification (seccomp's SECCOMP_IOCTL_NOTIF_ADDFD).
type Injector interface {
	// InstallFD puts a copy of the sentry's fd into the table of the
	// guest that made call id, at the lowest free number, and completes
	// the call with that number (SECCOMP_ADDFD_FLAG_SEND: the guest
	// resumes at once, so the caller must have done everything else
	// first). It returns the guest's number. The calling thread must
	// block signals (the serving threads and the tracer's do:
	// ServingThread, TracerThread): a signal interrupting ADDFD's wait
	// withdraws the install of a call already marked answered.
	InstallFD(id uint64, fd int, cloexec bool) (int32, error)
	// InstallFDAt is InstallFD at number at (SECCOMP_ADDFD_FLAG_SETFD:
	// the kernel's replace_fd, dup2's own path, which closes what at
	// held), completing the call with at. If it fails the call is still
	// waiting for its answer.
	InstallFDAt(id uint64, fd int, at int32, cloexec bool) error
	// Blocking says the calling handler is about to wait for something
	// the guest may do (a FIFO's other end): other calls must be served
	// meanwhile.
	Blocking()
	// Valid reports whether call id is still waiting for its answer: the
	// guest thread has not died or been interrupted meanwhile, so what
	// the sentry read of its memory belongs to that call.
	Valid(id uint64) bool
	// Respond answers call id with ret (a value or -errno), from any
	// thread, for a call whose SyscallNotify returned Responded without
	// answering (the answer comes later).
	Respond(id uint64, ret int64)
}
