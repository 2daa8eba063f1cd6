package vfs

import "golang.org/x/sys/unix"

// Mount is one mounted file system instance at a point in the guest's path
// tree. Point is absolute and clean ("/tmp").
type Mount struct {
	Point string
	Root  Dentry
	// ID is the mount id statx reports (stx_mnt_id).
	ID uint64
	// FS is the implementation, for statfs and usage figures.
	FS Filesystem
	// Source, Options and SuperOptions are what /proc/self/mountinfo
	// shows for the mount.
	Source, Options, SuperOptions string
}

// Filesystem is what a mount needs of its file system beyond the tree.
type Filesystem interface {
	Root() Dentry
	Usage() (inodes, bytes int64)
	Statfs(st *unix.Statfs_t)
	Check() error
	// Release frees what the file system holds on the host once the
	// guest is gone.
	Release()
}

// PathOf is the absolute guest path of d in mount m (d_path).
func PathOf(m *Mount, d Dentry) string {
	var parts []string
	for ; d != nil && d.Parent() != nil; d = d.Parent() {
		parts = append(parts, d.Name())
	}
	p := m.Point
	for i := len(parts) - 1; i >= 0; i-- {
		p += "/" + parts[i]
	}
	return p
}
