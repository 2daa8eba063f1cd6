package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Close is close(fd). A virtual fd leaves the table here and its
// description is released by the kernel's close path: at once
// (__fput_sync, the seeds' patch: close.sync) or as task work run when the
// task returns to the guest (stock fput: close.deferred). The host then
// closes the placeholder, which cannot fail, so the guest sees 0 and the
// slot is free for the next open.
func Close(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	fd := int32(args[0])
	// In a shared table the kernel's close may come after another
	// thread's dup2 onto fd (sentry/fd_follow.go, closes in flight).
	f, observe := c.CloseFD(fd)
	if f != nil {
		release(c, f)
	}
	switch {
	case observe && !c.Notified():
		return sentry.Observe(c, unix.SYS_CLOSE, args, closeExit{fd: fd}, f != nil)
	case f == nil:
		return sentry.Pass()
	}
	return sentry.PassServed()
}

// closeExit follows a close that a stopped dup2 or dup3 onto the same
// number raced (Call.CloseExit).
type closeExit struct{ fd int32 }

func (e closeExit) Exit(c *sentry.Call, ret int64) int64 {
	c.CloseExit(e.fd)
	return ret
}

// release drops a table's reference on f by the configured close path.
func release(c *sentry.Call, f *vfs.FileDescription) {
	k := c.Kernel()
	if k.Opts.ClosePath == sentry.CloseDeferred {
		k.Counters.CloseDeferred.Add(1)
		c.QueueRelease(f)
		return
	}
	k.Counters.CloseSync.Add(1)
	f.DecRef()
}

// CloseRange is close_range(first, last, flags). The host validates the
// arguments and closes (or marks) the placeholders; the table follows at
// the call's exit, only if it succeeded.
func CloseRange(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if c.FDTable().Len() == 0 {
		return sentry.Pass()
	}
	if uint32(args[2])&unix.CLOSE_RANGE_UNSHARE != 0 {
		c.BeginTableCopy()
	}
	return sentry.Observe(c, unix.SYS_CLOSE_RANGE, args, &closeRangeExit{first: uint32(args[0]), last: uint32(args[1]), flags: uint32(args[2])}, true)
}

// closeRangeExit follows a close_range that succeeded.
type closeRangeExit struct {
	first, last, flags uint32
}

func (cr *closeRangeExit) Exit(c *sentry.Call, ret int64) int64 {
	if ret != 0 {
		c.DropTableCopy()
		return ret
	}
	first, last := cr.first, cr.last
	in := func(fd int32) bool { return uint32(fd) >= first && uint32(fd) <= last }
	shared := c.FDTable().Shared()
	unshare := cr.flags&unix.CLOSE_RANGE_UNSHARE != 0
	if unshare {
		c.UnshareFDTable()
	}
	if cr.flags&unix.CLOSE_RANGE_CLOEXEC != 0 {
		c.FDTable().SetCloseOnExecIf(in)
		return ret
	}
	// In a shared table another thread may have put a description back
	// in the range since the kernel closed it (a dup2 served or followed
	// before this exit), or, after an unshare, into the old table only:
	// an entry goes when the kernel no longer holds its placeholder
	// there, which kcmp tells. Dropping one the kernel holds would leave
	// the guest a descriptor of the store behind the sentry's back.
	for _, f := range c.FDTable().RemoveIfFile(func(fd int32, f *vfs.FileDescription, _ bool) bool {
		if !shared {
			return in(fd)
		}
		return (in(fd) || unshare) && !c.HoldsPlaceholder(fd, f)
	}) {
		release(c, f)
	}
	return ret
}
