package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// lockMand is LOCK_MAND.
const lockMand = 32

// flockRetryNS is how long a blocked flock sleeps before trying again.
const flockRetryNS = 1000000

// Flock is flock(fd, operation) on a virtual fd, with the locks in the
// mount's FlockTable: EINVAL for an unknown operation, EWOULDBLOCK with
// LOCK_NB when another description holds a conflicting lock. Without
// LOCK_NB the guest waits: the call becomes a short nanosleep after which
// the guest issues the flock again, until it gets the lock; a signal that
// interrupts the sleep makes flock return EINTR, as a blocked flock does.
func Flock(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	f, res, ok := fileFor(t, int32(args[0]))
	if !ok {
		return res
	}
	defer f.DecRef()
	op := int(args[1])
	if op&lockMand != 0 {
		// LOCK_MAND is gone: Linux warns once and succeeds.
		return sentry.Ret(0)
	}
	cmd := op &^ unix.LOCK_NB
	if cmd != unix.LOCK_SH && cmd != unix.LOCK_EX && cmd != unix.LOCK_UN {
		return sentry.Err(unix.EINVAL)
	}
	if f.Mount == nil || f.Mount.Flocks == nil {
		return sentry.Err(errUnserved)
	}
	err := f.Mount.Flocks.Flock(f, cmd)
	if err == nil {
		return sentry.Ret(0)
	}
	if err != unix.EWOULDBLOCK || op&unix.LOCK_NB != 0 {
		return sentry.ErrOf(err)
	}
	return waitAndReissue(t, unix.SYS_FLOCK, args)
}

// waitAndReissue makes a call that must block for a lock the sentry
// holds wait: it becomes a short nanosleep after which the guest issues
// sysno with args again; a signal that interrupts the sleep makes the call
// return EINTR, as a blocked lock call does.
func waitAndReissue(t *sentry.Task, sysno uintptr, args *platform.SyscallArgs) sentry.Result {
	var ts [16]byte
	binary.LittleEndian.PutUint64(ts[8:], flockRetryNS)
	addr, err := t.StackBuffer(len(ts), ts[:])
	if err != nil {
		return sentry.ErrOf(err)
	}
	s := t.Scratch()
	*s = sentry.Scratch{Args: *args, Aux: uint64(sysno)}
	return sentry.RewriteTo(t, unix.SYS_NANOSLEEP, platform.SyscallArgs{addr, 0}, waitExit)
}

func waitExit(t *sentry.Task, ret int64) int64 {
	s := t.Scratch()
	sysno, args := uintptr(s.Aux), s.Args
	*s = sentry.Scratch{}
	if ret < 0 {
		return -int64(unix.EINTR)
	}
	t.SetReissue(sysno, args)
	return ret
}
