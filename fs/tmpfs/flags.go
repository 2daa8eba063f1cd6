package tmpfs

import (
	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// Inode flags (FS_IOC_GETFLAGS, FS_IOC_SETFLAGS). tmpfs keeps four
// (SHMEM_FL_USER_MODIFIABLE): immutable and append-only, which the VFS
// enforces (inode_permission, may_open, may_delete, vfs_link,
// notify_change, xattr_permission, vfs_truncate: EPERM), and nodump and
// noatime; a new inode inherits the last two from its directory
// (SHMEM_FL_INHERITED). A regular file's flags are also set on its
// backing, so that the host enforces them where the guest's descriptor is
// the backing itself and no call is trapped: fallocate, ftruncate of an
// append-only file, shared writable mappings of one (EACCES), F_SETFL
// changing O_APPEND on one, and atime left alone under noatime; as on
// Linux, write(2) on a descriptor opened before the flag was set is not
// refused (shmem checks neither flag there).
const (
	fsImmutableFL  = vfs.FlagImmutable
	fsAppendFL     = vfs.FlagAppend
	fsNodumpFL     = vfs.FlagNodump
	fsNoatimeFL    = vfs.FlagNoatime
	fsModifiableFL = fsImmutableFL | fsAppendFL | fsNodumpFL | fsNoatimeFL
	fsInheritedFL  = fsNodumpFL | fsNoatimeFL
)

var _ vfs.FlagsInode = (*inode)(nil)

// FSFlags implements vfs.FlagsInode.FSFlags (shmem_fileattr_get).
func (i *inode) FSFlags() uint32 {
	return i.fsflags.Load()
}

// SetFSFlags implements vfs.FlagsInode.SetFSFlags, as vfs_fileattr_set ->
// fileattr_set_prepare -> shmem_fileattr_set: the owner or CAP_FOWNER
// (EPERM), CAP_LINUX_IMMUTABLE to change immutable or append-only
// (EPERM), then EOPNOTSUPP for a flag tmpfs does not keep. ctime moves
// even when nothing changes.
func (i *inode) SetFSFlags(c *vfs.Credentials, flags uint32) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !c.OwnerOrCapable(i.uid, i.gid) {
		return unix.EPERM
	}
	old := i.fsflags.Load()
	if (flags^old)&(fsImmutableFL|fsAppendFL) != 0 && !c.Capable(vfs.CapLinuxImmutable) {
		return unix.EPERM
	}
	if flags&^fsModifiableFL != 0 {
		return unix.EOPNOTSUPP
	}
	i.fsflags.Store(flags)
	if i.isRegular() {
		// The host's own shmem_fileattr_set moves the backing's ctime,
		// which is the file's.
		if i.fs.store.setFlags(i.ino, flags) != nil {
			i.fs.store.bumpCtime(i.ino)
		}
		return nil
	}
	i.ctime = nowNanos()
	return nil
}

// isImmutable is IS_IMMUTABLE.
func (i *inode) isImmutable() bool { return i.fsflags.Load()&fsImmutableFL != 0 }

// isAppendOrImmutable is IS_APPEND(inode) || IS_IMMUTABLE(inode).
func (i *inode) isAppendOrImmutable() bool {
	return i.fsflags.Load()&(fsAppendFL|fsImmutableFL) != 0
}

// inheritFlags gives a new inode in directory dir the flags it inherits
// (__shmem_get_inode), and its backing too.
func (i *inode) inheritFlags(dir *inode) {
	f := dir.fsflags.Load() & fsInheritedFL
	if f == 0 {
		return
	}
	i.fsflags.Store(f)
	if i.isRegular() {
		i.fs.store.setFlags(i.ino, f)
	}
}

// setFlags sets regular inode ino's backing's inode flags (the sentry
// needs CAP_LINUX_IMMUTABLE for immutable and append-only, as root has;
// without, the host does not enforce them for the guest's untrapped
// calls).
func (s *store) setFlags(ino uint64, flags uint32) error {
	fd, err := s.openFile(ino, unix.O_RDONLY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags))
}
