package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// Ioctl is ioctl(fd, request, arg) on a virtual fd. The placeholder is the
// file's own open description on the host (its backing, or its backing
// directory: fs/tmpfs/storage.go), so the host answers every request as
// tmpfs does (FIONREAD from the shared offset, FIONBIO and FIOASYNC on the
// shared status flags, FIOCLEX and FIONCLEX on the placeholder's
// descriptor flag, which exec obeys and the sentry's sweep then asks the
// kernel about, ENOTTY for terminal requests); the sentry serves the
// inode flags, which are its own (flags.go).
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
	return sentry.PassServed()
}
