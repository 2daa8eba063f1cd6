package tmpfs

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

const (
	// bogoDirentSize is what each directory entry adds to a directory's
	// st_size (BOGO_DIRENT_SIZE in mm/shmem.c).
	bogoDirentSize = 20
	// emptyDirSize is an empty directory's st_size: shmem_get_inode
	// counts "." and "..".
	emptyDirSize = 2 * bogoDirentSize
	// maxLinks bounds i_nlink, an unsigned int in Linux; tmpfs sets no
	// s_max_links, so this is only reached by overflow.
	maxLinks = math.MaxUint32
	// statxAttributesMask is stx_attributes_mask on Linux 6.18 tmpfs:
	// APPEND|IMMUTABLE|NODUMP from shmem_getattr plus AUTOMOUNT,
	// MOUNT_ROOT and DAX that vfs_getattr_nosec always adds.
	statxAttributesMask = unix.STATX_ATTR_APPEND | unix.STATX_ATTR_IMMUTABLE |
		unix.STATX_ATTR_NODUMP | unix.STATX_ATTR_AUTOMOUNT |
		unix.STATX_ATTR_MOUNT_ROOT | unix.STATX_ATTR_DAX
	// relatimeWindow is how stale atime may get before relatime updates it
	// regardless of mtime and ctime (relatime_need_update).
	relatimeWindow = 24 * 60 * 60
)

// inode is a tmpfs inode: shmem_inode_info plus struct inode.
type inode struct {
	fs *Filesystem
	// ino and ftype (the S_IFMT bits) are immutable.
	ino   uint64
	ftype uint32
	// gen is i_generation, part of the inode's file handle (handle.go).
	gen uint32
	// fsflags are the inode flags (flags.go), written under mu.
	fsflags atomic.Uint32

	// refs counts open file descriptions (IncRef/DecRef).
	refs atomic.Int64
	// nlink is i_nlink. Written with fs.mu held for writing, read
	// anywhere.
	nlink atomic.Uint32
	// linkable is I_LINKABLE: an O_TMPFILE inode without O_EXCL, which
	// linkat may give a first name.
	linkable atomic.Bool
	// watched is set on a directory once the guest asked for dnotify
	// events in it (dnotify.go).
	watched atomic.Bool
	// inotified is set on a regular file once an inotify watch was
	// placed on its backing, which then has a second name; standIn on a
	// symlink or socket once one was placed on the empty file in the
	// store that stands for it (dnotify.go). Changed with fs.mu held for
	// writing.
	inotified atomic.Bool
	standIn   atomic.Bool
	// alt tells which of its two names the store entry a rename of the
	// file renames has (altNames: a watched regular file's second name,
	// a watched directory's backing, a stand-in): the second when set.
	// Changed with fs.mu held for writing, read with it held.
	alt atomic.Bool

	// mu protects the fields below.
	mu sync.Mutex
	// mode is the full mode (type and 07777 bits).
	mode     uint32
	uid, gid uint32
	// Times in nanoseconds since the epoch (CLOCK_REALTIME).
	atime, mtime, ctime, btime int64
	// size is i_size of a symlink (the target length) or a directory
	// (the bogo size); a regular file's is its backing's (storage.go),
	// as are its blocks and times.
	size int64
	// target is a symlink's target; symPage tells whether it occupies a
	// page (longer than shortSymlinkLen) rather than being inline.
	target  string
	symPage bool
	// rdev is a device node's number (st_rdev), set once at mknod.
	rdev uint64
	// xattrs are the extended attributes by full name.
	xattrs map[string][]byte

	// dir is a directory's entries; nil for other types. Protected by
	// fs.mu, not by mu.
	dir *dirData

	// Live-list linkage and freed state, protected by fs.mu.
	prevLive, nextLive *inode
	freed              bool
}

// page is one page of file data.
type page [pageSize]byte

var _ vfs.Inode = (*inode)(nil)

// nowNanos is current_time(): CLOCK_REALTIME in nanoseconds.
func nowNanos() int64 {
	return time.Now().UnixNano()
}

func (i *inode) isDir() bool     { return i.ftype == unix.S_IFDIR }
func (i *inode) isRegular() bool { return i.ftype == unix.S_IFREG }
func (i *inode) isSymlink() bool { return i.ftype == unix.S_IFLNK }

// Ino implements vfs.Inode.Ino.
func (i *inode) Ino() uint64 {
	return i.ino
}

// Mode implements vfs.Inode.Mode.
func (i *inode) Mode() uint32 {
	i.mu.Lock()
	m := i.mode
	i.mu.Unlock()
	return m
}

// blocksLocked is st_blocks of an inode without a backing: directories
// and inline symlinks hold none (shmem_getattr reports i_blocks, which only
// page allocations raise); a long symlink's target holds a page.
func (i *inode) blocksLocked() int64 {
	if i.isSymlink() && i.symPage {
		return pageSize / 512
	}
	return 0
}

// Stat implements vfs.Inode.Stat, as generic_fillattr called from
// shmem_getattr.
func (i *inode) Stat(st *unix.Stat_t) {
	i.mu.Lock()
	*st = unix.Stat_t{
		Dev:     i.fs.opts.Dev,
		Ino:     i.ino,
		Nlink:   uint64(i.nlink.Load()),
		Mode:    i.mode,
		Uid:     i.uid,
		Gid:     i.gid,
		Size:    i.size,
		Rdev:    i.rdev,
		Blksize: pageSize,
		Blocks:  i.blocksLocked(),
		Atim:    unix.NsecToTimespec(i.atime),
		Mtim:    unix.NsecToTimespec(i.mtime),
		Ctim:    unix.NsecToTimespec(i.ctime),
	}
	i.mu.Unlock()
	if i.isRegular() {
		var h unix.Stat_t
		if i.fs.store.statFile(i.ino, &h) == nil {
			i.fromBacking(st, &h)
		}
	}
}

// StatFD implements vfs.FDStater: Stat with the backing's figures taken
// from fd, a descriptor of it (an fstat, cheaper than a lookup by name).
func (i *inode) StatFD(fd int, st *unix.Stat_t) {
	if !i.isRegular() || fd < 0 {
		i.Stat(st)
		return
	}
	var h unix.Stat_t
	if _, _, e := unix.RawSyscall(unix.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(&h)), 0); e != 0 {
		i.Stat(st)
		return
	}
	i.mu.Lock()
	*st = unix.Stat_t{
		Dev:     i.fs.opts.Dev,
		Ino:     i.ino,
		Nlink:   uint64(i.nlink.Load()),
		Uid:     i.uid,
		Gid:     i.gid,
		Rdev:    i.rdev,
		Blksize: pageSize,
	}
	i.mu.Unlock()
	i.fromBacking(st, &h)
}

// fromBacking takes a regular file's size, blocks, times and dropped
// privileges from its backing's stat h.
func (i *inode) fromBacking(st, h *unix.Stat_t) {
	st.Size, st.Blocks = h.Size, h.Blocks
	st.Atim, st.Mtim, st.Ctim = h.Atim, h.Mtim, h.Ctim
	st.Mode = i.reconcileMode(h.Mode)
}

// reconcileMode takes from a regular file's backing mode the SUID and SGID
// bits the host dropped (a write or truncate by a guest without
// CAP_FSETID, file_remove_privs): the permission bits are the sentry's,
// those two the host may clear behind its back. It returns the mode.
func (i *inode) reconcileMode(host uint32) uint32 {
	i.mu.Lock()
	defer i.mu.Unlock()
	const privs = unix.S_ISUID | unix.S_ISGID
	if i.mode&privs&^host != 0 {
		i.mode &^= privs &^ host
	}
	return i.mode
}

// reconcileModeLocked is reconcileMode with the backing's mode read here,
// before the sentry changes the mode itself. i.mu must be held.
func (i *inode) reconcileModeLocked() {
	const privs = unix.S_ISUID | unix.S_ISGID
	if !i.isRegular() || i.mode&privs == 0 {
		return
	}
	var h unix.Stat_t
	if i.fs.store.statFile(i.ino, &h) == nil {
		i.mode &^= privs &^ h.Mode
	}
}

// Statx implements vfs.Inode.Statx, as shmem_getattr. tmpfs records the
// creation time (i_crtime), so STATX_BTIME is always filled; Linux reports
// it only when the caller requested it, so the caller should clear it from
// Mask when STATX_BTIME was not in the request mask.
func (i *inode) Statx(stx *unix.Statx_t) {
	i.mu.Lock()
	*stx = unix.Statx_t{
		Mask:            unix.STATX_BASIC_STATS | unix.STATX_BTIME,
		Blksize:         pageSize,
		Nlink:           i.nlink.Load(),
		Uid:             i.uid,
		Gid:             i.gid,
		Mode:            uint16(i.mode),
		Ino:             i.ino,
		Size:            uint64(i.size),
		Blocks:          uint64(i.blocksLocked()),
		Attributes_mask: statxAttributesMask,
		Atime:           statxTime(i.atime),
		Btime:           statxTime(i.btime),
		Ctime:           statxTime(i.ctime),
		Mtime:           statxTime(i.mtime),
		Dev_major:       unix.Major(i.fs.opts.Dev),
		Dev_minor:       unix.Minor(i.fs.opts.Dev),
		Rdev_major:      unix.Major(i.rdev),
		Rdev_minor:      unix.Minor(i.rdev),
	}
	i.mu.Unlock()
	if i.isRegular() {
		var h unix.Statx_t
		if i.fs.store.statxFile(i.ino, &h) == nil {
			stx.Size, stx.Blocks = h.Size, h.Blocks
			stx.Atime, stx.Mtime, stx.Ctime, stx.Btime = h.Atime, h.Mtime, h.Ctime, h.Btime
			stx.Mode = uint16(i.reconcileMode(uint32(h.Mode)))
		}
	}
	// shmem_getattr.
	fl := i.fsflags.Load()
	if fl&fsAppendFL != 0 {
		stx.Attributes |= unix.STATX_ATTR_APPEND
	}
	if fl&fsImmutableFL != 0 {
		stx.Attributes |= unix.STATX_ATTR_IMMUTABLE
	}
	if fl&fsNodumpFL != 0 {
		stx.Attributes |= unix.STATX_ATTR_NODUMP
	}
	// The root of the file system is the root of its mount, which
	// vfs_getattr_nosec flags with STATX_ATTR_MOUNT_ROOT.
	if i == i.fs.root.inode {
		stx.Attributes |= unix.STATX_ATTR_MOUNT_ROOT
	}
}

func statxTime(ns int64) unix.StatxTimestamp {
	ts := unix.NsecToTimespec(ns)
	return unix.StatxTimestamp{Sec: ts.Sec, Nsec: uint32(ts.Nsec)}
}

// CheckPermission implements vfs.Inode.CheckPermission.
func (i *inode) CheckPermission(c *vfs.Credentials, mask uint32) error {
	i.mu.Lock()
	mode, uid, gid := i.mode, i.uid, i.gid
	i.mu.Unlock()
	return i.permission(c, mask, mode, uid, gid)
}

// permission is inode_permission for i with its mode, uid and gid: a
// read-only mount refuses writes (sb_permission, EROFS), nobody writes an
// immutable inode (EPERM), both before the mode is looked at, then
// generic_permission.
func (i *inode) permission(c *vfs.Credentials, mask, mode, uid, gid uint32) error {
	if mask&vfs.MayWrite != 0 && i.fs.readOnly.Load() && (i.isRegular() || i.isDir() || i.isSymlink()) {
		return unix.EROFS
	}
	if mask&vfs.MayWrite != 0 && i.isImmutable() {
		return unix.EPERM
	}
	return checkPermission(c, mask, mode, uid, gid)
}

// checkPermission is generic_permission for an inode with mode, uid and gid
// (no ACLs): acl_permission_check picks exactly one class (owner, else
// group, else other); failing that, capabilities over the inode
// (capable_wrt_inode_uidgid) override it: on a directory,
// CAP_DAC_READ_SEARCH for reading and searching and CAP_DAC_OVERRIDE for
// everything; on another file, CAP_DAC_READ_SEARCH for reading alone and
// CAP_DAC_OVERRIDE for anything but executing a file with no x bit at all.
func checkPermission(c *vfs.Credentials, mask, mode, uid, gid uint32) error {
	mask &= vfs.MayRead | vfs.MayWrite | vfs.MayExec
	perm := mode
	switch {
	case c.UID == uid:
		perm >>= 6
	case c.InGroup(gid):
		perm >>= 3
	}
	if mask&^perm&7 == 0 {
		return nil
	}
	if mode&unix.S_IFMT == unix.S_IFDIR {
		if mask&vfs.MayWrite == 0 && c.CapableWrt(vfs.CapDacReadSearch, uid, gid) {
			return nil
		}
		if c.CapableWrt(vfs.CapDacOverride, uid, gid) {
			return nil
		}
		return unix.EACCES
	}
	if mask == vfs.MayRead && c.CapableWrt(vfs.CapDacReadSearch, uid, gid) {
		return nil
	}
	if (mask&vfs.MayExec == 0 || mode&0111 != 0) && c.CapableWrt(vfs.CapDacOverride, uid, gid) {
		return nil
	}
	return unix.EACCES
}

// IncRef implements vfs.Inode.IncRef.
func (i *inode) IncRef() {
	if i.refs.Add(1) != 1 {
		return
	}
	if i.nlink.Load() == 0 {
		// An unlinked inode is being opened again through a dentry the
		// caller obtained before the unlink; it may have been freed by
		// then. Linux's dentry reference would have kept it alive, so
		// revive it: it is live (and accounted) until its last DecRef.
		// A freed regular file's backing is gone (its open then fails
		// with ENOENT, as if it came after the unlink); a long symlink
		// takes its target page back.
		i.fs.mu.Lock()
		if i.freed && i.refs.Load() > 0 {
			i.fs.linkLiveLocked(i)
			if i.isRegular() {
				// Its data went with it; the file is empty again.
				i.fs.store.createFile(i.ino, i.mode, i.uid, i.gid)
			}
			i.fs.islots++
			if i.isSymlink() && len(i.target)+1 > shortSymlinkLen {
				i.mu.Lock()
				i.symPage = true
				i.mu.Unlock()
				i.fs.unreservePages(-1)
			}
		}
		i.fs.mu.Unlock()
	}
}

// DecRef implements vfs.Inode.DecRef: the last reference of an inode with
// no links left frees it, as iput -> shmem_evict_inode.
func (i *inode) DecRef() {
	r := i.refs.Add(-1)
	if r < 0 {
		panic("tmpfs: DecRef without IncRef")
	}
	if r == 0 && i.nlink.Load() == 0 {
		i.fs.mu.Lock()
		i.fs.maybeFreeLocked(i)
		i.fs.mu.Unlock()
	}
}

// releaseData drops the inode's backing (its data lives on in the guest's
// descriptors and mappings of it, as an unlinked file's) and returns a long
// symlink's page to the mount.
func (i *inode) releaseData() {
	switch {
	case i.isRegular():
		if i.isAppendOrImmutable() {
			// An O_TMPFILE file made immutable: the host would not
			// unlink its backing.
			i.fs.store.setFlags(i.ino, 0)
		}
		// The second name first: the backing's own last name then
		// raises FS_DELETE_SELF.
		i.fs.store.removeAlt(i)
		i.fs.store.removeFile(i.ino)
	case i.isDir():
		i.fs.store.removeDir(i)
	default:
		i.fs.store.removeAlt(i)
	}
	i.mu.Lock()
	n := int64(0)
	if i.symPage {
		i.symPage = false
		n++
	}
	i.mu.Unlock()
	i.fs.unreservePages(n)
}

// touchCtimeMoved is touchCtime for a rename, which raises FS_MOVE_SELF
// on the inode (fsnotify_move) and no FS_ATTRIB: a watched file's store
// entry that has two names (altNames) is renamed to the other, which
// raises the one and moves a regular file's ctime, its backing's. fs.mu
// must be held for writing.
func (i *inode) touchCtimeMoved(now int64) {
	a, b, ok := i.altNames()
	if !ok {
		i.touchCtime(now)
		return
	}
	i.fs.store.moveAlt(i, a, b)
	if !i.isRegular() {
		i.mu.Lock()
		i.ctime = now
		i.mu.Unlock()
	}
}

// altNames are the prefixes of the two names of inode i's store entry
// that a rename of the file renames (dnotify.go): a watched regular
// file's backing's second name ("w", "v"; the backing's own name "r"
// never changes), a watched directory's backing ("d", "e"), a watched
// symlink's or socket's stand-in ("s", "t"); false when there is none.
func (i *inode) altNames() (a, b byte, ok bool) {
	switch {
	case i.isRegular() && i.inotified.Load():
		return 'w', 'v', true
	case i.isDir() && i.watched.Load():
		return 'd', 'e', true
	case i.standIn.Load():
		return 's', 't', true
	}
	return 0, 0, false
}

// touchCtime sets ctime to now (inode_set_ctime_current). A regular
// file's is its backing's, moved by a chmod to the mode the backing has
// (bumpCtime), under i.mu: a chmod of the file (SetAttr, which mirrors
// the mode to the backing under i.mu) between bumpCtime's stat and its
// chmod was undone, the backing left with the old mode (a random guest's
// link or unlink racing its chmod: "backing mode 100700, inode mode
// 100260"), and the host's checks at exec or write with it.
func (i *inode) touchCtime(now int64) {
	if i.isRegular() {
		i.mu.Lock()
		i.fs.store.bumpCtime(i.ino)
		i.mu.Unlock()
		return
	}
	i.mu.Lock()
	i.ctime = now
	i.mu.Unlock()
	if i.standIn.Load() {
		// A link count's change raises FS_ATTRIB (fsnotify_link_count).
		var buf [24]byte
		i.fs.store.raiseOn(standInName(&buf, i), vfs.DNAttrib, 0o600)
	}
}

// touchAtimeLocked applies relatime (touch_atime -> atime_needs_update ->
// relatime_need_update): atime moves to now only if it is not after mtime
// or ctime, or is a day old. i.mu must be held.
func (i *inode) touchAtimeLocked(now int64) {
	if i.fsflags.Load()&fsNoatimeFL != 0 {
		// IS_NOATIME.
		return
	}
	if i.atime > i.mtime && i.atime > i.ctime &&
		now/1e9-i.atime/1e9 < relatimeWindow {
		return
	}
	i.atime = now
}
