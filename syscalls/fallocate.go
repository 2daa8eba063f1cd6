package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Fallocate is fallocate(fd, mode, offset, len), as vfs_fallocate and
// shmem_fallocate: EINVAL for a negative offset or a length <= 0, EBADF
// unless open for writing, ENODEV for a non-regular file, EFBIG past the
// maximum size, and tmpfs's modes only: 0, FALLOC_FL_KEEP_SIZE, and
// FALLOC_FL_PUNCH_HOLE with FALLOC_FL_KEEP_SIZE (EOPNOTSUPP otherwise).
func Fallocate(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	f, res, ok := fileFor(t, int32(args[0]))
	if !ok {
		return res
	}
	defer f.DecRef()
	mode, off, length := uint32(args[1]), int64(args[2]), int64(args[3])
	if off < 0 || length <= 0 {
		return sentry.Err(unix.EINVAL)
	}
	if !f.Writable() {
		return sentry.Err(unix.EBADF)
	}
	if f.Inode.Mode()&unix.S_IFMT == unix.S_IFDIR {
		return sentry.Err(unix.EISDIR)
	}
	if f.Inode.Mode()&unix.S_IFMT != unix.S_IFREG {
		return sentry.Err(unix.ENODEV)
	}
	if off+length < 0 {
		return sentry.Err(unix.EFBIG)
	}
	a, ok := f.Inode.(vfs.Allocator)
	if !ok {
		return sentry.Err(unix.EOPNOTSUPP)
	}
	switch mode {
	case 0:
		return retErr(a.Allocate(off, length, false, t.Creds()))
	case unix.FALLOC_FL_KEEP_SIZE:
		return retErr(a.Allocate(off, length, true, t.Creds()))
	case unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE:
		return retErr(a.PunchHole(off, length, t.Creds()))
	}
	return sentry.Err(unix.EOPNOTSUPP)
}
