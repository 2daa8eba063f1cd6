package vfs

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

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
	// shows for the mount (for a guest's mount, Options and the rw/ro
	// word of SuperOptions follow Flags).
	Source, Options, SuperOptions string

	// Parent and MountPoint place a mount the guest made with mount(2)
	// on a directory of another sentry mount (Parent's dentry
	// MountPoint, as Linux's mnt_parent and mnt_mountpoint); nil for
	// the sandbox's own mounts, which sit on host directories.
	Parent     *Mount
	MountPoint Dentry

	// flags are the mount's MS_* flags (MS_RDONLY, MS_NOSUID, ...),
	// for a guest's mount.
	flags atomic.Uint32
	// refs counts the open descriptions of the mount's files, which
	// make it busy (Linux's mnt_count).
	refs atomic.Int64
	// detached is set once umount2(MNT_DETACH) took the mount out of the
	// tree while files of it stayed open.
	detached atomic.Bool
	// superOpts replaces SuperOptions once a remount changed them.
	superOpts atomic.Pointer[string]
	// sbReadOnly is the superblock's read-only state (SB_RDONLY), which
	// mountinfo's super options show: a mount made read-only alone
	// (MS_BIND remount, fsmount's MOUNT_ATTR_RDONLY) leaves it.
	sbReadOnly atomic.Bool
}

// SuperReadOnly reports a read-only superblock.
func (m *Mount) SuperReadOnly() bool { return m.sbReadOnly.Load() }

// SetSuperReadOnly sets it.
func (m *Mount) SetSuperReadOnly(ro bool) { m.sbReadOnly.Store(ro) }

// Super is SuperOptions, as a remount may have changed them.
func (m *Mount) Super() string {
	if p := m.superOpts.Load(); p != nil {
		return *p
	}
	return m.SuperOptions
}

// SetSuperOptions changes the super options mountinfo shows (a remount).
func (m *Mount) SetSuperOptions(s string) { m.superOpts.Store(&s) }

// Mount flags of mount(2) (MS_*), which statfs reports as ST_* (the same
// bits).
const (
	MountReadOnly   = unix.MS_RDONLY
	MountNoSuid     = unix.MS_NOSUID
	MountNoDev      = unix.MS_NODEV
	MountNoExec     = unix.MS_NOEXEC
	MountNoAtime    = unix.MS_NOATIME
	MountNoDirAtime = unix.MS_NODIRATIME
	MountRelatime   = unix.MS_RELATIME
	// MountFlagsMask are the per-mount flags the sentry keeps.
	MountFlagsMask = MountReadOnly | MountNoSuid | MountNoDev | MountNoExec | MountNoAtime | MountNoDirAtime | MountRelatime
)

// Flags are the mount's MS_* flags.
func (m *Mount) Flags() uint32 { return m.flags.Load() }

// SetFlags sets them.
func (m *Mount) SetFlags(f uint32) { m.flags.Store(f & MountFlagsMask) }

// ReadOnly reports a read-only mount: writes fail with EROFS
// (mnt_want_write, sb_permission).
func (m *Mount) ReadOnly() bool { return m != nil && m.flags.Load()&MountReadOnly != 0 }

// Busy reports open descriptions of the mount's files.
func (m *Mount) Busy() bool { return m.refs.Load() > 0 }

// Detached reports a mount umount2(MNT_DETACH) took out of the tree.
func (m *Mount) Detached() bool { return m.detached.Load() }

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

// Remounter is a file system whose mount flags can change (mount(2)
// with MS_REMOUNT): SetFlags applies MS_RDONLY and the others, failing
// with EBUSY, as Linux's sb_prepare_remount_readonly, when a file is
// open for writing.
type Remounter interface {
	SetFlags(flags uint32) error
}

// PathMax is the size of the buffer Linux writes a path into for the
// guest (PATH_MAX, one page, its NUL included): getcwd and the magic
// links of /proc fail with ENAMETOOLONG for a path that does not fit.
const PathMax = unix.PathMax

// PrependPath writes the absolute guest path of d in mount m at the end
// of buf, from d up, across the mounts it sits on, to the root, as
// Linux's prepend_path: it returns where in buf the path begins, or
// ENAMETOOLONG as soon as the path does not fit in buf (the walk up stops
// there, as prepend_name's, so that a deep directory costs no more than
// len(buf) bytes' worth of levels: every level takes at least two).
func PrependPath(buf []byte, m *Mount, d Dentry) (int, error) {
	i := len(buf)
	for {
		for d != nil {
			p := d.Parent()
			if p == nil {
				break
			}
			name := d.Name()
			if i < len(name)+1 {
				return 0, unix.ENAMETOOLONG
			}
			i -= len(name)
			copy(buf[i:], name)
			i--
			buf[i] = '/'
			d = p
		}
		if m.Parent == nil {
			break
		}
		// At a guest mount's root: on to its mount point
		// (mnt_mountpoint in mnt_parent).
		d, m = m.MountPoint, m.Parent
	}
	// A sandbox mount sits on a host directory, Point.
	point := m.Point
	if point == "/" {
		point = ""
	}
	if i < len(point) {
		return 0, unix.ENAMETOOLONG
	}
	i -= len(point)
	copy(buf[i:], point)
	if i == len(buf) {
		// The root itself: "/".
		if i == 0 {
			return 0, unix.ENAMETOOLONG
		}
		i--
		buf[i] = '/'
	}
	return i, nil
}

// PathOf is the whole absolute guest path of d in mount m, however long
// (d_path without the page's limit): what the sentry uses itself, and
// what mountinfo shows (its seq_file grows to fit a path). A path for
// the guest's getcwd or readlink is PrependPath's, within PathMax.
func PathOf(m *Mount, d Dentry) string {
	// The buffer doubles until the path fits: as PrependPath stops at
	// the end of the buffer, the tries together cost twice the last.
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		if i, err := PrependPath(buf, m, d); err == nil {
			return string(buf[i:])
		}
	}
}

// mountKey is a mount point: a dentry in a mount.
type mountKey struct {
	m *Mount
	d Dentry
}

// guestTable is the table of the guest's own mounts. A walk reads it
// without a lock (sync.Map's read path, skipped entirely while the guest
// has no mount); mu serializes the changes.
type guestTable struct {
	// on is the mount on top of each mount point (mountKey -> *Mount).
	on sync.Map
	// n is the number of attached mounts.
	n  atomic.Int32
	mu sync.Mutex
	// all are the attached mounts, in the order they were made
	// (parents before the mounts on them), under mu.
	all []*Mount
}

// GuestMounts are the mounts the guest made and has not unmounted, in
// the order made.
func (v *VirtualFilesystem) GuestMounts() []*Mount {
	v.guest.mu.Lock()
	defer v.guest.mu.Unlock()
	return append([]*Mount(nil), v.guest.all...)
}

// mountedOn is the mount on top of dentry d of mount m, nil if none
// (lookup_mnt).
func (v *VirtualFilesystem) mountedOn(m *Mount, d Dentry) *Mount {
	if v.guest.n.Load() == 0 {
		return nil
	}
	if mm, ok := v.guest.on.Load(mountKey{m, d}); ok {
		return mm.(*Mount)
	}
	return nil
}

// Cross is l, or the root of what is mounted on it, repeatedly
// (follow_mount: a mount stacked on another's root is crossed too).
func (v *VirtualFilesystem) Cross(l Location) Location {
	if l.Mount == nil {
		return l
	}
	for {
		m := v.mountedOn(l.Mount, l.Dentry)
		if m == nil {
			return l
		}
		l = Location{Mount: m, Dentry: m.Root}
	}
}

// Attach mounts m on its MountPoint in its Parent (graft_tree): on top of
// what is mounted there already. ENOSPC when the guest's namespace would
// hold more than max mounts (count_mounts against sysctl_mount_max);
// others are the namespace's mounts the guest did not make here.
func (v *VirtualFilesystem) Attach(m *Mount, max, others int) error {
	v.guest.mu.Lock()
	defer v.guest.mu.Unlock()
	if len(v.guest.all)+others+1 > max {
		return unix.ENOSPC
	}
	k := mountKey{m.Parent, m.MountPoint}
	if _, ok := v.guest.on.Load(k); ok {
		// Only the top of a stack is ever a target: the walk crossed
		// into it.
		return unix.EBUSY
	}
	v.guest.all = append(v.guest.all, m)
	v.guest.on.Store(k, m)
	v.guest.n.Add(1)
	return nil
}

// Detach unmounts m (umount_tree). Without lazy, a mount that is busy
// (busy reports open files and working directories in it) or has mounts
// on it fails with EBUSY, as propagate_mount_busy; with lazy
// (MNT_DETACH), m and the mounts on it leave the tree and their open
// files stay usable. It returns the mounts taken out, m first.
func (v *VirtualFilesystem) Detach(m *Mount, lazy bool, busy func(*Mount) bool) ([]*Mount, error) {
	v.guest.mu.Lock()
	defer v.guest.mu.Unlock()
	if cur, ok := v.guest.on.Load(mountKey{m.Parent, m.MountPoint}); !ok || cur.(*Mount) != m {
		return nil, unix.EINVAL
	}
	gone := map[*Mount]bool{m: true}
	out := []*Mount{m}
	for _, mm := range v.guest.all {
		if mm.Parent != nil && gone[mm.Parent] && !gone[mm] {
			gone[mm] = true
			out = append(out, mm)
		}
	}
	if !lazy && (len(out) > 1 || busy(m)) {
		return nil, unix.EBUSY
	}
	// The mounts on top first, so that a walk never meets a mount
	// whose parent is gone but not it.
	for i := len(out) - 1; i >= 0; i-- {
		mm := out[i]
		mm.detached.Store(true)
		v.guest.on.Delete(mountKey{mm.Parent, mm.MountPoint})
		v.guest.n.Add(-1)
	}
	kept := v.guest.all[:0]
	for _, mm := range v.guest.all {
		if !gone[mm] {
			kept = append(kept, mm)
		}
	}
	clear(v.guest.all[len(kept):])
	v.guest.all = kept
	return out, nil
}

// Mounter makes the file systems a guest mounts with mount(2): a tmpfs
// with the mount's options data (EINVAL for options it refuses), its root
// owned by uid and gid unless the options say otherwise. Reconfigure
// applies a remount's options data to m.
type Mounter interface {
	NewMount(source, data string, uid, gid uint32) (*Mount, error)
	Reconfigure(m *Mount, data string) error
}
