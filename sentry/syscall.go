package sentry

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
)

// SyscallFn serves one trapped call; args are c.Args.
type SyscallFn func(c *Call, args *platform.SyscallArgs) Result

// ArgKind says how --strace decodes an argument.
type ArgKind uint8

// Argument kinds for --strace.
const (
	ArgNone ArgKind = iota
	ArgInt
	ArgHex
	ArgFD
	ArgPath
	ArgOpenFlags
	ArgAtFlags
	ArgMode
	ArgPtr
	ArgCloneFlags
	ArgFcntlCmd
)

// HostFn serves a notified call on the host for the guest, with hostPath
// for the guest's path (the sentry resolved it through one of its mounts
// back to the host).
type HostFn func(c *Call, args *platform.SyscallArgs, hostPath string) Result

// Syscall is one entry of the table: its name, handler and how to print
// its arguments.
type Syscall struct {
	Name string
	Fn   SyscallFn
	Args []ArgKind
	// Notify marks a call a notifying platform may report without a stop:
	// Fn never rewrites it, and Host serves its redirected paths.
	Notify bool
	Host   HostFn
	// Restartable marks a call that, served for a thread that has left
	// it meanwhile, changes nothing the call made again would not: the
	// stat family, access and readlink. Once received, a notified call
	// is left only by the thread's death (the filter waits killably);
	// the answer then reaches nobody, so the path such a call reads
	// needs no check that the call still waits (Call.ReadPath: one
	// system call). A call that creates, removes or opens is checked:
	// it must not act for a thread that is gone.
	Restartable bool
	// Waits, if set, reports whether the call, served now, would wait
	// for another process interruptibly (an open of one of the sentry's
	// FIFOs with its other end not yet there: Linux's wait_for_partner).
	// A signal that withdrew such a call before the sentry received it
	// came while the thread was in the call, and ends the wait as
	// Linux's would (Kernel.Interrupted). It must change nothing: it
	// runs at the thread's signal stop, and the call may never be made
	// again.
	Waits func(c *Call, args *platform.SyscallArgs) bool
	// TrapArg and PassValues, if PassValues is set, narrow the trap by
	// the call's argument TrapArg (as an int): for the values listed the
	// call runs on the host untrapped (the commands the handler would pass
	// through and Linux's kernel, checked command by command, gives no
	// meaning the sentry must see); every other value is trapped, so one a
	// newer kernel adds reaches the handler (platform.ArgFilter).
	//
	// StopValues are the values of TrapArg for which a Notify call still
	// stops the guest: those its handler may rewrite, and those that may
	// wait on the host, whose interruption there is then the guest's to
	// see (Kernel.Interrupted). The call's other values are notified.
	TrapArg    int
	PassValues []uint32
	StopValues []uint32
}

// SyscallTable maps syscall numbers to entries; the trap list is derived
// from it (Traps), so a handler and its trap cannot drift apart.
type SyscallTable [MaxSyscall]Syscall

// Split divides the trapped numbers into those that must stop the guest
// and those a notifying platform may serve without a stop.
func (tb *SyscallTable) Split() (stop, notify []uintptr) {
	for nr := range tb {
		switch {
		case tb[nr].Fn == nil:
		case tb[nr].Notify:
			notify = append(notify, uintptr(nr))
		default:
			stop = append(stop, uintptr(nr))
		}
	}
	return stop, notify
}

// Traps lists the numbers that have a handler.
func (tb *SyscallTable) Traps() []uintptr {
	var nrs []uintptr
	for nr := range tb {
		if tb[nr].Fn != nil {
			nrs = append(nrs, uintptr(nr))
		}
	}
	return nrs
}

// ArgFilters lists the narrowed traps (PassValues) and the notified
// calls that stop for some values (StopValues) for the filter.
func (tb *SyscallTable) ArgFilters() []platform.ArgFilter {
	var fs []platform.ArgFilter
	for nr := range tb {
		if s := &tb[nr]; s.Fn != nil && (s.PassValues != nil || s.StopValues != nil) {
			fs = append(fs, platform.ArgFilter{Nr: uintptr(nr), Arg: s.TrapArg, Pass: s.PassValues, Stop: s.StopValues})
		}
	}
	return fs
}

// Result is a handler's decision: the platform's action plus whether the
// sentry served the call (a close of a virtual fd is served by the sentry
// even though the host also runs it, to drop the placeholder).
type Result struct {
	platform.Result
	Served bool
}

// Pass lets the host run the call as the guest issued it.
func Pass() Result { return Result{} }

// PassServed lets the host run the call, which the sentry has served too.
func PassServed() Result { return Result{Served: true} }

// Ret completes the call with value v.
func Ret(v int64) Result {
	return Result{Result: platform.Result{Action: platform.Done, Ret: v}, Served: true}
}

// Err completes the call with errno e.
func Err(e unix.Errno) Result {
	return Result{Result: platform.Result{Action: platform.Done, Ret: -int64(e)}, Served: true}
}

// ErrOf completes the call with err, which must be a unix.Errno (anything
// else is a sentry bug, reported to the guest as EIO rather than a crash).
func ErrOf(err error) Result {
	if e, ok := err.(unix.Errno); ok {
		return Err(e)
	}
	return Err(unix.EIO)
}
