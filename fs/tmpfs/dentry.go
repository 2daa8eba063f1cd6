package tmpfs

import (
	"sort"

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
	// order holds the same dentries sorted by pos, for IterDirents.
	order []*dentry
	// nextPos is the position the next entry gets.
	nextPos int64
}

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
	dd.order = append(dd.order, child)
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
	k := dd.search(child.pos)
	last := len(dd.order) - 1
	copy(dd.order[k:], dd.order[k+1:])
	dd.order[last] = nil // do not pin the removed dentry
	dd.order = dd.order[:last]
	if cap(dd.order) > 64 && len(dd.order) < cap(dd.order)/4 {
		// Give memory back after a directory shrinks a lot.
		dd.order = append([]*dentry(nil), dd.order...)
	}
	d.inode.mu.Lock()
	d.inode.size -= bogoDirentSize
	d.inode.mtime, d.inode.ctime = now, now
	d.inode.mu.Unlock()
}

// search returns the index in order of the first entry at position >= pos.
func (dd *dirData) search(pos int64) int {
	return sort.Search(len(dd.order), func(k int) bool { return dd.order[k].pos >= pos })
}

// direntType is the d_type of a mode, as fs_umode_to_dtype.
func direntType(mode uint32) uint8 {
	return uint8((mode & unix.S_IFMT) >> 12)
}

// direntBatch is how many entries IterDirents copies out per lock hold.
const direntBatch = 32

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
		limit := int64(revBase)
		if off > firstEntryPos {
			limit = revBase - (off - firstEntryPos)
		}
		for k := d.inode.dir.search(limit) - 1; k >= 0 && n < direntBatch; k-- {
			e := order[k]
			batch[n] = direntCopy{e.inode.ino, firstEntryPos + (revBase - e.pos), direntType(e.inode.ftype), e.name}
			n++
		}
		d.fs.mu.RUnlock()
		if n == 0 {
			return nil
		}
		for k := range n {
			if !fn(batch[k].ino, batch[k].next, batch[k].typ, batch[k].name) {
				return nil
			}
		}
		off = batch[n-1].next
	}
}
