package tmpfs

import (
	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

var _ vfs.Mknoder = (*dentry)(nil)

// Mknod implements vfs.Mknoder for FIFOs and sockets (shmem_mknod): the
// inode only names the special file; what opening it means is the
// caller's. mode carries the file type and the permission bits (umask
// already applied).
func (d *dentry) Mknod(name string, mode uint32, c *vfs.Credentials) (vfs.Dentry, error) {
	if !d.inode.isDir() {
		return nil, unix.ENOTDIR
	}
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO, unix.S_IFSOCK:
	default:
		return nil, unix.EPERM
	}
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	child, err := d.createLocked(name, mode&unix.S_IFMT, mode&07777, c)
	if err != nil {
		return nil, err
	}
	return child, nil
}
