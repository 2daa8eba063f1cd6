package tmpfs

import (
	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// Rename implements vfs.Dentry.Rename, following the checks of
// do_renameat2, lock_rename's ancestry traps and vfs_rename, then
// shmem_rename2 (simple_offset_rename and simple_offset_rename_exchange for
// the directory positions).
//
// RENAME_WHITEOUT is refused with EINVAL: this tmpfs has no device inodes
// to leave behind (Linux would create a 0/0 character device).
func (d *dentry) Rename(oldName string, newParent vfs.Dentry, newName string, flags uint32, c *vfs.Credentials) error {
	const known = unix.RENAME_NOREPLACE | unix.RENAME_EXCHANGE | unix.RENAME_WHITEOUT
	exchange := flags&unix.RENAME_EXCHANGE != 0
	if flags&^known != 0 ||
		(exchange && flags&(unix.RENAME_NOREPLACE|unix.RENAME_WHITEOUT) != 0) ||
		flags&unix.RENAME_WHITEOUT != 0 {
		return unix.EINVAL
	}
	nd, ok := newParent.(*dentry)
	if !ok || nd == nil || nd.fs != d.fs {
		return unix.EXDEV
	}
	if !d.inode.isDir() || !nd.inode.isDir() {
		return unix.ENOTDIR
	}

	fs := d.fs
	fs.mu.Lock()
	defer fs.mu.Unlock()

	old := d.inode.dir.entries[oldName]
	if old == nil {
		return unix.ENOENT
	}
	target := nd.inode.dir.entries[newName]
	if target != nil && flags&unix.RENAME_NOREPLACE != 0 {
		return unix.EEXIST
	}
	if target == nil && exchange {
		return unix.ENOENT
	}
	// lock_rename's trap: the child of the common ancestor on the way to
	// the other directory. Moving a directory under itself is EINVAL;
	// replacing an ancestor of the source is ENOTEMPTY (EINVAL when
	// exchanging).
	if d != nd {
		if isAncestorOrSelf(old, nd) {
			return unix.EINVAL
		}
		if target != nil && isAncestorOrSelf(target, d) {
			if exchange {
				return unix.EINVAL
			}
			return unix.ENOTEMPTY
		}
	}
	// vfs_rename: renaming a link onto another link of the same inode does
	// nothing and succeeds.
	if target != nil && target.inode == old.inode {
		return nil
	}
	isDir := old.inode.isDir()
	if err := d.mayDeleteLocked(old, isDir, c); err != nil {
		return err
	}
	var err error
	switch {
	case target == nil:
		err = nd.mayCreateLocked(newName, c)
	case exchange:
		err = nd.mayDeleteLocked(target, target.inode.isDir(), c)
	default:
		err = nd.mayDeleteLocked(target, isDir, c)
	}
	if err != nil {
		return err
	}
	// A directory moving to another parent has its ".." rewritten, which
	// needs write permission on it.
	if d != nd {
		if isDir {
			if err := old.inode.CheckPermission(c, vfs.MayWrite); err != nil {
				return err
			}
		}
		if exchange && target.inode.isDir() {
			if err := target.inode.CheckPermission(c, vfs.MayWrite); err != nil {
				return err
			}
		}
	}

	now := nowNanos()
	if exchange {
		fs.mirrorRenameLocked(d, oldName, nd, newName, true)
		fs.exchangeLocked(d, old, nd, target, now)
		return nil
	}
	if target != nil && target.inode.isDir() && len(target.inode.dir.entries) != 0 {
		return unix.ENOTEMPTY // shmem_rename2: !simple_empty(new_dentry)
	}
	if target == nil && isDir && d != nd && nd.inode.nlink.Load() >= maxLinks {
		return unix.EMLINK
	}

	fs.mirrorRenameLocked(d, oldName, nd, newName, false)
	d.removeEntryLocked(old, now)
	if target != nil {
		// shmem_unlink of the victim; for a directory also the second
		// drop_nlink of the victim and the one of old_dir.
		nd.removeEntryLocked(target, now)
		fs.dropLinkLocked(target.inode, now)
		if isDir {
			d.inode.nlink.Add(^uint32(0))
		}
	} else if isDir {
		d.inode.nlink.Add(^uint32(0))
		nd.inode.nlink.Add(1)
	}
	nd.insertEntryLocked(newName, old, now)
	old.inode.touchCtimeMoved(now) // simple_rename_timestamp
	return nil
}

// exchangeLocked swaps old (in od) and target (in nd), as
// simple_offset_rename_exchange: each name keeps its position and its
// directory's size, the two dentries trade parents and names, link counts
// move when a directory trades places with a non-directory across parents
// (simple_rename_exchange), and both directories and both inodes get a new
// ctime (and the directories a new mtime). fs.mu must be held for writing.
func (fs *Filesystem) exchangeLocked(od, old, nd, target *dentry, now int64) {
	oldName, newName := old.name, target.name
	ko := od.inode.dir.search(old.pos)
	kt := nd.inode.dir.search(target.pos)
	od.inode.dir.order[ko].d = target
	nd.inode.dir.order[kt].d = old
	od.inode.dir.entries[oldName] = target
	nd.inode.dir.entries[newName] = old
	old.parent, target.parent = nd, od
	old.name, target.name = newName, oldName
	old.pos, target.pos = target.pos, old.pos

	if od != nd && old.inode.isDir() != target.inode.isDir() {
		if old.inode.isDir() {
			od.inode.nlink.Add(^uint32(0))
			nd.inode.nlink.Add(1)
		} else {
			nd.inode.nlink.Add(^uint32(0))
			od.inode.nlink.Add(1)
		}
	}
	for _, dir := range [2]*inode{od.inode, nd.inode} {
		dir.mu.Lock()
		dir.mtime, dir.ctime = now, now
		dir.mu.Unlock()
	}
	old.inode.touchCtimeMoved(now)
	target.inode.touchCtimeMoved(now)
}

// isAncestorOrSelf reports whether a is d or one of d's ancestors. fs.mu
// must be held.
func isAncestorOrSelf(a, d *dentry) bool {
	for ; d != nil; d = d.parent {
		if d == a {
			return true
		}
	}
	return false
}
