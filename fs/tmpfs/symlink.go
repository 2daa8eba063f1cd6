package tmpfs

import (
	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// shortSymlinkLen is SHORT_SYMLINK_LEN in mm/shmem.c: a target whose
// length with its NUL fits is kept inline in the inode and uses no block;
// a longer one is stored in a page, which counts against the size limit
// and shows as 8 blocks.
const shortSymlinkLen = 128

// Symlink implements vfs.Dentry.Symlink, as shmem_symlink. An empty target
// is ENOENT and one of PATH_MAX bytes or more (with its NUL, more than a
// page) is ENAMETOOLONG, as getname and shmem_symlink report them.
func (d *dentry) Symlink(name, target string, c *vfs.Credentials) (vfs.Dentry, error) {
	if target == "" {
		return nil, unix.ENOENT
	}
	if len(target)+1 > pageSize {
		return nil, unix.ENAMETOOLONG
	}
	if !d.inode.isDir() {
		return nil, unix.ENOTDIR
	}
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	if err := d.mayCreateLocked(name, c); err != nil {
		return nil, err
	}
	if err := d.fs.reserveSlotLocked(); err != nil {
		return nil, err
	}
	long := len(target)+1 > shortSymlinkLen
	if long && !d.fs.reservePage() {
		// shmem_symlink has already taken an inode number when the
		// page allocation fails, so the number is used up.
		d.fs.nextIno++
		d.fs.islots--
		return nil, unix.ENOSPC
	}
	mode, uid, gid := d.newOwner(unix.S_IFLNK, 0777, c)
	now := nowNanos()
	i, err := d.fs.newInodeLocked(mode, uid, gid, now)
	if err != nil {
		d.fs.islots--
		if long {
			d.fs.unreservePages(1)
		}
		return nil, err
	}
	i.target = target
	i.size = int64(len(target))
	i.symPage = long
	i.inheritFlags(d.inode)
	child := &dentry{fs: d.fs, inode: i}
	d.insertLocked(name, child, now)
	return child, nil
}

// Readlink implements vfs.Inode.Readlink. It touches the link's atime by
// the relatime rule, as both readlink(2) (do_readlinkat) and following the
// link in a walk (pick_link) do through touch_atime.
func (i *inode) Readlink() (string, error) {
	if !i.isSymlink() {
		return "", unix.EINVAL
	}
	now := nowNanos()
	i.mu.Lock()
	i.touchAtimeLocked(now)
	i.mu.Unlock()
	// The target is immutable once the inode is published.
	return i.target, nil
}
