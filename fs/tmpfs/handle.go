package tmpfs

import (
	"math/rand/v2"

	"sentry/sentry/vfs"
)

// File handles. Linux's tmpfs exports its files (shmem_export_ops): a
// handle is the inode's generation and number (shmem_encode_fh), and an
// inode becomes findable by handle only once one was made for it (it is
// put in the inode hash at its first encode). A handle finds the inode
// while it lives, linked or held open (shmem_fh_to_dentry, through
// shmem_find_alias: a hashed alias first, else any), and is stale once
// the inode is freed or when the generation does not match.

var (
	_ vfs.HandleExporter = (*Filesystem)(nil)
	_ vfs.BackingStore   = (*Filesystem)(nil)
)

// newGeneration is a new inode's i_generation: random, as
// shmem_get_inode's get_random_u32, so a handle cannot be guessed from an
// inode number.
func newGeneration() uint32 {
	return rand.Uint32()
}

// EncodeHandle implements vfs.HandleExporter.EncodeHandle.
func (fs *Filesystem) EncodeHandle(d vfs.Dentry) (ino uint64, gen uint32) {
	td := d.(*dentry)
	i := td.inode
	fs.mu.Lock()
	if !i.freed {
		if fs.handles == nil {
			fs.handles = make(map[uint64]*dentry)
		}
		fs.handles[i.ino] = td
	}
	fs.mu.Unlock()
	return i.ino, i.gen
}

// DecodeHandle implements vfs.HandleExporter.DecodeHandle.
func (fs *Filesystem) DecodeHandle(ino uint64, gen uint32) (vfs.Dentry, bool) {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	d, ok := fs.handles[ino]
	if !ok || d.inode.freed || d.inode.gen != gen {
		return nil, false
	}
	if fs.linkedLocked(d) || d.inode.nlink.Load() == 0 {
		// A linked name, or the unlinked name an open file still has
		// (d_find_any_alias).
		return d, true
	}
	// The name the handle was made from is gone but another link is
	// left: find it (d_find_alias).
	if a := fs.findAliasLocked(fs.root, d.inode); a != nil {
		return a, true
	}
	return d, true
}

// linkedLocked reports whether d is still in its parent's directory (the
// root always is). fs.mu must be held.
func (fs *Filesystem) linkedLocked(d *dentry) bool {
	if d == fs.root {
		return true
	}
	return d.parent != nil && d.parent.inode.dir != nil && d.parent.inode.dir.entries[d.name] == d
}

// findAliasLocked looks for a linked dentry of i under dir. fs.mu must be
// held.
func (fs *Filesystem) findAliasLocked(dir *dentry, i *inode) *dentry {
	for _, s := range dir.inode.dir.order {
		c := s.d
		if c == nil {
			continue // a tombstone
		}
		if c.inode == i {
			return c
		}
		if c.inode.isDir() {
			if a := fs.findAliasLocked(c, i); a != nil {
				return a
			}
		}
	}
	return nil
}

// BackingDev implements vfs.BackingStore.BackingDev.
func (fs *Filesystem) BackingDev() uint64 {
	return fs.store.dev
}
