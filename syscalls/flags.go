package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"sentry/platform"
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
	// fsXflagProjinherit is FS_XFLAG_PROJINHERIT (one of fsXflagOthers).
	fsXflagProjinherit = 0x200

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
		if err := c.ReadArg(arg, b[:4]); err != nil {
			return sentry.ErrOf(err), true
		}
		return setFSFlags(c, fl, binary.LittleEndian.Uint32(b[:])), true
	case fsIocFsgetxattr:
		binary.LittleEndian.PutUint32(b[:], xflagsOf(fl.FSFlags()))
		if c.CopyOut(arg, b[:]) != nil {
			return sentry.Err(unix.EFAULT), true
		}
		return sentry.Ret(0), true
	}
	// FS_IOC_FSSETXATTR.
	if err := c.ReadArg(arg, b[:]); err != nil {
		return sentry.ErrOf(err), true
	}
	return setFileattr(c, f.Inode, fsxattr{
		xflags:  uint64(binary.LittleEndian.Uint32(b[0:])),
		extsize: binary.LittleEndian.Uint32(b[4:]),
		projid:  binary.LittleEndian.Uint32(b[12:]),
		cowext:  binary.LittleEndian.Uint32(b[16:]),
	}), true
}

// fsxattr is what FS_IOC_FSSETXATTR and file_setattr ask to set (struct
// fsxattr, struct file_attr).
type fsxattr struct {
	xflags                  uint64
	extsize, projid, cowext uint32
}

// setFileattr is vfs_fileattr_set for an fsxattr on ino: tmpfs's own
// (EOPNOTSUPP without one: a symlink, a special file), the owner, then
// CAP_LINUX_IMMUTABLE (EPERM), fileattr_set_prepare's EINVAL, then tmpfs
// refuses what is not a flag it keeps (shmem_fileattr_set:
// fileattr_has_fsx).
func setFileattr(c *sentry.Call, ino vfs.Inode, a fsxattr) sentry.Result {
	fl, ok := ino.(vfs.FlagsInode)
	var st unix.Stat_t
	ino.Stat(&st)
	isReg, isDir := st.Mode&unix.S_IFMT == unix.S_IFREG, st.Mode&unix.S_IFMT == unix.S_IFDIR
	if !ok || !isReg && !isDir {
		return sentry.Err(unix.EOPNOTSUPP)
	}
	if !c.Creds().OwnerOrCapable(st.Uid, st.Gid) {
		return sentry.Err(unix.EPERM)
	}
	x := a.xflags
	var want uint32
	for _, p := range flagXflag {
		if x&uint64(p[1]) != 0 {
			want |= p[0]
		}
	}
	if (want^fl.FSFlags())&(vfs.FlagImmutable|vfs.FlagAppend) != 0 && !c.Creds().Capable(vfs.CapLinuxImmutable) {
		return sentry.Err(unix.EPERM)
	}
	if a.projid == ^uint32(0) || x&fsXflagExtsize != 0 && !isReg || x&fsXflagExtszinherit != 0 && !isDir {
		return sentry.Err(unix.EINVAL)
	}
	// fileattr_set_prepare: outside the initial user namespace the
	// project id and PROJINHERIT may not change (tmpfs has neither).
	if c.Creds().Foreign && (a.projid != 0 || x&fsXflagProjinherit != 0) {
		return sentry.Err(unix.EINVAL)
	}
	if a.extsize == 0 {
		x &^= fsXflagExtsize
	}
	if a.cowext == 0 {
		x &^= fsXflagCowextsize
	}
	if x&^fsXflagCommon != 0 || a.extsize != 0 || a.projid != 0 || a.cowext != 0 || x&fsXflagOthers != 0 {
		return sentry.Err(unix.EOPNOTSUPP)
	}
	return setFSFlags(c, fl, want)
}

// xflagsOf are the fsxattr flags of an inode's flags (fileattr_fill_flags).
func xflagsOf(flags uint32) uint32 {
	var x uint32
	for _, p := range flagXflag {
		if flags&p[0] != 0 {
			x |= p[1]
		}
	}
	return x
}

// file_attr (linux/fs.h) sizes, and the flags file_setattr accepts
// (FS_XFLAGS_MASK: the defined FS_XFLAG_* below HASATTR).
const (
	fileAttrSizeVer0 = 24
	fsXflagsMask     = 0x1ffff
)

// FileGetattr is file_getattr(dfd, path, ufattr, usize, at_flags): a
// sentry file's fsxattr, as FS_IOC_FSGETXATTR gives it, into a struct
// file_attr of usize bytes (the rest zeroed, copy_struct_to_user).
func FileGetattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	usize, flags := args[3], uint32(args[4])
	if res, ok := fileAttrArgs(usize, flags); !ok {
		return res
	}
	ino, res, ok := fileAttrTarget(c, args, flags)
	if !ok {
		return res
	}
	fl, ok := ino.(vfs.FlagsInode)
	if typ := ino.Mode() & unix.S_IFMT; !ok || typ != unix.S_IFREG && typ != unix.S_IFDIR {
		// No fileattr_get: ENOIOCTLCMD, reported as EOPNOTSUPP.
		return sentry.Err(unix.EOPNOTSUPP)
	}
	out := make([]byte, usize)
	binary.LittleEndian.PutUint64(out, uint64(xflagsOf(fl.FSFlags())))
	if c.CopyOut(args[2], out) != nil {
		return sentry.Err(unix.EFAULT)
	}
	return sentry.Ret(0)
}

// FileSetattr is file_setattr(dfd, path, ufattr, usize, at_flags): the
// struct is copied and checked first (copy_struct_from_user, then
// unknown flags EINVAL), then the path, then FS_IOC_FSSETXATTR's rules.
func FileSetattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	usize, flags := args[3], uint32(args[4])
	if res, ok := fileAttrArgs(usize, flags); !ok {
		return res
	}
	in := make([]byte, usize)
	if c.CopyIn(args[2], in) != nil {
		return sentry.Err(unix.EFAULT)
	}
	for _, b := range in[fileAttrSizeVer0:] {
		if b != 0 {
			return sentry.Err(unix.E2BIG)
		}
	}
	a := fsxattr{
		xflags:  binary.LittleEndian.Uint64(in[0:]),
		extsize: binary.LittleEndian.Uint32(in[8:]),
		projid:  binary.LittleEndian.Uint32(in[16:]),
		cowext:  binary.LittleEndian.Uint32(in[20:]),
	}
	if a.xflags&^fsXflagsMask != 0 {
		return sentry.Err(unix.EINVAL)
	}
	ino, res, ok := fileAttrTarget(c, args, flags)
	if !ok {
		return res
	}
	return setFileattr(c, ino, a)
}

// fileAttrArgs checks file_getattr's and file_setattr's flags and size.
func fileAttrArgs(usize uintptr, flags uint32) (sentry.Result, bool) {
	switch {
	case flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0:
		return sentry.Err(unix.EINVAL), false
	case usize > pageSize:
		return sentry.Err(unix.E2BIG), false
	case usize < fileAttrSizeVer0:
		return sentry.Err(unix.EINVAL), false
	}
	return sentry.Result{}, true
}

// fileAttrTarget resolves file_getattr's and file_setattr's (dfd, path):
// a NULL path with AT_EMPTY_PATH is dfd itself (getname_maybe_null); a
// host file passes.
func fileAttrTarget(c *sentry.Call, args *platform.SyscallArgs, flags uint32) (vfs.Inode, sentry.Result, bool) {
	var r resolved
	var err error
	if args[1] == 0 && flags&unix.AT_EMPTY_PATH != 0 {
		r, err = resolveEmpty(c, int32(args[0]))
	} else {
		r, err = resolveAt(c, int32(args[0]), args[1], flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0)
	}
	d, res, ok := existing(r, err)
	if !ok {
		return nil, res, false
	}
	return d.Inode(), res, true
}

// setFSFlags sets the flags of fl for c: 0 or the errno.
func setFSFlags(c *sentry.Call, fl vfs.FlagsInode, flags uint32) sentry.Result {
	if err := fl.SetFSFlags(c.Creds(), flags); err != nil {
		return sentry.ErrOf(err)
	}
	return sentry.Ret(0)
}
