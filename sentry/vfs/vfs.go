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

// Capabilities (linux/capability.h) the sentry's permission checks name.
const (
	CapChown          = 0
	CapDacOverride    = 1
	CapDacReadSearch  = 2
	CapFowner         = 3
	CapFsetid         = 4
	CapSetgid         = 6
	CapSetuid         = 7
	CapLinuxImmutable = 9
	CapSysPtrace      = 19
	CapSysAdmin       = 21
	CapMknod          = 27
	CapSetfcap        = 31
	// CapLast is CAP_LAST_CAP of Linux 6.x (CAP_CHECKPOINT_RESTORE).
	CapLast = 40
)

// CapSet is a capability set, bit N for capability N: the kernel_cap_t
// that /proc/PID/status shows as CapEff.
type CapSet uint64

// AllCaps holds every capability Linux defines.
const AllCaps CapSet = 1<<(CapLast+1) - 1

// Has reports whether capability cap is in the set.
func (s CapSet) Has(cap int) bool { return s&(1<<cap) != 0 }

// IDMap is a user namespace's uid_map or gid_map, as the sentry's user
// namespace sees it: ranges [First, First+Count) of the sentry's ids.
type IDMap []IDRange

// IDRange is one line of an IDMap (its outside start and length).
type IDRange struct{ First, Count uint32 }

// Maps reports whether id has a mapping (kuid_has_mapping).
func (m IDMap) Maps(id uint32) bool {
	for _, r := range m {
		if id >= r.First && uint64(id) < uint64(r.First)+uint64(r.Count) {
			return true
		}
	}
	return false
}

// MapsAll reports whether the map covers every id, 0 to 4294967294 (the
// lines of a map never overlap), or every one but 4294967294, the
// sentries' own uid (platform.SentryUID), which the sandbox's namespace
// leaves out (launch/userns.go) and which owns no file.
func (m IDMap) MapsAll() bool {
	var n uint64
	for _, r := range m {
		n += uint64(r.Count)
	}
	return n >= 1<<32-1 || n == 1<<32-2 && !m.Maps(1<<32-2)
}

// Credentials are the identity a task acts with on the file system: Linux's
// fsuid, fsgid, supplementary groups and effective capabilities (struct
// cred). Nothing follows from the uid alone: root without capabilities is
// an ordinary owner, as Linux makes it (setpriv --inh-caps=-all
// --bounding-set=-all, or after setfsuid away from 0). Credentials are
// immutable once a task uses them; a change makes new ones (commit_creds).
type Credentials struct {
	UID    uint32
	GID    uint32
	Groups []uint32
	// Caps is the effective capability set (CapEff), held in the task's
	// own user namespace.
	Caps CapSet
	// Foreign is set when the task is in a user namespace other than
	// the sentry's (unshare -U): its capabilities are that namespace's,
	// which own none of the sentry's files. Capable is then false, and
	// CapableWrt only for files whose owner and group the namespace
	// maps (UIDMap, GIDMap), as capable_wrt_inode_uidgid.
	Foreign        bool
	UIDMap, GIDMap IDMap
	// UserNS names the task's user namespace ("user:[4026531837]", as
	// /proc/PID/ns/user reads), "" where unknown.
	UserNS string
}

// RootCredentials are root's with every capability: what the sentry
// itself acts with on its own files.
func RootCredentials() *Credentials { return &Credentials{Caps: AllCaps} }

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

// Capable is capable(cap): the capability in the user namespace that owns
// the sentry's file systems (the host's initial one, as for a kernel
// tmpfs). Used where Linux checks no inode: CAP_MKNOD, CAP_SYS_ADMIN for
// the trusted. and security. attributes, CAP_FSETID when a write or a
// truncation keeps set-id bits.
func (c *Credentials) Capable(cap int) bool {
	return !c.Foreign && c.Caps.Has(cap)
}

// CapableWrt is capable_wrt_inode_uidgid for a file owned by uid and gid:
// the capability in the task's namespace, which must map both ids.
func (c *Credentials) CapableWrt(cap int, uid, gid uint32) bool {
	if !c.Caps.Has(cap) {
		return false
	}
	return !c.Foreign || c.UIDMap.Maps(uid) && c.GIDMap.Maps(gid)
}

// OwnerOrCapable is inode_owner_or_capable for a file owned by uid and
// gid: its owner, or CAP_FOWNER over it.
func (c *Credentials) OwnerOrCapable(uid, gid uint32) bool {
	return c.UID == uid || c.CapableWrt(CapFowner, uid, gid)
}

// InGroupOrCapable is in_group_or_capable: group is one of the task's, or
// it has CAP_FSETID over the file owned by uid and gid (whether a set-gid
// bit may stay).
func (c *Credentials) InGroupOrCapable(group, uid, gid uint32) bool {
	return c.InGroup(group) || c.CapableWrt(CapFsetid, uid, gid)
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
	// nil or EACCES (EPERM never; CAP_DAC_OVERRIDE bypasses always for
	// read/write, for exec only if some x bit is set or it is a directory;
	// CAP_DAC_READ_SEARCH for reading, and searching a directory).
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
	// exec is set) when the writer lacks CAP_FSETID, as Linux's
	// file_remove_privs.
	WriteAt(p []byte, off int64, c *Credentials) (int, error)
	// Append writes at the end atomically (O_APPEND) and returns the bytes
	// written and the new end offset.
	Append(p []byte, c *Credentials) (n int, end int64, err error)
	// Truncate sets the size, as truncate(2), for a caller with
	// credentials c (nil: the sentry itself): mtime and ctime change as
	// Linux's vfs_truncate changes them on a tmpfs, and a caller without
	// CAP_FSETID drops SUID and SGID as a write does
	// (do_truncate -> setattr_should_drop_suidgid). EINVAL for a negative
	// size, EISDIR for directories.
	Truncate(size int64, c *Credentials) error
	// TruncateOpened is O_TRUNC's truncate, through the open's own
	// placeholder fd, after the open, as Linux's handle_truncate;
	// throughFD tells that it did (a watched directory then saw it
	// through the placeholder's name), false when it had to truncate
	// the file otherwise.
	TruncateOpened(fd int, c *Credentials) (throughFD bool, err error)

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

// FDStater is an inode whose Stat can use a host descriptor of its
// placeholder (FileDescription.HostFD), which is cheaper than its name.
type FDStater interface {
	StatFD(fd int, st *unix.Stat_t)
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

// DirWatcher is a directory that can report directory notification
// events (fcntl F_NOTIFY): Watch readies it before the watch is placed.
type DirWatcher interface {
	Watch() error
}

// Directory notification events (linux/fcntl.h DN_*).
const (
	DNAccess = 0x1
	DNModify = 0x2
	DNAttrib = 0x20
)

// InotifyTarget is a file whose inotify watches the host keeps, on a host
// inode that raises the file's events: WatchTarget opens that inode with
// O_PATH (a directory's mirrors its entries from then on, as for
// DirWatcher); EOPNOTSUPP for a file with no such inode.
type InotifyTarget interface {
	WatchTarget() (int, error)
}

// ChildNotifier is a file whose change the sentry made raises a dnotify
// event (DNAttrib, DNModify, DNAccess) in the directory holding
// it, as fsnotify_change reports a child's change to its parent.
type ChildNotifier interface {
	NotifyChild(event uint32)
}

// NamedOpener is a dentry whose placeholder may depend on its name, not
// its inode alone: OpenHostNamed is Inode.OpenHost for an open by this
// name (a file in a watched directory raises dnotify events there).
type NamedOpener interface {
	OpenHostNamed(flags uint32) (int, error)
}

// HandleExporter is a file system whose files have file handles
// (export_operations): EncodeHandle is the inode number and generation
// of d's inode, and makes that inode findable by them; DecodeHandle finds
// a live inode by them and returns a dentry of it (false: stale).
type HandleExporter interface {
	EncodeHandle(d Dentry) (ino uint64, gen uint32)
	DecodeHandle(ino uint64, gen uint32) (Dentry, bool)
}

// BackingStore is a file system whose files' data live on a host file
// system of its own: BackingDev is that file system's st_dev, which the
// guest's descriptors of its files carry on the host.
type BackingStore interface {
	BackingDev() uint64
}

// Inode flags (FS_*_FL of linux/fs.h) a FlagsInode may keep.
const (
	FlagImmutable = 0x10
	FlagAppend    = 0x20
	FlagNodump    = 0x40
	FlagNoatime   = 0x80
)

// FlagsInode has inode flags (FS_IOC_GETFLAGS's FS_*_FL): FSFlags reads
// them; SetFSFlags sets them with Linux's checks (vfs_fileattr_set) for
// credentials c.
type FlagsInode interface {
	FSFlags() uint32
	SetFSFlags(c *Credentials, flags uint32) error
}
