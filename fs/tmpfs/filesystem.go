// Package tmpfs is an in-memory file system that behaves like Linux's tmpfs
// (mm/shmem.c) as seen through stat, statx, statfs and the file operations
// of package vfs: the same inode numbering, link counts, directory sizes,
// block counts, timestamps, permission rules and errors.
//
// Locking. Filesystem.mu (a RWMutex) protects the tree: every directory's
// entries, every dentry's parent and name, the list of live inodes and the
// inode-count accounting. Each inode has its own mutex for its metadata and
// data (mode, owner, times, size, pages). The order is always Filesystem.mu
// before inode.mu, and at most one inode.mu is held at a time. Reference
// counts and link counts are atomics so that IncRef/DecRef never take a lock
// except on the last reference of an unlinked inode. The count of allocated
// data pages is an atomic as well, so that writers of different files do
// not serialise on the tree lock.
package tmpfs

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// stValid is ST_VALID, which Linux's statfs sets in f_flags to say they are
// filled (missing from x/sys/unix).
const stValid = 0x20

// pageSize is the unit of allocation and of the size limit, as PAGE_SIZE on
// x86-64 Linux.
const pageSize = 4096

// Options configure a Filesystem, as tmpfs's mount options do.
type Options struct {
	// Dev is st_dev of this mount (the caller picks one distinct from host
	// devices).
	Dev uint64
	// SizeLimit is the size= option in bytes, rounded up to whole pages as
	// shmem_parse_one does; 0 means unlimited. Writes that need a page past
	// it fail with ENOSPC.
	SizeLimit int64
	// MaxInodes is the nr_inodes= option; 0 means unlimited. As in Linux,
	// every inode and every extra hard link to a non-directory uses one
	// slot (shmem_reserve_inode); creating past it fails with ENOSPC.
	MaxInodes int64
	// RootMode is the permission bits of the root directory (mode=).
	RootMode uint32
	// RootUID and RootGID own the root directory (uid=, gid=).
	RootUID, RootGID uint32
	// OnRelease, if set, runs when the file system is released.
	OnRelease func()
}

// Filesystem is one tmpfs mount.
type Filesystem struct {
	// opts is immutable after New.
	opts Options
	// maxPages is the size limit in pages (opts.SizeLimit, or a
	// remount's size=); 0 is unlimited. Changed under pageMu.
	maxPages atomic.Int64
	// maxInodes is nr_inodes= (opts.MaxInodes, or a remount's); 0 is
	// unlimited. Guarded by mu.
	maxInodes int64

	// store holds the regular files' data (storage.go). Immutable.
	store *store
	// readOnly is set on a read-only mount (remount.go).
	readOnly atomic.Bool
	// mirrorSeq names the store's passing names of dnotify's mirrors
	// (dnotify.go).
	mirrorSeq atomic.Uint64
	// watches is set once a directory was watched.
	watches atomic.Bool

	// usedPages is the number of pages the sentry allocated itself: long
	// symlinks' targets (file data is the store's, which counts its own).
	// Changed under pageMu, with the store's size.
	pageMu    sync.Mutex
	usedPages atomic.Int64

	// mu protects the tree and everything below.
	mu sync.RWMutex
	// root is the root dentry. Immutable after New.
	root *dentry
	// nextIno is the next inode number to hand out (sbinfo->next_ino).
	nextIno uint64
	// inodes is the number of live inodes, the root included.
	inodes int64
	// islots is the number of inode slots in use: live inodes plus extra
	// hard links of non-directories; xattrSpace what the live inodes'
	// extended attributes take. Together they are the inode space that
	// nr_inodes limits.
	islots     int64
	xattrSpace int64
	// live is the head of the list of live inodes (linked or open), for
	// Check.
	live *inode
	// handles are the inodes a file handle was made for, by number, each
	// with the dentry it was made from (handle.go): Linux's inode hash,
	// which tmpfs fills at the first encode. An inode leaves it when freed.
	handles map[uint64]*dentry
}

// New returns an empty tmpfs whose root directory has opts' mode and owner,
// with its store (storage.go); Release frees the store.
func New(opts Options) (*Filesystem, error) {
	fs := &Filesystem{
		opts:      opts,
		nextIno:   1,
		maxInodes: opts.MaxInodes,
	}
	if opts.SizeLimit > 0 {
		fs.maxPages.Store(pagesFor(opts.SizeLimit))
	}
	st, err := newStore(fs.maxPages.Load() * pageSize)
	if err != nil {
		return nil, err
	}
	fs.store = st
	now := nowNanos()
	fs.mu.Lock()
	// The root is created like any directory (shmem_fill_super calls
	// shmem_get_inode with a NULL parent), so it takes inode number 1 and
	// counts against nr_inodes.
	fs.islots = 1
	ri, _ := fs.newInodeLocked(unix.S_IFDIR|(opts.RootMode&07777), opts.RootUID, opts.RootGID, now)
	fs.root = &dentry{fs: fs, inode: ri, name: "/"}
	fs.mu.Unlock()
	return fs, nil
}

// Release frees the store once the file system is no longer used (the
// guest is gone): descriptors the guest still holds keep their files.
func (fs *Filesystem) Release() {
	fs.mu.Lock()
	first := !fs.store.closed
	fs.store.release()
	fs.mu.Unlock()
	if first && fs.opts.OnRelease != nil {
		fs.opts.OnRelease()
	}
}

// usedTotal is the mount's used pages: the store's and the sentry's own.
func (fs *Filesystem) usedTotal() int64 {
	if fs.store.closed {
		return fs.usedPages.Load()
	}
	used := fs.usedPages.Load()
	if blocks, ok := fs.store.usedBlocks(); ok {
		used += (blocks*512 + pageSize - 1) / pageSize
	} else {
		used += fs.fileBlocksSlow() * 512 / pageSize
	}
	return used
}

// fileBlocksSlow sums the regular files' blocks, for a store that cannot
// tell its own use (the fallback directory, shared with the host; an
// unlimited store).
func (fs *Filesystem) fileBlocksSlow() int64 {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	var n int64
	var st unix.Stat_t
	for i := fs.live; i != nil; i = i.nextLive {
		if i.isRegular() && fs.store.statFile(i.ino, &st) == nil {
			n += st.Blocks
		}
	}
	return n
}

// Root returns the root directory; its Parent is nil.
func (fs *Filesystem) Root() vfs.Dentry {
	return fs.root
}

// Usage reports the number of live inodes (the root and unlinked-but-open
// inodes included) and the bytes of data held, counted in whole pages
// (allocated pages * 4096, as Linux's used_blocks), so a 1-byte file uses
// 4096 bytes and holes use nothing.
func (fs *Filesystem) Usage() (inodes int64, bytes int64) {
	fs.mu.RLock()
	inodes = fs.inodes
	fs.mu.RUnlock()
	return inodes, fs.usedTotal() * pageSize
}

// Statfs fills st as shmem_statfs does. Like a Linux tmpfs mounted with
// size=0 or nr_inodes=0, an unlimited resource reports 0 total and 0 free
// (df shows it as "-"). Flags holds ST_VALID|ST_RELATIME, what statfs on a
// default tmpfs mount reports; the caller may overwrite it with its mount's
// flags.
func (fs *Filesystem) Statfs(st *unix.Statfs_t) {
	*st = unix.Statfs_t{
		Type:    unix.TMPFS_MAGIC,
		Bsize:   pageSize,
		Frsize:  pageSize,
		Namelen: unix.NAME_MAX,
		Flags:   stValid | unix.ST_RELATIME,
	}
	// Linux derives f_fsid from the superblock's random UUID; the device
	// number is as unique within the sandbox and stable.
	st.Fsid.Val[0] = int32(uint32(fs.opts.Dev))
	st.Fsid.Val[1] = int32(uint32(fs.opts.Dev >> 32))
	if maxPages := fs.maxPages.Load(); maxPages > 0 {
		used := fs.usedTotal()
		st.Blocks = uint64(maxPages)
		st.Bfree = uint64(max(maxPages-used, 0))
		st.Bavail = st.Bfree
	}
	fs.mu.RLock()
	maxInodes, used := fs.maxInodes, fs.ispaceUsedLocked()
	fs.mu.RUnlock()
	if maxInodes > 0 {
		st.Files = uint64(maxInodes)
		st.Ffree = uint64(max(maxInodes*bogoInodeSize-used, 0) / bogoInodeSize)
	}
}

// Inode space. Since Linux 6.6 tmpfs's nr_inodes limits a budget of bytes
// (sbinfo->free_ispace, nr_inodes * BOGO_INODE_SIZE): each inode slot
// takes BOGO_INODE_SIZE, and each extended attribute the space its name
// and value take (simple_xattr_space), so that xattrs cannot hold memory
// past the mount's limits; statfs's f_ffree is the budget left, in
// inodes. Measured on /dev/shm-like mounts: nr_inodes=10 holds 7 xattrs
// of 1000 bytes on one file, or 140 of 10 bytes.
//
// simpleXattrSize is sizeof(struct simple_xattr) on x86-64.
const simpleXattrSize = 40

// xattrSpace is simple_xattr_space: what an attribute of name (the full
// name, "user.x") and value takes from the budget.
func xattrSpace(name string, value []byte) int64 {
	return simpleXattrSize + int64(len(name)) + int64(len(value))
}

// ispaceUsedLocked is the inode space in use. fs.mu must be held.
func (fs *Filesystem) ispaceUsedLocked() int64 {
	return fs.islots*bogoInodeSize + fs.xattrSpace
}

// reserveSlotLocked takes one inode slot, as shmem_reserve_inode: ENOSPC
// when nr_inodes' budget is exhausted. fs.mu must be held for writing.
func (fs *Filesystem) reserveSlotLocked() error {
	if fs.maxInodes > 0 && fs.ispaceUsedLocked()+bogoInodeSize > fs.maxInodes*bogoInodeSize {
		return unix.ENOSPC
	}
	fs.islots++
	return nil
}

// reservePage accounts one more page of the sentry's own (a long
// symlink's target), as shmem_inode_acct_blocks: false when the size limit
// is reached. The store, where file data lives, shrinks by that page, so
// that files and symlinks share the limit as on Linux (its remount fails
// when it already holds more).
func (fs *Filesystem) reservePage() bool {
	fs.pageMu.Lock()
	defer fs.pageMu.Unlock()
	used := fs.usedPages.Load()
	if maxPages := fs.maxPages.Load(); maxPages > 0 {
		if used+1 > maxPages || fs.store.setSize((maxPages-used-1)*pageSize) != nil {
			return false
		}
	}
	fs.usedPages.Store(used + 1)
	return true
}

// unreservePages returns n of the sentry's pages to the mount (and to the
// store).
func (fs *Filesystem) unreservePages(n int64) {
	if n == 0 {
		return
	}
	fs.pageMu.Lock()
	defer fs.pageMu.Unlock()
	used := fs.usedPages.Add(-n)
	if maxPages := fs.maxPages.Load(); maxPages > 0 {
		fs.store.setSize((maxPages - used) * pageSize)
	}
}

// pagesFor is the number of pages that size bytes span, without the
// overflow of rounding up near math.MaxInt64.
func pagesFor(size int64) int64 {
	n := size / pageSize
	if size%pageSize != 0 {
		n++
	}
	return n
}

// newInodeLocked makes a live inode with the next inode number, mode (type
// and permission bits) and owner, all times set to now, one link for files
// and two for directories. The caller has reserved its inode slot. fs.mu
// must be held for writing.
func (fs *Filesystem) newInodeLocked(mode, uid, gid uint32, now int64) (*inode, error) {
	if mode&unix.S_IFMT == unix.S_IFREG {
		// The backing comes with the inode: its times are the file's.
		if err := fs.store.createFile(fs.nextIno, mode, uid, gid); err != nil {
			fs.nextIno++
			return nil, err
		}
	}
	i := &inode{
		fs:    fs,
		ino:   fs.nextIno,
		ftype: mode & unix.S_IFMT,
		mode:  mode,
		uid:   uid,
		gid:   gid,
		atime: now,
		mtime: now,
		ctime: now,
		btime: now,
		gen:   newGeneration(),
	}
	fs.nextIno++
	if i.ftype == unix.S_IFDIR {
		i.nlink.Store(2)
		i.size = emptyDirSize
		i.dir = &dirData{entries: make(map[string]*dentry), nextPos: firstEntryPos}
	} else {
		i.nlink.Store(1)
	}
	fs.linkLiveLocked(i)
	return i, nil
}

// linkLiveLocked adds i to the live list and the inode count.
func (fs *Filesystem) linkLiveLocked(i *inode) {
	i.prevLive = nil
	i.nextLive = fs.live
	if fs.live != nil {
		fs.live.prevLive = i
	}
	fs.live = i
	fs.inodes++
	i.freed = false
}

// freeLocked releases an inode that has neither links nor open references,
// as shmem_evict_inode does: its data pages go back to the mount, it leaves
// the live list and gives back its inode slot. It is idempotent so that a
// racing IncRef that revived the inode can free it again. fs.mu must be held
// for writing.
func (fs *Filesystem) freeLocked(i *inode) {
	i.releaseData()
	if i.freed {
		return
	}
	i.freed = true
	if i.prevLive != nil {
		i.prevLive.nextLive = i.nextLive
	} else {
		fs.live = i.nextLive
	}
	if i.nextLive != nil {
		i.nextLive.prevLive = i.prevLive
	}
	i.prevLive, i.nextLive = nil, nil
	delete(fs.handles, i.ino)
	fs.inodes--
	fs.islots--
	i.mu.Lock()
	for name, v := range i.xattrs {
		fs.xattrSpace -= xattrSpace(name, v)
	}
	i.xattrs = nil
	i.mu.Unlock()
}

// maybeFreeLocked frees i if it has no links and no open references left.
// fs.mu must be held for writing.
func (fs *Filesystem) maybeFreeLocked(i *inode) {
	if i.nlink.Load() == 0 && i.refs.Load() == 0 {
		fs.freeLocked(i)
	}
}
