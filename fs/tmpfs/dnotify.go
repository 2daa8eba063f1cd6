package tmpfs

import (
	"strconv"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// Directory notification (dnotify, fcntl F_NOTIFY). A guest's descriptor
// of a directory is an open of the directory's backing "d<ino>" in the
// store, so fcntl F_NOTIFY and F_SETSIG run on the host on that very open
// file: the host keeps the watch (its mask, DN_MULTISHOT, the owner and
// signal of F_SETOWN and F_SETSIG, the guest's descriptor number as
// si_fd) and delivers the signal. What the host cannot see are the
// directory's changes, which the sentry makes in its own tree. So, once
// the guest asked for notification in a directory (Watch), its backing
// mirrors the entries: a hard link of the backing for a regular file, an
// empty file for anything else, made, removed and renamed as the
// sentry's tree changes, under the tree's lock. Each change of the tree
// is then the same change on the host, which raises exactly the fsnotify
// events Linux raises for it (FS_CREATE, FS_DELETE, FS_MOVED_FROM,
// FS_MOVED_TO, FS_RENAME; FS_ATTRIB, FS_MODIFY and FS_ACCESS for a child
// through NotifyChild), and the host's dnotify turns them into signals as
// Linux's does. A regular file opened while its directory is watched is
// opened through its mirror link (OpenHostNamed), so that the guest's
// untrapped reads and writes raise FS_ACCESS and FS_MODIFY there too, as
// fsnotify_parent reports them natively; a descriptor opened before the
// watch reports nothing (Linux's would).

// Watch implements vfs.DirWatcher: from now on the directory's backing
// mirrors its entries. Made before the host registers the watch, the
// mirror's first entries raise no event.
func (d *dentry) Watch() error {
	if !d.inode.isDir() {
		return unix.ENOTDIR
	}
	fs := d.fs
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if d.inode.watched.Load() || d.inode.nlink.Load() == 0 {
		return nil
	}
	fs.watches.Store(true)
	fs.store.makeDir(d.inode)
	for name, child := range d.inode.dir.entries {
		fs.store.mirrorCreate(d.inode, name, child.inode)
	}
	d.inode.watched.Store(true)
	return nil
}

// NotifyChild implements vfs.ChildNotifier: event (DNAttrib, DNModify
// or DNAccess) in the directory holding d, if watched, by the same change
// of d's mirror entry; then, as fsnotify_parent reports to the inode's own
// watch after its parent's, on d's own store entry if it is a watched
// directory or has a stand-in.
func (d *dentry) NotifyChild(event uint32) {
	fs := d.fs
	if !fs.watches.Load() {
		// No directory of the mount was ever watched.
		return
	}
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	d.notifyParentLocked(event)
	var buf [24]byte
	switch {
	case d.inode.isDir() && d.inode.watched.Load():
		// A read of the directory (FS_ACCESS, iterate_dir), a change of
		// its mode or mtime; the backing's own times are no one's.
		fs.store.raiseOn(dirName(&buf, d.inode), event, 0o700)
	case d.inode.standIn.Load():
		fs.store.raiseOn(standInName(&buf, d.inode), event, 0o600)
	}
}

// notifyParentLocked is NotifyChild's event in d's watched parent. fs.mu
// must be held.
func (d *dentry) notifyParentLocked(event uint32) {
	fs := d.fs
	p := d.parent
	if p == nil || !p.inode.watched.Load() || p.inode.dir.entries[d.name] != d {
		return
	}
	var buf [24]byte
	name := dirName(&buf, p.inode) + "/" + d.name
	if !d.inode.isRegular() {
		// An empty directory for a subdirectory (its events carry
		// FS_ISDIR), an empty file for anything else.
		mode := uint32(0o600)
		if d.inode.isDir() {
			mode = 0o700
		}
		fs.store.raiseOn(name, event, mode)
		return
	}
	// The mirror is the file's backing: its times set to what they are
	// raise the event and change nothing but ctime, which the sentry's
	// change moved anyway.
	var st unix.Stat_t
	if unix.Fstatat(fs.store.root, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	switch event {
	case vfs.DNModify:
		ts[0].Nsec = unix.UTIME_OMIT
	case vfs.DNAccess:
		ts[1].Nsec = unix.UTIME_OMIT
	}
	unix.UtimesNanoAt(fs.store.root, name, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// mirrorCreate makes name, of inode child, in directory dir's mirror: a
// subdirectory's is an empty directory, so that inotify's events for it
// carry IN_ISDIR as Linux's do. fs.mu must be held for writing.
func (s *store) mirrorCreate(dir *inode, name string, child *inode) {
	var buf, rbuf [24]byte
	p := dirName(&buf, dir) + "/" + name
	if child.isRegular() && unix.Linkat(s.root, backingName(&rbuf, 'r', child.ino), s.root, p, 0) == nil {
		return
	}
	s.mirrorMake(p, child)
}

// mirrorMake makes an entry of inode child's kind at p, a name in the
// store's root.
func (s *store) mirrorMake(p string, child *inode) {
	if child != nil && child.isDir() {
		unix.Mkdirat(s.root, p, 0o700)
		return
	}
	unix.Mknodat(s.root, p, unix.S_IFREG|0o600, 0)
}

// mirrorRemove removes p, a mirror entry (an empty directory for a
// subdirectory).
func (s *store) mirrorRemove(p string) {
	if unix.Unlinkat(s.root, p, 0) == unix.EISDIR {
		unix.Unlinkat(s.root, p, unix.AT_REMOVEDIR)
	}
}

// OpenHostNamed implements vfs.NamedOpener: a regular file in a watched
// directory is opened through its mirror link there.
func (d *dentry) OpenHostNamed(flags uint32) (int, error) {
	if d.inode.isRegular() && flags&unix.O_PATH == 0 {
		fs := d.fs
		fs.mu.RLock()
		p := d.parent
		if p != nil && p.inode.watched.Load() && p.inode.dir.entries[d.name] == d {
			var buf [24]byte
			name := dirName(&buf, p.inode) + "/" + d.name
			fd, err := unix.Openat(fs.store.root, name, int(flags&hostOpenFlags&^unix.O_DIRECTORY)|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
			fs.mu.RUnlock()
			if err == nil {
				return fd, nil
			}
		} else {
			fs.mu.RUnlock()
		}
	}
	return d.inode.OpenHost(flags)
}

// mirrorDelete removes name from directory dir's mirror. fs.mu must be
// held for writing.
func (s *store) mirrorDelete(dir *inode, name string) {
	var buf [24]byte
	s.mirrorRemove(dirName(&buf, dir) + "/" + name)
}

// mirrorRenameLocked is rename (or exchange) of oldName in od to newName
// in nd in the mirrors of the watched ones: the host's rename raises what
// Linux's does in each (FS_MOVED_FROM and FS_RENAME in the old
// directory, FS_MOVED_TO in the new). A directory that is not watched
// takes part through a name in the store's root. fs.mu must be held for
// writing.
func (fs *Filesystem) mirrorRenameLocked(od *dentry, oldName string, nd *dentry, newName string, exchange bool) {
	ow, nw := od.inode.watched.Load(), nd.inode.watched.Load()
	if !ow && !nw {
		return
	}
	s := fs.store
	var b1, b2 [24]byte
	from := dirName(&b1, od.inode) + "/" + oldName
	to := dirName(&b2, nd.inode) + "/" + newName
	tmp := "m" + strconv.FormatUint(fs.mirrorSeq.Add(1), 10)
	var flags uint
	if exchange {
		flags = unix.RENAME_EXCHANGE
	}
	switch {
	case ow && nw:
		unix.Renameat2(s.root, from, s.root, to, flags)
	case ow:
		// Out of a watched directory: it leaves, and with an exchange
		// another arrives under the old name.
		unix.Renameat2(s.root, from, s.root, tmp, 0)
		if exchange {
			unix.Renameat2(s.root, tmp, s.root, from, 0)
		} else {
			s.mirrorRemove(tmp)
		}
	default:
		// Into a watched directory.
		if exchange {
			unix.Renameat2(s.root, to, s.root, tmp, 0)
			unix.Renameat2(s.root, tmp, s.root, to, 0)
			return
		}
		s.mirrorMake(tmp, od.inode.dir.entries[oldName].inode)
		unix.Renameat2(s.root, tmp, s.root, to, 0)
	}
}

// WatchTarget implements vfs.InotifyTarget: a regular file's events are
// its backing's (the guest's untrapped I/O, the sentry's opens, truncates
// and attribute changes of it), a directory's those of its backing, which
// mirrors its entries from now on (Watch), a symlink's or socket's those
// of its stand-in (below).
func (d *dentry) WatchTarget() (int, error) {
	var buf [24]byte
	switch {
	case d.inode.isRegular():
		// Before the watch is placed, so that the link's FS_ATTRIB is
		// not seen; under the tree's lock, as its renames and its
		// removal (a second name made twice would outlive the file).
		fs := d.fs
		fs.mu.Lock()
		if !d.inode.inotified.Load() {
			var wbuf [24]byte
			unix.Linkat(fs.store.root, backingName(&buf, 'r', d.inode.ino), fs.store.root, altName(&wbuf, d.inode, 'w', 'v'), 0)
			d.inode.inotified.Store(true)
		}
		fs.mu.Unlock()
		return unix.Openat(fs.store.root, backingName(&buf, 'r', d.inode.ino), unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	case d.inode.isDir():
		if err := d.Watch(); err != nil {
			return -1, err
		}
		d.fs.mu.RLock()
		defer d.fs.mu.RUnlock()
		return unix.Openat(d.fs.store.root, dirName(&buf, d.inode), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	case d.inode.ftype == unix.S_IFLNK || d.inode.ftype == unix.S_IFSOCK:
		// Made under the tree's lock, before the watch is placed, as
		// the renames and the removal of the file.
		fs := d.fs
		fs.mu.Lock()
		defer fs.mu.Unlock()
		if d.inode.nlink.Load() == 0 && d.inode.refs.Load() == 0 {
			return -1, unix.ENOENT
		}
		if !d.inode.standIn.Load() {
			if err := fs.store.makeStandIn(d.inode); err != nil {
				return -1, err
			}
			fs.watches.Store(true)
			d.inode.standIn.Store(true)
		}
		return unix.Openat(fs.store.root, standInName(&buf, d.inode), unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	}
	// A FIFO's or a device's opens, reads and writes are on the host's
	// node for it (sentry/host_specials.go), which no stand-in would see.
	return -1, unix.EOPNOTSUPP
}

// A watched regular file's backing has a second name in the store, "w<ino>"
// or "v<ino>", which a rename of the file renames to the other: the host
// raises FS_MOVE_SELF on the backing and moves its ctime, as Linux's rename
// does the file's, and nothing else (the chmod that moves an unwatched
// file's ctime raises FS_ATTRIB). Renaming the backing's own name would
// leave a moment without it for the sentry's other threads. The second
// name goes before the backing's own when the file is freed, so that the
// last unlink raises FS_DELETE_SELF, as Linux's unlink of its last name.

// A watched symlink or socket has no host inode of its own (the guest
// never opens it: a path resolves through a symlink, and connect finds a
// socket's host node): an empty file in the store stands for it, on which
// the sentry raises what Linux raises on such an inode. A change of its
// attributes (NotifyChild) or link count (touchCtime) is FS_ATTRIB, a
// rename FS_MOVE_SELF (the stand-in renamed between its two names), its
// end FS_DELETE_SELF (the stand-in removed when the inode is freed).

// standInName is inode i's stand-in's name, "s<ino>" or "t<ino>". fs.mu
// must be held.
func standInName(buf *[24]byte, i *inode) string { return altName(buf, i, 's', 't') }

// makeStandIn makes inode i's stand-in. fs.mu must be held for writing.
func (s *store) makeStandIn(i *inode) error {
	var buf [24]byte
	err := unix.Mknodat(s.root, standInName(&buf, i), unix.S_IFREG|0o600, 0)
	if err == unix.EEXIST {
		return nil
	}
	return err
}
