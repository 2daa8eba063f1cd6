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
func Close(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	f := t.FDTable().Remove(int32(args[0]))
	if f == nil {
		return sentry.Pass()
	}
	release(t, f)
	return sentry.PassServed()
}

// release drops a table's reference on f by the configured close path.
func release(t *sentry.Task, f *vfs.FileDescription) {
	k := t.Kernel()
	if k.Opts.ClosePath == sentry.CloseDeferred {
		k.Counters.CloseDeferred.Add(1)
		t.QueueRelease(f)
		return
	}
	k.Counters.CloseSync.Add(1)
	f.DecRef()
}

// CloseRange is close_range(first, last, flags). The host validates the
// arguments and closes (or marks) the placeholders; the table follows at
// the call's exit, only if it succeeded.
func CloseRange(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	if t.FDTable().Len() == 0 {
		return sentry.Pass()
	}
	s := t.Scratch()
	*s = sentry.Scratch{Aux: uint64(uint32(args[0])), FD: int32(uint32(args[1])), Flags: uint32(args[2])}
	s.Mode = uint32(args[1])
	return sentry.Observe(t, unix.SYS_CLOSE_RANGE, args, closeRangeExit, true)
}

func closeRangeExit(t *sentry.Task, ret int64) int64 {
	if ret != 0 {
		return ret
	}
	s := t.Scratch()
	first, last, flags := uint32(s.Aux), s.Mode, s.Flags
	in := func(fd int32) bool { return uint32(fd) >= first && uint32(fd) <= last }
	if flags&unix.CLOSE_RANGE_UNSHARE != 0 {
		t.UnshareFDTable()
	}
	if flags&unix.CLOSE_RANGE_CLOEXEC != 0 {
		t.FDTable().SetCloseOnExecIf(in)
		return ret
	}
	for _, f := range t.FDTable().RemoveIf(func(fd int32, _ bool) bool { return in(fd) }) {
		release(t, f)
	}
	return ret
}
