package tmpfs

import (
	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

var _ vfs.Allocator = (*inode)(nil)

// Allocate implements vfs.Allocator: fallocate of the backing, mode 0 or
// FALLOC_FL_KEEP_SIZE, with shmem_fallocate's semantics (all or nothing
// within the size limit, pages past the end kept until a truncate), then
// privileges dropped as for a write.
func (i *inode) Allocate(off, length int64, keepSize bool, c *vfs.Credentials) error {
	mode := uint32(0)
	if keepSize {
		mode = unix.FALLOC_FL_KEEP_SIZE
	}
	return i.fallocate(mode, off, length, c)
}

// PunchHole implements vfs.Allocator: FALLOC_FL_PUNCH_HOLE|KEEP_SIZE on
// the backing (shmem_truncate_range).
func (i *inode) PunchHole(off, length int64, c *vfs.Credentials) error {
	return i.fallocate(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, length, c)
}

func (i *inode) fallocate(mode uint32, off, length int64, c *vfs.Credentials) error {
	if !i.isRegular() {
		return unix.ENODEV
	}
	fd, err := i.openData(unix.O_WRONLY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fallocate(fd, mode, off, length); err != nil {
		return err
	}
	i.removePrivs(c)
	return nil
}
