package syscalls

import (
	"slices"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// fileIoctls are the requests Linux answers on a tmpfs regular file or
// directory (do_vfs_ioctl and file_ioctl in fs/ioctl.c, 6.18; tmpfs has no
// ioctl of its own): any other is ENOTTY there. Checked request by request
// against the running kernel (TestIoctlRequests; a wider scan, 11.9M
// requests of every type and number, on /dev/shm, found the same).
var fileIoctls = []uint32{
	0x541B, 0x5421, 0x5450, 0x5451, 0x5452, 0x5460, // FIONREAD, FIONBIO, FIONCLEX, FIOCLEX, FIOASYNC, FIOQSIZE
	0x1, 0x2, // FIBMAP, FIGETBSZ
	0xC0045877, 0xC0045878, // FIFREEZE, FITHAW
	0xC020660B,                         // FS_IOC_FIEMAP
	0x40049409, 0x4020940D, 0xC0189436, // FICLONE, FICLONERANGE, FIDEDUPERANGE
	0x80086601, 0x40086602, 0x801C581F, 0x401C5820, // FS_IOC_GETFLAGS, _SETFLAGS, _FSGETXATTR, _FSSETXATTR
	0x80111500,                                                 // FS_IOC_GETFSUUID
	0x40305828, 0x40305829, 0x4030582A, 0x4030582B, 0x40305839, // FS_IOC_RESVSP, UNRESVSP, RESVSP64, UNRESVSP64, ZERO_RANGE
}

// Ioctl is ioctl(fd, request, arg) on a virtual fd. The placeholder is the
// file's own open description on the host (its backing, or its backing
// directory: fs/tmpfs/storage.go), so the host answers the requests tmpfs
// knows as tmpfs does (FIONREAD from the shared offset, FIONBIO and
// FIOASYNC on the shared status flags, FIOCLEX and FIONCLEX on the
// placeholder's descriptor flag, which exec obeys and the sentry's sweep
// then asks the kernel about); the sentry serves the inode flags, which
// are its own (flags.go). Any other request on a regular file or a
// directory is ENOTTY, as tmpfs answers it, rather than the host's answer
// on the store's file (fail closed: a request a newer kernel gives every
// file would reach the store behind the sentry's back). A special file's
// placeholder is the host's node (a device, a FIFO, a socket): its driver
// answers, terminal requests included.
func Ioctl(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	fd, req := int32(args[0]), uint32(args[1])
	f := c.FDTable().Get(fd)
	if f == nil {
		return sentry.Pass()
	}
	defer f.DecRef()
	if f.Flags()&unix.O_PATH != 0 {
		// ioctl's fdget takes no O_PATH file; the placeholder (the
		// store's anonymous file, open for ioctls only) would answer.
		return sentry.Err(unix.EBADF)
	}
	if res, ok := fileattrIoctl(c, f, req, args[2]); ok {
		return res
	}
	if t := f.Inode.Mode() & unix.S_IFMT; (t == unix.S_IFREG || t == unix.S_IFDIR) && !slices.Contains(fileIoctls, req) {
		return sentry.Err(unix.ENOTTY)
	}
	return sentry.PassServed()
}
