package platform

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The sentry's serving threads (the unotify servers') are set up by
// ServingThread, the tracer's by TracerThread, once their goroutine is
// locked to its OS thread;
// the settings die with the thread, which a locked goroutine that returns
// takes with it.

// syncSignals are the signals a fault raises (SIGILL, SIGTRAP, SIGBUS,
// SIGFPE, SIGSEGV): blocking them would make the kernel kill the sentry at
// a fault instead of letting Go turn it into a panic (force_sig_fault
// unblocks them anyway).
const syncSignals = 1<<(unix.SIGILL-1) | 1<<(unix.SIGTRAP-1) | 1<<(unix.SIGBUS-1) |
	1<<(unix.SIGFPE-1) | 1<<(unix.SIGSEGV-1)

// ServingThread prepares the calling OS thread (its goroutine locked to it
// with runtime.LockOSThread, and never unlocked) to serve guest calls:
//
//   - Every signal but a fault's is blocked. A signal to the thread (the
//     Go runtime's preemption, SIGURG) interrupts the wait of
//     SECCOMP_IOCTL_NOTIF_ADDFD, and the kernel then withdraws the
//     install though the call is already marked answered: the guest's
//     open would return 0. Blocked once here, the install needs no
//     rt_sigprocmask pair around each ADDFD (two system calls per open:
//     open1 +6% on unotify). Process signals go to the sentry's other
//     threads; a locked goroutine is still preempted at its system calls.
//   - Its policy is SCHED_BATCH: the thread does not preempt the guest
//     thread that woke it. When ADDFD completes, the guest thread has
//     just installed its descriptor and is about to make its next call;
//     a serving thread woken with the normal policy preempted it only to
//     go back to waiting for that call, a context switch per open
//     (open1 on unotify went from 5.3 to 4.1 switches per open, +10%
//     ops/s).
//
// A process the thread forked would inherit both (SCHED_RESET_ON_FORK
// resets only real-time policies and negative nice values): such a thread
// must fork nothing the guest runs as. The Go runtime itself never clones
// a locked thread (newm hands that to its template thread).
//
// Errors are ignored: rt_sigprocmask cannot fail with these arguments, and
// without SCHED_BATCH the thread is only slower.
func ServingThread() {
	BlockSignals()
	BatchThread()
}

// BatchThread makes the calling OS thread (locked, never unlocked)
// SCHED_BATCH (see ServingThread).
func BatchThread() {
	var param struct{ priority int32 }
	unix.RawSyscall(unix.SYS_SCHED_SETSCHEDULER, 0, unix.SCHED_BATCH, uintptr(unsafe.Pointer(&param)))
}

// TracerThread prepares the tracer's thread (locked, never unlocked) once
// it has forked the guest's init stage: SCHED_BATCH, and every signal
// blocked but a fault's and SIGCHLD, so that it may install descriptors
// (the install calls it serves itself) with no rt_sigprocmask pair around
// each (ptrace open1 +13%). SIGCHLD stays open: a guest thread's every
// stop sends one to the tracer, and the sentry leaves it at SIG_DFL, so
// the kernel drops it as it is made; blocked here, it was delivered to
// another of the sentry's threads instead, waking it at every stop
// (ptrace fstat -15%).
func TracerThread() {
	BatchThread()
	set := unix.Sigset_t{Val: [16]uint64{^uint64(syncSignals | 1<<(unix.SIGCHLD-1))}}
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&set)), 0, 8, 0, 0)
}

// BlockSignals blocks every signal but a fault's on the calling OS thread,
// whose goroutine must be locked to it and never unlocked: what a thread
// that calls Injector.InstallFD needs (see ServingThread).
func BlockSignals() {
	set := unix.Sigset_t{Val: [16]uint64{^uint64(syncSignals)}}
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&set)), 0, 8, 0, 0)
}
