package tmpfs

import (
	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// Read-only and the other mount flags. A guest's mount is one mount of
// one file system, so the superblock's read-only state and the mount's
// are the same here: readOnly. The guest's descriptors are opens of the
// store's backings and write to them untrapped, so the flags are applied
// to the store's own mount as well (mount_setattr): the host then refuses
// writes through the guest's descriptors and maps as Linux refuses them
// on a read-only tmpfs, and it is the host's mnt_hold_writers that fails a
// remount read-only with EBUSY while a backing is open for writing (or
// mapped through a description opened for writing), as Linux's
// sb_prepare_remount_readonly.

// SetFlags implements vfs.Remounter: flags are mount(2)'s MS_RDONLY,
// MS_NOEXEC, MS_NOATIME, MS_NODIRATIME, MS_RELATIME (and MS_NOSUID,
// MS_NODEV, which the store always has).
func (fs *Filesystem) SetFlags(flags uint32) error {
	if flags&vfs.MountReadOnly != 0 {
		// A read-only store takes no new directory backings: make
		// those not yet made, so that the guest can still open every
		// directory.
		fs.mu.RLock()
		for i := fs.live; i != nil; i = i.nextLive {
			if i.isDir() && i.nlink.Load() > 0 {
				fs.store.makeDir(i)
			}
		}
		fs.mu.RUnlock()
	}
	if fs.store.dir == "" {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		set := func(cond bool, bit uint64) {
			if cond {
				attr.Attr_set |= bit
			} else {
				attr.Attr_clr |= bit
			}
		}
		set(flags&vfs.MountReadOnly != 0, unix.MOUNT_ATTR_RDONLY)
		set(flags&vfs.MountNoExec != 0, unix.MOUNT_ATTR_NOEXEC)
		set(flags&vfs.MountNoDirAtime != 0, unix.MOUNT_ATTR_NODIRATIME)
		attr.Attr_clr |= unix.MOUNT_ATTR__ATIME
		switch {
		case flags&vfs.MountNoAtime != 0:
			attr.Attr_set |= unix.MOUNT_ATTR_NOATIME
		case flags&vfs.MountRelatime != 0:
			attr.Attr_set |= unix.MOUNT_ATTR_RELATIME
		default:
			attr.Attr_set |= unix.MOUNT_ATTR_STRICTATIME
		}
		if err := unix.MountSetattr(fs.store.root, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			return err
		}
	} else if flags&vfs.MountReadOnly != 0 && !fs.readOnly.Load() {
		// The fallback store is a directory of the host's: its
		// writers cannot be counted, nor its mount changed.
		return unix.EBUSY
	}
	fs.readOnly.Store(flags&vfs.MountReadOnly != 0)
	return nil
}

// ReadOnly reports a read-only file system.
func (fs *Filesystem) ReadOnly() bool { return fs.readOnly.Load() }

// makeDir makes directory inode i's backing if it is not there. fs.mu must
// be held.
func (s *store) makeDir(i *inode) {
	var buf [24]byte
	unix.Mkdirat(s.root, dirName(&buf, i), 0o700)
}

// ReadOnly reports that the inode's file system is read-only, for the
// callers' mnt_want_write.
func (i *inode) ReadOnly() bool { return i.fs.readOnly.Load() }

// StoreDev is the host device of the store's backings (a guest's mapping
// of a file shows it in /proc/PID/maps); false for the fallback store,
// whose device is the host's.
func (fs *Filesystem) StoreDev() (uint64, bool) {
	if fs.store.dir != "" || fs.store.closed {
		return 0, false
	}
	var st unix.Stat_t
	if unix.Fstat(fs.store.root, &st) != nil {
		return 0, false
	}
	return st.Dev, true
}

// resize is shmem_reconfigure's size= and nr_inodes=, each if given (in
// pages and inodes; 0 unlimited): a limit on a mount that has none, or
// below what is in use, is EINVAL and changes nothing.
func (fs *Filesystem) resize(pages int64, pagesSet bool, inodes int64, inodesSet bool) error {
	// The store's figures before the tree's lock (usedTotal may take it).
	used := fs.usedTotal()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.pageMu.Lock()
	defer fs.pageMu.Unlock()
	if pagesSet && pages > 0 && (fs.maxPages.Load() == 0 || used > pages) {
		// "Cannot retroactively limit size", "Too small a size for
		// current use".
		return unix.EINVAL
	}
	if inodesSet && inodes > 0 && (fs.maxInodes == 0 || fs.ispaceUsedLocked() > inodes*bogoInodeSize) {
		return unix.EINVAL
	}
	if pagesSet {
		size := int64(0)
		if pages > 0 {
			size = (pages - fs.usedPages.Load()) * pageSize
		}
		if err := fs.store.setSize(size); err != nil {
			return unix.EINVAL
		}
		fs.maxPages.Store(pages)
	}
	if inodesSet {
		fs.maxInodes = inodes
	}
	return nil
}
