package tmpfs

import (
	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// Directory positions for IterDirents: "." is at 0, ".." at 1, entries get
// positions from firstEntryPos upward, never reused within a directory, so
// a cursor stays valid however the directory changes (the guarantee Linux's
// simple_offset gives tmpfs directories).
const (
	dotPos        = 0
	dotDotPos     = 1
	firstEntryPos = 2
	// revBase encodes descending cursors: the cursor after the entry at
	// position p is firstEntryPos + revBase - p, resuming below p.
	revBase = 1 << 62
)

// dentry is a name bound to an inode. A directory inode has exactly one
// dentry; a non-directory has one per hard link. A dentry keeps its identity
// across rename (its parent and name change, as d_move), and keeps its last
// parent and name after being unlinked.
type dentry struct {
	fs *Filesystem
	// inode is immutable.
	inode *inode

	// parent, name and pos are protected by fs.mu. parent is nil for the
	// root. pos is the position in parent's directory.
	parent *dentry
	name   string
	pos    int64
}

// dirData is a directory's entries, protected by fs.mu.
type dirData struct {
	// entries maps names to dentries for Lookup.
	entries map[string]*dentry
	// order holds the same dentries sorted by pos, for IterDirents, and
	// tombstones (slots whose d is nil) where entries were removed: a
	// removal only clears its slot, so unlinking a large directory's
	// entries oldest first is not quadratic (as Linux's offset map, an
	// xarray/maple tree keyed by offset, erases one key). Tombstones are
	// squeezed out once they outnumber the entries (and minTombstones),
	// which costs each removal O(1) amortized; positions are keys, not
	// indices, so compaction leaves every cursor valid. Tombstones number
	// len(order) - len(entries).
	order []dirSlot
	// nextPos is the position the next entry gets.
	nextPos int64
}

// dirSlot is one slot of dirData.order: an entry and its position, or a
// tombstone (d nil) that keeps the position of a removed entry so that
// order stays searchable by position without pinning the dentry.
type dirSlot struct {
	pos int64
	d   *dentry
}

// minTombstones is how many tombstones a directory keeps however few
// entries it has, so that a small directory's churn (a file made and
// removed over and over) is not compacted on every other removal.
const minTombstones = 32

var _ vfs.Dentry = (*dentry)(nil)

// Inode implements vfs.Dentry.Inode.
func (d *dentry) Inode() vfs.Inode {
	return d.inode
}

// Name implements vfs.Dentry.Name.
func (d *dentry) Name() string {
	d.fs.mu.RLock()
	n := d.name
	d.fs.mu.RUnlock()
	return n
}

// Parent implements vfs.Dentry.Parent.
func (d *dentry) Parent() vfs.Dentry {
	d.fs.mu.RLock()
	p := d.parent
	d.fs.mu.RUnlock()
	if p == nil {
		return nil // an untyped nil, not a nil *dentry
	}
	return p
}

// Lookup implements vfs.Dentry.Lookup (shmem uses simple_lookup: the dcache
// is the directory).
func (d *dentry) Lookup(name string) (vfs.Dentry, error) {
	if !d.inode.isDir() {
		return nil, unix.ENOTDIR
	}
	d.fs.mu.RLock()
	child := d.inode.dir.entries[name]
	d.fs.mu.RUnlock()
	if child == nil {
		return nil, unix.ENOENT
	}
	return child, nil
}

// insertLocked adds child under name to directory d: a new position at the
// end, the bogo size, and the directory's mtime and ctime (shmem_mknod,
// shmem_link). The link count of d for a subdirectory is the caller's.
// fs.mu must be held for writing.
func (d *dentry) insertLocked(name string, child *dentry, now int64) {
	d.insertEntryLocked(name, child, now)
	if d.inode.watched.Load() {
		d.fs.store.mirrorCreate(d.inode, name, child.inode)
	}
}

// insertEntryLocked is insertLocked without the dnotify event (rename
// makes its own).
func (d *dentry) insertEntryLocked(name string, child *dentry, now int64) {
	dd := d.inode.dir
	child.parent = d
	child.name = name
	child.pos = dd.nextPos
	dd.nextPos++
	dd.entries[name] = child
	dd.order = append(dd.order, dirSlot{child.pos, child})
	d.inode.mu.Lock()
	d.inode.size += bogoDirentSize
	d.inode.mtime, d.inode.ctime = now, now
	d.inode.mu.Unlock()
}

// mirrorDeleteLocked removes child, already out of directory d, from d's
// mirror if d is watched: after the child's own link drop, as vfs_unlink
// raises the child's events (FS_ATTRIB, FS_DELETE_SELF) before its
// parent's FS_DELETE. fs.mu must be held for writing.
func (d *dentry) mirrorDeleteLocked(child *dentry) {
	if d.inode.watched.Load() {
		d.fs.store.mirrorDelete(d.inode, child.name)
	}
}

// removeEntryLocked is removeLocked without the dnotify event.
func (d *dentry) removeEntryLocked(child *dentry, now int64) {
	dd := d.inode.dir
	delete(dd.entries, child.name)
	dd.order[dd.search(child.pos)].d = nil // do not pin the removed dentry
	dd.trimLocked()
	d.inode.mu.Lock()
	d.inode.size -= bogoDirentSize
	d.inode.mtime, d.inode.ctime = now, now
	d.inode.mu.Unlock()
}

// trimLocked drops the tombstones at the end of order (the newest entry
// removed, as a temporary file's create and unlink: free), and compacts
// order once its tombstones outnumber both its entries and minTombstones,
// or once it uses under a quarter of its capacity (giving memory back
// after a directory shrinks a lot). Either is O(len(order)) and comes
// only after at least len(order)/2 removals since the last one. fs.mu must
// be held for writing.
func (dd *dirData) trimLocked() {
	n := len(dd.order)
	for n > 0 && dd.order[n-1].d == nil {
		n--
	}
	clear(dd.order[n:])
	dd.order = dd.order[:n]
	live := len(dd.entries)
	dead := n - live
	switch {
	case cap(dd.order) > 64 && n < cap(dd.order)/4:
		dd.order = appendLive(make([]dirSlot, 0, live), dd.order)
	case dead > minTombstones && dead > live:
		old := dd.order
		dd.order = appendLive(old[:0], old)
		clear(old[live:])
	}
}

// appendLive appends the entries of from (tombstones left out) to to,
// which may share from's array at the same start.
func appendLive(to, from []dirSlot) []dirSlot {
	for _, s := range from {
		if s.d != nil {
			to = append(to, s)
		}
	}
	return to
}

// search returns the index in order of the first slot at position >= pos.
func (dd *dirData) search(pos int64) int {
	lo, hi := 0, len(dd.order)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if dd.order[m].pos < pos {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// direntType is the d_type of a mode, as fs_umode_to_dtype.
func direntType(mode uint32) uint8 {
	return uint8((mode & unix.S_IFMT) >> 12)
}

// direntBatch is how many entries IterDirents copies out per lock hold,
// and direntScan how many slots of order (entries and tombstones) it looks
// at, so that a listing through many tombstones does not hold fs.mu long.
const (
	direntBatch = 32
	direntScan  = 8 * direntBatch
)

type direntCopy struct {
	ino  uint64
	next int64
	typ  uint8
	name string
}

// IterDirents implements vfs.Dentry.IterDirents. fn is called without any
// file system lock held (entries are copied out in small batches), so it
// may call back into the file system. A directory that has been removed
// lists nothing and fails with ENOENT, as iterate_dir does for IS_DEADDIR;
// otherwise each call touches the directory's atime (relatime), as
// iterate_dir's file_accessed does for every getdents.
func (d *dentry) IterDirents(off int64, fn func(ino uint64, next int64, typ uint8, name string) bool) error {
	if !d.inode.isDir() {
		return unix.ENOTDIR
	}
	if off < 0 {
		return unix.EINVAL
	}
	if d.inode.nlink.Load() != 0 {
		now := nowNanos()
		d.inode.mu.Lock()
		d.inode.touchAtimeLocked(now)
		d.inode.mu.Unlock()
	}
	var batch [direntBatch]direntCopy
	// limit is the position the walk resumes below: the cursor's, then
	// that of the last slot looked at, entry or tombstone.
	limit := int64(revBase)
	if off > firstEntryPos {
		limit = revBase - (off - firstEntryPos)
	}
	for {
		d.fs.mu.RLock()
		if d.inode.nlink.Load() == 0 {
			d.fs.mu.RUnlock()
			return unix.ENOENT
		}
		n := 0
		if off <= dotPos {
			batch[n] = direntCopy{d.inode.ino, dotDotPos, unix.DT_DIR, "."}
			n++
		}
		if off <= dotDotPos {
			p := d.parent
			if p == nil {
				p = d // the root's ".." is itself
			}
			batch[n] = direntCopy{p.inode.ino, firstEntryPos, unix.DT_DIR, ".."}
			n++
		}
		// Linux 6.18 tmpfs lists the newest entries first: walk the
		// positions downwards from the cursor's limit.
		order := d.inode.dir.order
		k := d.inode.dir.search(limit) - 1
		for scan := 0; k >= 0 && n < direntBatch && scan < direntScan; k, scan = k-1, scan+1 {
			s := order[k]
			limit = s.pos
			if s.d == nil {
				continue
			}
			e := s.d
			batch[n] = direntCopy{e.inode.ino, firstEntryPos + (revBase - e.pos), direntType(e.inode.ftype), e.name}
			n++
		}
		d.fs.mu.RUnlock()
		if n == 0 && k < 0 {
			return nil
		}
		for k := range n {
			if !fn(batch[k].ino, batch[k].next, batch[k].typ, batch[k].name) {
				return nil
			}
		}
		off = firstEntryPos // "." and ".." are behind
	}
}
