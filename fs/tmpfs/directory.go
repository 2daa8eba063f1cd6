package tmpfs

import (
	"strconv"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// attrs returns the inode's mode, uid and gid.
func (i *inode) attrs() (mode, uid, gid uint32) {
	i.mu.Lock()
	mode, uid, gid = i.mode, i.uid, i.gid
	i.mu.Unlock()
	return
}

// mayCreateLocked is may_create: EEXIST if name exists, ENOENT if the
// directory has been removed (IS_DEADDIR), EACCES without write and search
// permission on it. fs.mu must be held.
func (d *dentry) mayCreateLocked(name string, c *vfs.Credentials) error {
	if _, ok := d.inode.dir.entries[name]; ok {
		return unix.EEXIST
	}
	if d.inode.nlink.Load() == 0 {
		return unix.ENOENT
	}
	mode, uid, gid := d.inode.attrs()
	return d.inode.permission(c, vfs.MayWrite|vfs.MayExec, mode, uid, gid)
}

// mayDeleteLocked is may_delete for victim, a child of d: EACCES without
// write and search permission on d, EPERM when d's sticky bit protects the
// victim (check_sticky: only the victim's owner, d's owner or CAP_FOWNER
// over the victim),
// then ENOTDIR or EISDIR when the victim's type is not the expected one.
// fs.mu must be held.
func (d *dentry) mayDeleteLocked(victim *dentry, isDir bool, c *vfs.Credentials) error {
	mode, uid, gid := d.inode.attrs()
	if err := d.inode.permission(c, vfs.MayWrite|vfs.MayExec, mode, uid, gid); err != nil {
		return err
	}
	if d.inode.fsflags.Load()&fsAppendFL != 0 {
		// IS_APPEND(dir): names are only added.
		return unix.EPERM
	}
	if mode&unix.S_ISVTX != 0 && c.UID != uid {
		if _, vuid, vgid := victim.inode.attrs(); vuid != c.UID && !c.CapableWrt(vfs.CapFowner, vuid, vgid) {
			return unix.EPERM
		}
	}
	if victim.inode.isAppendOrImmutable() {
		return unix.EPERM
	}
	if isDir {
		if !victim.inode.isDir() {
			return unix.ENOTDIR
		}
		if victim.parent == nil {
			return unix.EBUSY
		}
	} else if victim.inode.isDir() {
		return unix.EISDIR
	}
	return nil
}

// newOwner is inode_init_owner for a new inode of type ftype with the
// requested permission bits in d: owned by c's fsuid, and by c's fsgid or,
// in a set-group-ID directory, by the directory's group, a new
// subdirectory inheriting S_ISGID. Before that, vfs_prepare_mode has
// already masked mode (mkdir keeps only 01777) and mode_strip_sgid has
// dropped S_ISGID from a group-executable non-directory created in a
// set-group-ID directory whose group the creator is not in (without
// CAP_FSETID over the directory: in_group_or_capable).
func (d *dentry) newOwner(ftype, mode uint32, c *vfs.Credentials) (fullMode, uid, gid uint32) {
	dmode, duid, dgid := d.inode.attrs()
	sgidDir := dmode&unix.S_ISGID != 0
	switch ftype {
	case unix.S_IFDIR:
		mode &= 01777
	case unix.S_IFLNK:
		mode = 0777
	default:
		mode &= 07777
		if sgidDir && mode&(unix.S_ISGID|unix.S_IXGRP) == unix.S_ISGID|unix.S_IXGRP &&
			!c.InGroupOrCapable(dgid, duid, dgid) {
			mode &^= unix.S_ISGID
		}
	}
	uid, gid = c.UID, c.GID
	if sgidDir {
		gid = dgid
		if ftype == unix.S_IFDIR {
			mode |= unix.S_ISGID
		}
	}
	return ftype | mode, uid, gid
}

// createLocked makes a new inode of type ftype named name in d: the checks
// of may_create, an inode slot, then shmem_mknod's bookkeeping. fs.mu must
// be held for writing.
func (d *dentry) createLocked(name string, ftype, mode uint32, c *vfs.Credentials) (*dentry, error) {
	if err := d.mayCreateLocked(name, c); err != nil {
		return nil, err
	}
	if ftype == unix.S_IFDIR && d.inode.nlink.Load() >= maxLinks {
		return nil, unix.EMLINK
	}
	if err := d.fs.reserveSlotLocked(); err != nil {
		return nil, err
	}
	fullMode, uid, gid := d.newOwner(ftype, mode, c)
	now := nowNanos()
	i, err := d.fs.newInodeLocked(fullMode, uid, gid, now)
	if err != nil {
		d.fs.islots--
		return nil, err
	}
	i.inheritFlags(d.inode)
	child := &dentry{fs: d.fs, inode: i}
	d.insertLocked(name, child, now)
	if ftype == unix.S_IFDIR {
		d.inode.nlink.Add(1) // the child's ".." (shmem_mkdir: inc_nlink)
	}
	return child, nil
}

// Create implements vfs.Dentry.Create.
func (d *dentry) Create(name string, mode uint32, c *vfs.Credentials) (vfs.Dentry, error) {
	if !d.inode.isDir() {
		return nil, unix.ENOTDIR
	}
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	child, err := d.createLocked(name, unix.S_IFREG, mode, c)
	if err != nil {
		return nil, err
	}
	return child, nil
}

// CreateTmpfile implements vfs.TmpfileMaker, as vfs_tmpfile then
// shmem_tmpfile: write and search permission on d, then a regular inode
// with no name (nlink 0), owned as a file created in d would be, that
// linkat may give a name unless excl (O_EXCL: I_LINKABLE unset). Its
// dentry is "#ino" under d, as d_tmpfile names it, so /proc/PID/fd shows
// "d/#ino (deleted)". It is freed at its last close if never linked.
func (d *dentry) CreateTmpfile(mode uint32, excl bool, c *vfs.Credentials) (vfs.Dentry, error) {
	if !d.inode.isDir() {
		return nil, unix.ENOTDIR
	}
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	dmode, duid, dgid := d.inode.attrs()
	if err := d.inode.permission(c, vfs.MayWrite|vfs.MayExec, dmode, duid, dgid); err != nil {
		return nil, err
	}
	if d.inode.nlink.Load() == 0 {
		return nil, unix.ENOENT
	}
	if err := d.fs.reserveSlotLocked(); err != nil {
		return nil, err
	}
	fullMode, uid, gid := d.newOwner(unix.S_IFREG, mode, c)
	i, err := d.fs.newInodeLocked(fullMode, uid, gid, nowNanos())
	if err != nil {
		d.fs.islots--
		return nil, err
	}
	i.inheritFlags(d.inode)
	i.nlink.Store(0)
	i.linkable.Store(!excl)
	return &dentry{fs: d.fs, inode: i, parent: d, name: "#" + strconv.FormatUint(i.ino, 10)}, nil
}

// Mkdir implements vfs.Dentry.Mkdir. As vfs_mkdir, only the permission
// and sticky bits of mode are kept; S_ISGID comes from the parent.
func (d *dentry) Mkdir(name string, mode uint32, c *vfs.Credentials) (vfs.Dentry, error) {
	if !d.inode.isDir() {
		return nil, unix.ENOTDIR
	}
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	child, err := d.createLocked(name, unix.S_IFDIR, mode, c)
	if err != nil {
		return nil, err
	}
	return child, nil
}

// Link implements vfs.Dentry.Link, as vfs_link then shmem_link: may_create,
// EXDEV across file systems, EPERM for a directory, ENOENT for an inode
// whose last link is gone, and one inode slot per extra link.
func (d *dentry) Link(name string, target vfs.Dentry, c *vfs.Credentials) (vfs.Dentry, error) {
	if !d.inode.isDir() {
		return nil, unix.ENOTDIR
	}
	td, ok := target.(*dentry)
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	if err := d.mayCreateLocked(name, c); err != nil {
		return nil, err
	}
	if !ok || td == nil || td.fs != d.fs {
		return nil, unix.EXDEV
	}
	ti := td.inode
	n := ti.nlink.Load()
	switch {
	case ti.isAppendOrImmutable():
		// vfs_link: no new name for an append-only or immutable file.
		return nil, unix.EPERM
	case ti.isDir():
		return nil, unix.EPERM
	case n == 0 && !ti.linkable.Load():
		return nil, unix.ENOENT
	case n >= maxLinks:
		return nil, unix.EMLINK
	}
	if n > 0 {
		// shmem_link reserves a slot only for an extra link: an
		// O_TMPFILE inode's first name uses the slot it has.
		if err := d.fs.reserveSlotLocked(); err != nil {
			return nil, err
		}
	}
	ti.linkable.Store(false) // vfs_link clears I_LINKABLE
	now := nowNanos()
	ti.nlink.Add(1)
	ti.touchCtime(now)
	child := &dentry{fs: d.fs, inode: ti}
	d.insertLocked(name, child, now)
	return child, nil
}

// Unlink implements vfs.Dentry.Unlink (may_delete, then shmem_unlink).
func (d *dentry) Unlink(name string, c *vfs.Credentials) error {
	if !d.inode.isDir() {
		return unix.ENOTDIR
	}
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	victim := d.inode.dir.entries[name]
	if victim == nil {
		return unix.ENOENT
	}
	if err := d.mayDeleteLocked(victim, false, c); err != nil {
		return err
	}
	now := nowNanos()
	d.removeEntryLocked(victim, now)
	d.fs.dropLinkLocked(victim.inode, now)
	d.mirrorDeleteLocked(victim)
	return nil
}

// Rmdir implements vfs.Dentry.Rmdir (may_delete, then shmem_rmdir).
func (d *dentry) Rmdir(name string, c *vfs.Credentials) error {
	if !d.inode.isDir() {
		return unix.ENOTDIR
	}
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	victim := d.inode.dir.entries[name]
	if victim == nil {
		return unix.ENOENT
	}
	if err := d.mayDeleteLocked(victim, true, c); err != nil {
		return err
	}
	if len(victim.inode.dir.entries) != 0 {
		return unix.ENOTEMPTY
	}
	now := nowNanos()
	d.removeEntryLocked(victim, now)
	d.inode.nlink.Add(^uint32(0)) // the victim's ".." no longer counts
	d.fs.dropLinkLocked(victim.inode, now)
	d.mirrorDeleteLocked(victim)
	return nil
}

// dropLinkLocked removes one link of i, whose name is already gone, as
// shmem_unlink (and shmem_rmdir for a directory, which drops both its name
// and its "."): ctime moves to now, an extra link of a non-directory gives
// its inode slot back, and an inode left without links or open references
// is freed. fs.mu must be held for writing.
func (fs *Filesystem) dropLinkLocked(i *inode, now int64) {
	i.touchCtime(now)
	if i.isDir() {
		i.nlink.Store(0)
	} else {
		if i.nlink.Load() > 1 {
			fs.islots--
		}
		i.nlink.Add(^uint32(0))
	}
	fs.maybeFreeLocked(i)
}
