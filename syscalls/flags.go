package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"sentry/sentry"
	"sentry/sentry/vfs"
)

// The fsxattr counterparts of the inode flags tmpfs keeps (FS_XFLAG_*).
const (
	fsXflagImmutable = 0x8
	fsXflagAppend    = 0x10
	fsXflagNoatime   = 0x40
	fsXflagNodump    = 0x80
	// fsXflagCommon are the fsxattr flags that are inode flags too
	// (FS_XFLAG_COMMON); fsXflagOthers those of them tmpfs does not keep
	// (sync, DAX, project inheritance: EOPNOTSUPP).
	fsXflagCommon       = fsXflagImmutable | fsXflagAppend | fsXflagNoatime | fsXflagNodump | fsXflagOthers
	fsXflagOthers       = 0x20 | 0x8000 | 0x200
	fsXflagExtsize      = 0x800
	fsXflagExtszinherit = 0x1000
	fsXflagCowextsize   = 0x10000

	fsIocFsgetxattr = 0x801c581f // FS_IOC_FSGETXATTR
	fsIocFssetxattr = 0x401c5820 // FS_IOC_FSSETXATTR
	// fsxattrSize is sizeof(struct fsxattr).
	fsxattrSize = 28
)

// flagXflag pairs each flag with its fsxattr flag (fileattr_fill_flags).
var flagXflag = [...][2]uint32{
	{vfs.FlagImmutable, fsXflagImmutable}, {vfs.FlagAppend, fsXflagAppend},
	{vfs.FlagNodump, fsXflagNodump}, {vfs.FlagNoatime, fsXflagNoatime},
}

// fileattrIoctl serves the inode-flag ioctls (ioctl_getflags,
// ioctl_setflags, ioctl_fsgetxattr, ioctl_fssetxattr) on a sentry file or
// directory, whose flags are the sentry's: the placeholder (a backing, a
// backing directory) would answer with its own. ok is false for other
// requests and other files.
func fileattrIoctl(c *sentry.Call, f *vfs.FileDescription, req uint32, arg uintptr) (sentry.Result, bool) {
	switch req {
	case unix.FS_IOC_GETFLAGS, unix.FS_IOC_SETFLAGS, fsIocFsgetxattr, fsIocFssetxattr:
	default:
		return sentry.Result{}, false
	}
	fl, ok := f.Inode.(vfs.FlagsInode)
	if typ := f.Inode.Mode() & unix.S_IFMT; !ok || typ != unix.S_IFREG && typ != unix.S_IFDIR {
		// A FIFO's or a device's placeholder is the host's node, whose
		// driver answers.
		return sentry.Result{}, false
	}
	var b [fsxattrSize]byte
	switch req {
	case unix.FS_IOC_GETFLAGS:
		binary.LittleEndian.PutUint32(b[:], fl.FSFlags())
		if c.CopyOut(arg, b[:4]) != nil {
			return sentry.Err(unix.EFAULT), true
		}
		return sentry.Ret(0), true
	case unix.FS_IOC_SETFLAGS:
		if c.CopyIn(arg, b[:4]) != nil {
			return sentry.Err(unix.EFAULT), true
		}
		return setFSFlags(c, fl, binary.LittleEndian.Uint32(b[:])), true
	case fsIocFsgetxattr:
		var x uint32
		for _, p := range flagXflag {
			if fl.FSFlags()&p[0] != 0 {
				x |= p[1]
			}
		}
		binary.LittleEndian.PutUint32(b[:], x)
		if c.CopyOut(arg, b[:]) != nil {
			return sentry.Err(unix.EFAULT), true
		}
		return sentry.Ret(0), true
	}
	// FS_IOC_FSSETXATTR: vfs_fileattr_set's checks (the owner, then
	// CAP_LINUX_IMMUTABLE), fileattr_set_prepare's EINVAL, then tmpfs
	// refuses what is not a flag it keeps (shmem_fileattr_set:
	// fileattr_has_fsx).
	if c.CopyIn(arg, b[:]) != nil {
		return sentry.Err(unix.EFAULT), true
	}
	x := binary.LittleEndian.Uint32(b[0:])
	extsize := binary.LittleEndian.Uint32(b[4:])
	projid := binary.LittleEndian.Uint32(b[12:])
	cowext := binary.LittleEndian.Uint32(b[16:])
	var st unix.Stat_t
	f.Inode.Stat(&st)
	if !c.Creds().OwnerOrCapable(st.Uid, st.Gid) {
		return sentry.Err(unix.EPERM), true
	}
	var want uint32
	for _, p := range flagXflag {
		if x&p[1] != 0 {
			want |= p[0]
		}
	}
	if (want^fl.FSFlags())&(vfs.FlagImmutable|vfs.FlagAppend) != 0 && !c.Creds().Capable(vfs.CapLinuxImmutable) {
		return sentry.Err(unix.EPERM), true
	}
	isReg, isDir := st.Mode&unix.S_IFMT == unix.S_IFREG, st.Mode&unix.S_IFMT == unix.S_IFDIR
	if projid == ^uint32(0) || x&fsXflagExtsize != 0 && !isReg || x&fsXflagExtszinherit != 0 && !isDir {
		return sentry.Err(unix.EINVAL), true
	}
	if extsize == 0 {
		x &^= fsXflagExtsize
	}
	if cowext == 0 {
		x &^= fsXflagCowextsize
	}
	if x&^fsXflagCommon != 0 || extsize != 0 || projid != 0 || cowext != 0 || x&fsXflagOthers != 0 {
		return sentry.Err(unix.EOPNOTSUPP), true
	}
	return setFSFlags(c, fl, want), true
}

// setFSFlags sets the flags of fl for c: 0 or the errno.
func setFSFlags(c *sentry.Call, fl vfs.FlagsInode, flags uint32) sentry.Result {
	if err := fl.SetFSFlags(c.Creds(), flags); err != nil {
		return sentry.ErrOf(err)
	}
	return sentry.Ret(0)
}
