package syscalls

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Mounts the guest makes inside the sentry's file systems. A mount(2) of
// a tmpfs whose target is a directory of the sentry's is served as a new
// sentry mount (as gVisor serves it): the walk crosses into it
// (vfs.Attach), /proc/self/mountinfo lists it, statfs reports it, and
// umount2 takes it away. The sandbox's own mounts (--tmpfs) behave as
// locked mounts (MNT_LOCKED, as mounts a less privileged namespace
// inherits): they cannot be unmounted (EINVAL) nor their flags changed
// (EPERM), since under them is the guest namespace's cover, not a
// directory the guest may see.

// mount(2) flags the sentry reads on its own mounts.
const (
	msRdonly      = unix.MS_RDONLY
	msNoUser      = 1 << 31
	msStrictatime = unix.MS_STRICTATIME
)

// umount2(2) flags.
const (
	mntForce   = 0x1
	mntDetach  = 0x2
	mntExpire  = 0x4
	umountMask = mntForce | mntDetach | mntExpire | umountNoFollow
)

// mntWantWrite is mnt_want_write: EROFS on a read-only mount. A guest's
// mount is one mount of one file system, so the inode tells.
func mntWantWrite(ino vfs.Inode) error {
	if r, ok := ino.(interface{ ReadOnly() bool }); ok && r.ReadOnly() {
		return unix.EROFS
	}
	return nil
}

// mountFlags are the per-mount flags of mount(2)'s flags, as path_mount
// separates them: relatime unless noatime or strictatime is asked for.
func mountFlags(flags uint64) uint32 {
	f := uint32(flags) & (vfs.MountReadOnly | vfs.MountNoSuid | vfs.MountNoDev | vfs.MountNoExec | vfs.MountNoAtime | vfs.MountNoDirAtime)
	if flags&unix.MS_NOATIME == 0 {
		f |= vfs.MountRelatime
	}
	if flags&msStrictatime != 0 {
		f &^= vfs.MountRelatime | vfs.MountNoAtime
	}
	return f
}

// mountSentry serves mount(2) on target r, a file of the sentry's, as
// path_mount does after the lookup.
func mountSentry(c *sentry.Call, r resolved, args *platform.SyscallArgs, flags uint64) sentry.Result {
	if flags&msNoUser != 0 {
		return sentry.Err(unix.EINVAL)
	}
	if !c.Creds().Capable(vfs.CapSysAdmin) {
		// may_mount: CAP_SYS_ADMIN over the guest's mount namespace,
		// which the host's first user namespace owns.
		return sentry.Err(unix.EPERM)
	}
	switch {
	case flags&msRemount != 0:
		return remountSentry(c, r, args, flags)
	case flags&(msBind|msMove|msPropagation) != 0:
		// Not modelled: a bind or move would put a host tree into
		// the sentry's, or the sentry's elsewhere.
		return sentry.Err(errUnserved)
	case args[2] == 0:
		// do_new_mount: no type.
		return sentry.Err(unix.EINVAL)
	}
	t, err := c.ReadPath(args[2])
	if err != nil {
		return sentry.ErrOf(err)
	}
	// ReadPath's bytes are the next read's buffer.
	fstype := string(t)
	source := "none"
	if args[0] != 0 {
		s, err := c.ReadPath(args[0])
		if err != nil {
			return sentry.ErrOf(err)
		}
		source = string(s)
	}
	var data string
	if args[4] != 0 {
		d, err := c.ReadPath(args[4])
		if err != nil {
			return sentry.ErrOf(err)
		}
		data = string(d)
	}
	if fstype != "tmpfs" {
		// get_fs_type: an unknown type is ENODEV. A known one is
		// refused alike, as a kernel built without it: the sentry's
		// tree holds only its own tmpfs, and a host file system
		// mounted inside it would put host files (a device's, the
		// host's proc) under the sandbox's directory.
		return sentry.Err(unix.ENODEV)
	}
	mounter := c.Kernel().Opts.Mounter
	if mounter == nil {
		return sentry.Err(unix.ENODEV)
	}
	cr := c.Creds()
	m, err := mounter.NewMount(source, data, cr.UID, cr.GID)
	if err != nil {
		return sentry.ErrOf(errnoOf(err))
	}
	// MS_RDONLY on a new mount is the superblock's too.
	m.SetSuperReadOnly(flags&msRdonly != 0)
	return graftSentry(c, r, m, mountFlags(flags), unix.ENOTDIR)
}

// graftSentry attaches new mount m with flags mf on target r (a file of
// the sentry's), or releases it; notDir is the error for a target that
// is not a directory (graft_tree's ENOTDIR, do_move_mount's EINVAL).
func graftSentry(c *sentry.Call, r resolved, m *vfs.Mount, mf uint32, notDir unix.Errno) sentry.Result {
	if err := applyFlags(m, mf); err != nil {
		m.FS.Release()
		return sentry.ErrOf(errnoOf(err))
	}
	// lock_mount, graft_tree: the target must still be there and be
	// a directory like the new root.
	if r.Dentry.Inode().Mode()&unix.S_IFMT != unix.S_IFDIR {
		m.FS.Release()
		return sentry.Err(notDir)
	}
	st := c.StatBuf()
	if r.Dentry.Inode().Stat(st); st.Nlink == 0 {
		m.FS.Release()
		return sentry.Err(unix.ENOENT)
	}
	m.Parent, m.MountPoint = r.Mount, r.Dentry
	if err := c.Kernel().VFS.Attach(m, c.Kernel().Opts.MountMax, namespaceMounts(c)); err != nil {
		m.FS.Release()
		return sentry.ErrOf(err)
	}
	return sentry.Ret(0)
}

// applyFlags sets m's flags and its file system's.
func applyFlags(m *vfs.Mount, f uint32) error {
	if rm, ok := m.FS.(vfs.Remounter); ok {
		if err := rm.SetFlags(f); err != nil {
			return err
		}
	} else if f&vfs.MountReadOnly != 0 {
		return unix.EINVAL
	}
	m.SetFlags(f)
	return nil
}

// remountSentry is do_remount and, with MS_BIND, do_reconfigure_mnt: the
// target must be a mount's root; the flags given replace the mount's
// (the atime ones kept when none is given).
func remountSentry(c *sentry.Call, r resolved, args *platform.SyscallArgs, flags uint64) sentry.Result {
	m := r.Mount
	if r.Dentry != m.Root {
		return sentry.Err(unix.EINVAL)
	}
	if m.Parent == nil {
		// The sandbox's own mounts are locked (can_change_locked_flags).
		return sentry.Err(unix.EPERM)
	}
	var data string
	if flags&msBind == 0 && args[4] != 0 {
		d, err := c.ReadPath(args[4])
		if err != nil {
			return sentry.ErrOf(err)
		}
		data = string(d)
	}
	f := mountFlags(flags)
	if flags&(unix.MS_NOATIME|unix.MS_NODIRATIME|unix.MS_RELATIME|msStrictatime) == 0 {
		atime := uint32(vfs.MountNoAtime | vfs.MountNoDirAtime | vfs.MountRelatime)
		f = f&^atime | m.Flags()&atime
	}
	// reconfigure_super: the options (size=, nr_inodes=), then the
	// flags.
	if mounter := c.Kernel().Opts.Mounter; mounter != nil && data != "" {
		if err := mounter.Reconfigure(m, data); err != nil {
			return sentry.ErrOf(errnoOf(err))
		}
	}
	if err := applyFlags(m, f); err != nil {
		return sentry.ErrOf(errnoOf(err))
	}
	if flags&msBind == 0 {
		// do_remount reconfigures the superblock; MS_BIND the mount.
		m.SetSuperReadOnly(f&vfs.MountReadOnly != 0)
	}
	return sentry.Ret(0)
}

// namespaceMounts is how many mounts the guest's namespace holds besides
// the guest's own in the sentry: the lines of the kernel's list.
func namespaceMounts(c *sentry.Call) int {
	f, err := os.Open("/proc/" + strconv.Itoa(int(c.TID)) + "/mountinfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	return n + len(c.Kernel().VFS.Mounts())
}

// umountSentry serves umount2 of target r, a file of the sentry's, as
// can_umount and do_umount.
func umountSentry(c *sentry.Call, r resolved, flags uint32) sentry.Result {
	if !c.Creds().Capable(vfs.CapSysAdmin) {
		return sentry.Err(unix.EPERM)
	}
	m := r.Mount
	if r.Dentry != m.Root {
		return sentry.Err(unix.EINVAL)
	}
	if m.Parent == nil {
		// The sandbox's own mount: locked (can_umount's MNT_LOCKED).
		// Under it is the guest namespace's cover, not what Linux
		// would show there.
		return sentry.Err(unix.EINVAL)
	}
	if flags&mntExpire != 0 {
		if flags&(mntDetach|mntForce) != 0 {
			return sentry.Err(unix.EINVAL)
		}
		// do_umount: the first MNT_EXPIRE only marks the mount.
		return sentry.Err(unix.EAGAIN)
	}
	k := c.Kernel()
	gone, err := k.VFS.Detach(m, flags&mntDetach != 0, k.MountBusy)
	if err != nil {
		return sentry.ErrOf(err)
	}
	for _, mm := range gone {
		if !k.MountBusy(mm) {
			mm.FS.Release()
		}
	}
	return sentry.Ret(0)
}

// mountInfoLines are the guest's mounts in mountinfo (or mounts) format,
// as show_mountinfo and show_vfsmnt write them.
func mountInfoLines(b *strings.Builder, v *vfs.VirtualFilesystem, mountinfo bool) {
	for _, m := range v.GuestMounts() {
		var st unix.Stat_t
		m.Root.Inode().Stat(&st)
		f := m.Flags()
		rw, sb := "rw", "rw"
		if f&vfs.MountReadOnly != 0 {
			rw = "ro"
		}
		if m.SuperReadOnly() {
			sb = "ro"
		}
		opts := rw
		for _, o := range []struct {
			bit  uint32
			name string
		}{{vfs.MountNoSuid, ",nosuid"}, {vfs.MountNoDev, ",nodev"}, {vfs.MountNoExec, ",noexec"},
			{vfs.MountNoAtime, ",noatime"}, {vfs.MountNoDirAtime, ",nodiratime"}, {vfs.MountRelatime, ",relatime"}} {
			if f&o.bit != 0 {
				opts += o.name
			}
		}
		point := mangle(vfs.PathOf(m.Parent, m.MountPoint))
		if mountinfo {
			b.WriteString(strconv.FormatUint(m.ID, 10) + " " + strconv.FormatUint(m.Parent.ID, 10) + " " +
				strconv.FormatUint(uint64(unix.Major(st.Dev)), 10) + ":" + strconv.FormatUint(uint64(unix.Minor(st.Dev)), 10) +
				" / " + point + " " + opts + " - tmpfs " + mangle(m.Source) + " " + sb + m.Super() + "\n")
		} else {
			b.WriteString(mangle(m.Source) + " " + point + " tmpfs " + opts + m.Super() + " 0 0\n")
		}
	}
}

// mangle escapes space, tab, newline and backslash as seq_escape does.
func mangle(s string) string {
	if !strings.ContainsAny(s, " \t\n\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\\':
			b.WriteString("\\" + octal3(c))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func octal3(c byte) string {
	return string([]byte{'0' + c>>6, '0' + c>>3&7, '0' + c&7})
}

// lookupMount is the mount in which the last component of r was looked
// up, where do_renameat2 and do_linkat compare mounts: for a path that
// ended on a guest's mount point (the walk crossed into the mount), the
// mount below.
func lookupMount(r resolved) *vfs.Mount {
	m := r.Mount
	if r.Name != "" || m == nil || r.Dentry != m.Root {
		return m
	}
	for m.Parent != nil {
		p := m.Parent
		if m.MountPoint != p.Root || p.Parent == nil {
			return p
		}
		m = p
	}
	return m
}

// moveMountSentry serves move_mount(2) of a detached mount the guest made
// with fsopen and fsmount (the mount API util-linux 2.39 and later use)
// onto target r, a directory of the sentry's: the host's new tmpfs stays
// the guest's, and a sentry mount with its options (its size, inodes,
// root mode and owner, and mount flags, as statfs and statx show them)
// takes its place there. Moving an attached mount, or one holding files
// already, into the sentry's tree would put the host's files under it:
// errUnserved; another file system type ENODEV, as mount(2).
func moveMountSentry(c *sentry.Call, r resolved, fromFD int32, fromPath uintptr, flags uint32) sentry.Result {
	if flags&moveMountFEmptyPath == 0 {
		return sentry.Err(errUnserved)
	}
	if p, err := c.ReadPath(fromPath); err != nil || len(p) != 0 {
		return sentry.Err(errUnserved)
	}
	if !c.Creds().Capable(vfs.CapSysAdmin) {
		return sentry.Err(unix.EPERM)
	}
	fd, err := platform.GetFD(c.TID, fromFD)
	if err != nil {
		return sentry.Err(unix.EBADF)
	}
	defer unix.Close(fd)
	var sfs unix.Statfs_t
	var stx unix.Statx_t
	if unix.Fstatfs(fd, &sfs) != nil || unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &stx) != nil {
		return sentry.Err(unix.EINVAL)
	}
	if sfs.Type != unix.TMPFS_MAGIC {
		return sentry.Err(unix.ENODEV)
	}
	if stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		// do_move_mount: not a mount's root.
		return sentry.Err(unix.EINVAL)
	}
	if attachedMount(c, stx.Mnt_id, stx.Dev_major, stx.Dev_minor) || !emptyDir(fd) {
		return sentry.Err(errUnserved)
	}
	data := "size=" + strconv.FormatUint(uint64(sfs.Blocks)*uint64(sfs.Bsize), 10) +
		",nr_inodes=" + strconv.FormatUint(sfs.Files, 10) +
		",mode=" + strconv.FormatUint(uint64(stx.Mode&07777), 8) +
		",uid=" + strconv.FormatUint(uint64(stx.Uid), 10) + ",gid=" + strconv.FormatUint(uint64(stx.Gid), 10)
	mounter := c.Kernel().Opts.Mounter
	if mounter == nil {
		return sentry.Err(unix.ENODEV)
	}
	m, err := mounter.NewMount("none", data, stx.Uid, stx.Gid)
	if err != nil {
		return sentry.ErrOf(errnoOf(err))
	}
	// The per-mount flags statfs reports (ST_* are MS_* but relatime).
	mf := uint32(sfs.Flags) & (vfs.MountReadOnly | vfs.MountNoSuid | vfs.MountNoDev | vfs.MountNoExec | vfs.MountNoAtime | vfs.MountNoDirAtime)
	if sfs.Flags&unix.ST_RELATIME != 0 {
		mf |= vfs.MountRelatime
	}
	return graftSentry(c, r, m, mf, unix.EINVAL)
}

// attachedMount reports mount id mnt, or a mount of the file system on
// device maj:min, in the guest's namespace: a mount that is attached, or
// a clone of one (open_tree), rather than a new file system (fsmount).
func attachedMount(c *sentry.Call, mnt uint64, maj, min uint32) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(int(c.TID)) + "/mountinfo")
	if err != nil {
		return true
	}
	id := strconv.FormatUint(mnt, 10)
	dev := strconv.FormatUint(uint64(maj), 10) + ":" + strconv.FormatUint(uint64(min), 10)
	for line := range strings.Lines(string(data)) {
		// ID PARENT MAJ:MIN ...
		if f := strings.Fields(line); len(f) > 2 && (f[0] == id || f[2] == dev) {
			return true
		}
	}
	return false
}

// emptyDir reports a directory (dirfd, maybe O_PATH) with no entries.
func emptyDir(dirfd int) bool {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var buf [4096]byte
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
		for b := buf[:n]; len(b) > 0; {
			reclen := int(b[16]) | int(b[17])<<8
			name := b[19:reclen]
			if i := strings.IndexByte(string(name), 0); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				return false
			}
			b = b[reclen:]
		}
	}
}
