package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// Generic ioctl requests (asm-generic/ioctls.h), FS_IOC_GETFLAGS and
// FS_IOC_SETFLAGS.
const (
	fionread = 0x541B
	fionbio  = 0x5421
	fionclex = 0x5450
	fioclex  = 0x5451
	fioasync = 0x5452

	fsIocGetflags = 0x80086601
	fsIocSetflags = 0x40086602
)

// Ioctl is ioctl(fd, request, arg) on a virtual fd, as do_vfs_ioctl and
// tmpfs answer for a regular file or directory: FIOCLEX/FIONCLEX (on the
// host too: exec obeys the placeholder's flag), FIONBIO and FIOASYNC
// (the description's status flags), FIONREAD (bytes from the position to
// the end; ENOTTY for a directory), FS_IOC_GETFLAGS (no flags set), and
// ENOTTY for terminal and unknown requests.
func Ioctl(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	fd, req, arg := int32(args[0]), uint32(args[1]), args[2]
	f, res, ok := fileFor(t, fd)
	if !ok {
		return res
	}
	defer f.DecRef()
	switch req {
	case fioclex, fionclex:
		s := t.Scratch()
		*s = sentry.Scratch{FD: fd}
		if req == fioclex {
			s.Aux = unix.FD_CLOEXEC
		}
		return sentry.Observe(t, unix.SYS_IOCTL, args, setfdExit, true)
	case fionbio, fioasync:
		var b [4]byte
		if t.CopyIn(arg, b[:]) != nil {
			return sentry.Err(unix.EFAULT)
		}
		bit := uint32(unix.O_NONBLOCK)
		if req == fioasync {
			bit = unix.O_ASYNC
		}
		flags := f.Flags()
		if binary.LittleEndian.Uint32(b[:]) != 0 {
			flags |= bit
		} else {
			flags &^= bit
		}
		f.SetFlags(flags)
		return sentry.Ret(0)
	case fionread:
		if f.Inode.Mode()&unix.S_IFMT != unix.S_IFREG {
			return sentry.Err(unix.ENOTTY)
		}
		f.Lock()
		n := f.Inode.Size() - f.Offset()
		f.Unlock()
		if n < 0 {
			n = 0
		}
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(n))
		if t.CopyOut(arg, b[:]) != nil {
			return sentry.Err(unix.EFAULT)
		}
		return sentry.Ret(0)
	case fsIocGetflags:
		var b [4]byte
		if t.CopyOut(arg, b[:]) != nil {
			return sentry.Err(unix.EFAULT)
		}
		return sentry.Ret(0)
	case fsIocSetflags:
		return sentry.Err(errUnserved)
	}
	return sentry.Err(unix.ENOTTY)
}
