// Package vfs is the sentry's virtual file system layer: the interfaces a
// file system implementation (fs/tmpfs) provides, the credentials used for
// permission checks, mounts, and the path walk that turns a guest path into a
// Dentry. It mirrors the split of Linux's fs/namei.c (walk) and the
// inode/dentry operations a file system registers.
//
// Every error returned to a guest is a unix.Errno.
package vfs

import "golang.org/x/sys/unix"

// Access masks for Inode.CheckPermission, as Linux's MAY_EXEC, MAY_WRITE and
// MAY_READ.
const (
	MayExec  = 1
	MayWrite = 2
	MayRead  = 4
)

// Credentials are the identity a task acts with on the file system: Linux's
// fsuid, fsgid and supplementary groups (struct cred). UID 0 has root's
// capabilities (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER,
// CAP_FSETID, CAP_CHOWN), as Linux grants them.
type Credentials struct {
	UID    uint32
	GID    uint32
	Groups []uint32
}

// InGroup reports whether gid is the credentials' group or one of the
// supplementary groups (Linux's in_group_p).
func (c *Credentials) InGroup(gid uint32) bool {
	if c.GID == gid {
		return true
	}
	for _, g := range c.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

// Inode is a file's identity, metadata and data, as one file system provides
// it. Implementations are safe for concurrent use.
type Inode interface {
	// Ino is the inode number, unique within the mount.
	Ino() uint64
	// Mode is the file type and permission bits (S_IFMT | 07777).
	Mode() uint32
	// Stat fills st as Linux's generic_fillattr does for this file system.
	Stat(st *unix.Stat_t)
	// Statx fills stx with STATX_BASIC_STATS (plus STATX_BTIME where the
	// file system records it) and sets stx.Mask to what it filled.
	Statx(stx *unix.Statx_t)
	// CheckPermission is Linux's inode_permission for mask (MayRead|...):
	// nil or EACCES (EPERM never; root bypasses as CAP_DAC_OVERRIDE does:
	// always for read/write, for exec only if some x bit is set or it is a
	// directory).
	CheckPermission(c *Credentials, mask uint32) error
	// IncRef takes a reference for an open file description.
	IncRef()
	// DecRef drops one; the last reference of an inode with no links left
	// frees it (its data is released and the mount's usage drops).
	DecRef()

	// Regular files.

	// Size is the file size in bytes.
	Size() int64
	// ReadAt reads at off like pread: short at EOF, (0, nil) past it;
	// updates atime as the mount's relatime rule says.
	ReadAt(p []byte, off int64) (int, error)
	// WriteAt writes at off like pwrite (extending, with a hole if off >
	// size); updates mtime and ctime; ENOSPC over the mount's size limit,
	// EFBIG past the maximum file size. It clears SUID (and SGID if group
	// exec is set) when the writer is not root, as Linux's file_remove_privs.
	WriteAt(p []byte, off int64, c *Credentials) (int, error)
	// Append writes at the end atomically (O_APPEND) and returns the bytes
	// written and the new end offset.
	Append(p []byte, c *Credentials) (n int, end int64, err error)
	// Truncate sets the size (truncate, ftruncate, O_TRUNC) for a caller
	// with credentials c (nil: the sentry itself): mtime and ctime change,
	// and a caller without CAP_FSETID drops SUID and SGID as a write does
	// (do_truncate -> setattr_should_drop_suidgid). EINVAL for a negative
	// size, EISDIR for directories.
	Truncate(size int64, c *Credentials) error

	// Symlinks.

	// Readlink is the symlink's target; EINVAL if the inode is not a
	// symlink.
	Readlink() (string, error)

	// OpenHost opens the host file that stands for the inode in the
	// guest's descriptor table (its placeholder), for an open with flags
	// (open(2)'s access mode and status flags): the caller installs it in
	// the guest. For a regular file it is the file's data itself, so the
	// guest's I/O on it runs on the host.
	OpenHost(flags uint32) (int, error)
}

// Dentry is a name in a file system's tree, bound to an inode. A file
// system's root dentry has no parent: its Parent is nil. Implementations
// are safe for concurrent use.
type Dentry interface {
	Inode() Inode
	// Name is the dentry's last path component ("/" for a root).
	Name() string
	// Parent is the directory holding this name; nil for the root.
	Parent() Dentry

	// The rest are directory operations; on a dentry whose inode is not a
	// directory they return ENOTDIR. name is one component: never empty,
	// never ".", "..", never containing '/'; callers check NAME_MAX.
	// Permission checks on the directory (write+search, sticky bit) are
	// done here, with c, as Linux's may_create/may_delete.

	// Lookup finds name: ENOENT if absent. Search permission on the
	// directory is checked by the caller (the walk).
	Lookup(name string) (Dentry, error)
	// Create makes a regular file with mode&07777 (umask already applied by
	// the caller), owned by c.UID and c.GID (or the directory's group if
	// the directory is SGID): EEXIST if the name exists (whatever it is).
	Create(name string, mode uint32, c *Credentials) (Dentry, error)
	// Mkdir makes a directory, as Create; the SGID bit of the parent is
	// inherited.
	Mkdir(name string, mode uint32, c *Credentials) (Dentry, error)
	// Symlink makes a symlink to target (mode 0777).
	Symlink(name, target string, c *Credentials) (Dentry, error)
	// Link adds name as a new link to target's inode: EEXIST, EPERM for a
	// directory, EMLINK at the link limit.
	Link(name string, target Dentry, c *Credentials) (Dentry, error)
	// Unlink removes a non-directory name: ENOENT, EISDIR for a directory,
	// EPERM/EACCES by the sticky bit and permissions.
	Unlink(name string, c *Credentials) error
	// Rmdir removes an empty directory: ENOENT, ENOTDIR, ENOTEMPTY.
	Rmdir(name string, c *Credentials) error
	// Rename moves oldName in this directory to newName in newParent (same
	// file system), with renameat2's flags (RENAME_NOREPLACE,
	// RENAME_EXCHANGE) and Linux's errors (EINVAL moving a directory into
	// itself, ENOTEMPTY, EISDIR, ENOTDIR, EEXIST with NOREPLACE).
	Rename(oldName string, newParent Dentry, newName string, flags uint32, c *Credentials) error
	// IterDirents lists entries from position off (0 = the start, "." and
	// ".." included first) calling fn for each; fn returns false to stop.
	// next is the position of the entry after this one, stable while the
	// directory changes (as a cursor in Linux's dcache_readdir).
	IterDirents(off int64, fn func(ino uint64, next int64, typ uint8, name string) bool) error
}

// Attribute changes for Inode.SetAttr (Linux's ATTR_* of struct iattr).
const (
	AttrMode  = 1 << iota // chmod
	AttrUID               // chown: new owner
	AttrGID               // chown: new group
	AttrAtime             // utimensat: atime (AtimeNow for UTIME_NOW)
	AttrMtime             // utimensat: mtime (MtimeNow for UTIME_NOW)
)

// Attr is one chmod, chown or utimensat (struct iattr).
type Attr struct {
	Mask               uint32
	Mode               uint32
	UID, GID           uint32
	Atime, Mtime       int64 // nanoseconds since the epoch
	AtimeNow, MtimeNow bool
}

// AttrSetter is the attribute half of an inode: chmod, chown and
// utimensat, with Linux's permission rules (setattr_prepare,
// chown_ok/chgrp_ok, inode_owner_or_capable) and ctime moved to now.
type AttrSetter interface {
	SetAttr(c *Credentials, a *Attr) error
}

// Mknoder is a directory that can hold special files (mknod): FIFOs,
// sockets and device nodes. rdev is a device node's number as mknod's
// dev argument encodes it (new_encode_dev), ignored for other types.
type Mknoder interface {
	Mknod(name string, mode uint32, rdev uint64, c *Credentials) (Dentry, error)
}

// XattrInode holds extended attributes by full name ("user.x"), as
// simple_xattrs: the caller checks names and permissions. Setxattr with a
// nil value removes (ENODATA if absent); XATTR_CREATE and XATTR_REPLACE
// give EEXIST and ENODATA. Listxattr is sorted.
type XattrInode interface {
	Getxattr(name string) ([]byte, bool)
	Setxattr(name string, value []byte, flags uint32) error
	Listxattr() []string
}

// TmpfileMaker is a directory that can hold O_TMPFILE files: CreateTmpfile
// makes a regular file with no name in it (mode already umasked), which
// linkat may name later unless excl.
type TmpfileMaker interface {
	CreateTmpfile(mode uint32, excl bool, c *Credentials) (Dentry, error)
}

// DeviceInode is an inode that can be a device node: Rdev is its device
// number as stat's st_rdev reports it.
type DeviceInode interface {
	Rdev() uint64
}

// Allocator is a regular file's fallocate: Allocate for mode 0 and
// FALLOC_FL_KEEP_SIZE, PunchHole for FALLOC_FL_PUNCH_HOLE|KEEP_SIZE.
type Allocator interface {
	Allocate(off, length int64, keepSize bool, c *Credentials) error
	PunchHole(off, length int64, c *Credentials) error
}
