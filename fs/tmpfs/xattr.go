package tmpfs

import (
	"sort"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

var _ vfs.XattrInode = (*inode)(nil)

// Getxattr implements vfs.XattrInode.
func (i *inode) Getxattr(name string) ([]byte, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	v, ok := i.xattrs[name]
	return v, ok
}

// Setxattr implements vfs.XattrInode as simple_xattr_set, then
// shmem_xattr_handler_set's ctime update.
//
// The new value must fit the mount's inode space before the old one's
// goes back (shmem_xattr_handler_set reserves first): ENOSPC.
func (i *inode) Setxattr(name string, value []byte, flags uint32) error {
	now := nowNanos()
	fs := i.fs
	fs.mu.Lock()
	defer fs.mu.Unlock()
	i.mu.Lock()
	defer i.mu.Unlock()
	old, exists := i.xattrs[name]
	switch {
	case exists && flags&unix.XATTR_CREATE != 0:
		return unix.EEXIST
	case !exists && (flags&unix.XATTR_REPLACE != 0 || value == nil):
		return unix.ENODATA
	}
	if value != nil {
		need := xattrSpace(name, value)
		if fs.maxInodes > 0 && fs.ispaceUsedLocked()+need > fs.maxInodes*bogoInodeSize {
			return unix.ENOSPC
		}
		fs.xattrSpace += need
	}
	if exists {
		fs.xattrSpace -= xattrSpace(name, old)
	}
	if value == nil {
		delete(i.xattrs, name)
	} else {
		if i.xattrs == nil {
			i.xattrs = map[string][]byte{}
		}
		i.xattrs[name] = append([]byte(nil), value...)
	}
	i.ctime = now
	if i.isRegular() {
		i.fs.store.bumpCtime(i.ino)
	}
	return nil
}

// Listxattr implements vfs.XattrInode: simple_xattr_list walks an rbtree
// ordered by name.
func (i *inode) Listxattr() []string {
	i.mu.Lock()
	names := make([]string, 0, len(i.xattrs))
	for n := range i.xattrs {
		names = append(names, n)
	}
	i.mu.Unlock()
	sort.Strings(names)
	return names
}
