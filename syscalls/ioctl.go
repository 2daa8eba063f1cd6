package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// FIOCLEX and FIONCLEX (asm-generic/ioctls.h).
const (
	fionclex = 0x5450
	fioclex  = 0x5451
)

// Ioctl is ioctl(fd, request, arg) on a virtual fd. The placeholder is the
// file's own open description on the host (its backing, or its backing
// directory: fs/tmpfs/storage.go), so the host answers every request as
// tmpfs does (FIONREAD from the shared offset, FIONBIO and FIOASYNC on the
// shared status flags, FS_IOC_GETFLAGS, ENOTTY for terminal requests); the
// sentry only follows FIOCLEX and FIONCLEX, the descriptor flag exec obeys.
func Ioctl(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	fd, req := int32(args[0]), uint32(args[1])
	if !c.FDTable().Has(fd) {
		return sentry.Pass()
	}
	switch req {
	case fioclex, fionclex:
		return sentry.Observe(c, unix.SYS_IOCTL, args, &setfdExit{fd: fd, cloexec: req == fioclex}, true)
	}
	return sentry.PassServed()
}
