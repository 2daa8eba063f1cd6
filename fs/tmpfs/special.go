package tmpfs

import (
	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

var (
	_ vfs.Mknoder     = (*dentry)(nil)
	_ vfs.DeviceInode = (*inode)(nil)
)

// Mknod implements vfs.Mknoder for FIFOs, sockets and device nodes
// (vfs_mknod, then shmem_mknod): the inode only names the special file;
// what opening it means is the caller's. mode carries the file type and
// the permission bits (umask already applied). A device node needs
// CAP_MKNOD (capable(): in the host's user namespace; it is also in the
// set a setfsuid away from 0 drops), checked after the directory's
// permission as vfs_mknod does, except for a whiteout (character device
// 0:0), which anyone may make.
func (d *dentry) Mknod(name string, mode uint32, rdev uint64, c *vfs.Credentials) (vfs.Dentry, error) {
	if !d.inode.isDir() {
		return nil, unix.ENOTDIR
	}
	ftype := mode & unix.S_IFMT
	needCap := false
	switch ftype {
	case unix.S_IFIFO, unix.S_IFSOCK:
		rdev = 0
	case unix.S_IFCHR, unix.S_IFBLK:
		needCap = !(ftype == unix.S_IFCHR && rdev == 0) && !c.Capable(vfs.CapMknod)
	default:
		return nil, unix.EPERM
	}
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	if needCap {
		if err := d.mayCreateLocked(name, c); err != nil {
			return nil, err
		}
		return nil, unix.EPERM
	}
	child, err := d.createLocked(name, ftype, mode&07777, c)
	if err != nil {
		return nil, err
	}
	child.inode.mu.Lock()
	child.inode.rdev = rdev
	child.inode.mu.Unlock()
	return child, nil
}

// Rdev implements vfs.DeviceInode.
func (i *inode) Rdev() uint64 {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.rdev
}
