package syscalls

import (
	"encoding/binary"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Extended attributes of the sentry's files, as Linux's tmpfs keeps them
// (shmem_xattr_handlers over simple_xattrs): the user., trusted. and
// security. namespaces. The order of checks is fs/xattr.c's: the name (and
// for set, the flags, size and value) are copied first, then the path is
// walked, then xattr_permission, the capability checks of the security
// namespaces, and the file system. POSIX ACLs are kept as far as a mode
// says them (acl.go): setting an access ACL of the owner, group and other
// entries only sets the mode, as Linux does, and stores nothing; getting
// one is then ENODATA, as on Linux; removing one succeeds as set_posix_acl
// of NULL does. An ACL a mode cannot say is EOPNOTSUPP, which Linux gives
// only for another version.

const (
	// xattrNameMax, xattrSizeMax and xattrListMax are XATTR_NAME_MAX,
	// XATTR_SIZE_MAX and XATTR_LIST_MAX.
	xattrNameMax = 255
	xattrSizeMax = 65536
	xattrListMax = 65536
	// xattrArgsSize is XATTR_ARGS_SIZE_VER0, struct xattr_args of the
	// *xattrat calls: value pointer, size, flags.
	xattrArgsSize = 16
	// The namespaces tmpfs keeps (XATTR_*_PREFIX), and the names of the
	// POSIX ACLs and of file capabilities.
	xattrUser       = "user."
	xattrTrusted    = "trusted."
	xattrSecurity   = "security."
	xattrACLAccess  = "system.posix_acl_access"
	xattrACLDefault = "system.posix_acl_default"
	xattrCaps       = "security.capability"
)

// xattrName is import_xattr_name: ERANGE for an empty or over-long name.
func xattrName(c *sentry.Call, addr uintptr) (string, error) {
	name, err := c.ReadPath(addr)
	if err == unix.ENAMETOOLONG || (err == nil && (len(name) == 0 || len(name) > xattrNameMax)) {
		return "", unix.ERANGE
	}
	return string(name), err
}

// xattrTarget is the sentry inode an xattr call acts on, found by a path
// walk (xattrAtPath) or a descriptor (xattrAtFD); release drops what it
// holds. Both return ok false with res the answer when the call is the
// host's or failed. The name is checked before either, as Linux does.
type xattrTarget struct {
	ino     vfs.Inode
	d       vfs.Dentry
	release func()
}

func xattrAtPath(c *sentry.Call, dirfd int32, pathAddr uintptr, follow, emptyPath bool) (xattrTarget, sentry.Result, bool) {
	r, err := resolveAt(c, dirfd, pathAddr, follow, emptyPath)
	if err != nil {
		return xattrTarget{}, sentry.ErrOf(err), false
	}
	if r.file != nil {
		f := r.file
		return xattrTarget{ino: f.Dentry.Inode(), d: f.Dentry, release: func() { f.DecRef() }}, sentry.Result{}, true
	}
	if r.host {
		return xattrTarget{}, sentry.Pass(), false
	}
	if r.Dentry == nil {
		return xattrTarget{}, sentry.Err(unix.ENOENT), false
	}
	return xattrTarget{ino: r.Dentry.Inode(), d: r.Dentry, release: func() {}}, sentry.Result{}, true
}

func xattrAtFD(c *sentry.Call, fd int32) (xattrTarget, sentry.Result, bool) {
	f, res, ok := fileFor(c, fd)
	if !ok {
		return xattrTarget{}, res, false
	}
	return xattrTarget{ino: f.Dentry.Inode(), d: f.Dentry, release: func() { f.DecRef() }}, sentry.Result{}, true
}

// xattrPermission is xattr_permission, then the security namespace's
// capability check (cap_inode_setxattr, cap_inode_removexattr) for
// changes: CAP_SYS_ADMIN in the namespace owning the file system for
// trusted. and security., CAP_FOWNER over the inode for user. on a sticky
// directory (inode_owner_or_capable).
func xattrPermission(c *vfs.Credentials, ino vfs.Inode, name string, write bool) error {
	if fl, ok := ino.(vfs.FlagsInode); ok && write && fl.FSFlags()&(vfs.FlagAppend|vfs.FlagImmutable) != 0 {
		return unix.EPERM
	}
	var st unix.Stat_t
	ino.Stat(&st)
	typ := st.Mode & unix.S_IFMT
	switch {
	case name == xattrCaps:
		// cap_inode_setxattr leaves it to cap_convert_nscap, which
		// checks the value first (xattrCapsValid).
		return nil
	case strings.HasPrefix(name, xattrSecurity):
		if write && !c.Capable(vfs.CapSysAdmin) {
			return unix.EPERM
		}
		return nil
	case strings.HasPrefix(name, "system."):
		return nil
	case strings.HasPrefix(name, xattrTrusted):
		if !c.Capable(vfs.CapSysAdmin) {
			if write {
				return unix.EPERM
			}
			return unix.ENODATA
		}
		return nil
	case strings.HasPrefix(name, xattrUser):
		if typ != unix.S_IFREG && typ != unix.S_IFDIR {
			if write {
				return unix.EPERM
			}
			return unix.ENODATA
		}
		if typ == unix.S_IFDIR && st.Mode&unix.S_ISVTX != 0 && write && !c.OwnerOrCapable(st.Uid, st.Gid) {
			return unix.EPERM
		}
	}
	mask := uint32(vfs.MayRead)
	if write {
		mask = vfs.MayWrite
	}
	return ino.CheckPermission(c, mask)
}

// xattrSupported is xattr_resolve_name over tmpfs's handlers: the ACL
// names, a known prefix with something after it (EINVAL for the bare
// prefix); other names EOPNOTSUPP.
func xattrSupported(name string) error {
	if name == xattrACLAccess || name == xattrACLDefault {
		return nil
	}
	for _, p := range []string{xattrUser, xattrTrusted, xattrSecurity} {
		if strings.HasPrefix(name, p) {
			if len(name) == len(p) {
				return unix.EINVAL
			}
			return nil
		}
	}
	return unix.EOPNOTSUPP
}

// xattrInode checks a get (or, with write, a change) of name on the
// target and returns where the attributes are.
func xattrInode(c *sentry.Call, x xattrTarget, name string, write bool) (vfs.XattrInode, error) {
	if err := xattrPermission(c.Creds(), x.ino, name, write); err != nil {
		return nil, err
	}
	if err := xattrSupported(name); err != nil {
		return nil, err
	}
	xi, ok := x.ino.(vfs.XattrInode)
	if !ok {
		return nil, unix.EOPNOTSUPP
	}
	return xi, nil
}

// copyXattrOut gives the guest a value or a name list: its length when
// size is 0, ERANGE when it does not fit in size (capped at limit).
func copyXattrOut(c *sentry.Call, addr uintptr, size, limit uint64, data []byte) sentry.Result {
	if size == 0 {
		return sentry.Ret(int64(len(data)))
	}
	if uint64(len(data)) > min(size, limit) {
		return sentry.Err(unix.ERANGE)
	}
	if err := c.CopyOut(addr, data); err != nil {
		return sentry.ErrOf(err)
	}
	return sentry.Ret(int64(len(data)))
}

// getxattr is do_getxattr on a resolved target.
func getxattr(c *sentry.Call, x xattrTarget, name string, valueAddr uintptr, size uint64) sentry.Result {
	defer x.release()
	xi, err := xattrInode(c, x, name, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if name == xattrACLAccess || name == xattrACLDefault {
		return sentry.Err(unix.ENODATA)
	}
	v, ok := xi.Getxattr(name)
	if !ok {
		return sentry.Err(unix.ENODATA)
	}
	return copyXattrOut(c, valueAddr, size, xattrSizeMax, v)
}

// setxattr is do_setxattr (value nil: removexattr) on a resolved target.
func setxattr(c *sentry.Call, x xattrTarget, name string, value []byte, flags uint32) sentry.Result {
	defer x.release()
	if err := mntWantWrite(x.ino); err != nil {
		return sentry.ErrOf(err)
	}
	isACL := name == xattrACLAccess || name == xattrACLDefault
	var acl []aclEntry
	if isACL && len(value) > 0 {
		// do_set_acl reads the ACL before vfs_set_acl's checks; an
		// empty value, or a header alone, removes the ACL.
		var err error
		if acl, err = parseACL(value); err != nil {
			return sentry.ErrOf(err)
		}
	}
	xi, err := xattrInode(c, x, name, true)
	if err != nil {
		return sentry.ErrOf(err)
	}
	var st unix.Stat_t
	x.ino.Stat(&st)
	cr := c.Creds()
	switch {
	case isACL:
		return setACL(c, x, name == xattrACLDefault, acl, &st)
	case name == xattrCaps:
		// cap_convert_nscap: the value's header, then CAP_SETFCAP over
		// the inode; cap_inode_removexattr: CAP_SETFCAP over it.
		if value != nil && !xattrCapsValid(value) {
			return sentry.Err(unix.EINVAL)
		}
		if !cr.CapableWrt(vfs.CapSetfcap, st.Uid, st.Gid) {
			return sentry.Err(unix.EPERM)
		}
	}
	if err := xi.Setxattr(name, value, flags); err != nil {
		return sentry.ErrOf(err)
	}
	// fsnotify_xattr.
	notifyChild(x.d, vfs.DNAttrib)
	return sentry.Ret(0)
}

// setACL is set_posix_acl of acl (nil: removal) on x, whose stat is st,
// after vfs_set_acl's may_write_xattr (xattrInode).
func setACL(c *sentry.Call, x xattrTarget, isDefault bool, acl []aclEntry, st *unix.Stat_t) sentry.Result {
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// A symlink has no set_acl.
		return sentry.Err(unix.EOPNOTSUPP)
	}
	if isDefault && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if acl != nil {
			return sentry.Err(unix.EACCES)
		}
		return sentry.Ret(0)
	}
	cr := c.Creds()
	if !cr.OwnerOrCapable(st.Uid, st.Gid) {
		return sentry.Err(unix.EPERM)
	}
	if acl == nil {
		// Nothing to remove: the sentry keeps no ACL.
		return sentry.Ret(0)
	}
	if err := validACL(acl); err != nil {
		return sentry.ErrOf(err)
	}
	bits, equiv := aclModeBits(acl)
	if isDefault || !equiv {
		// Not modelled: a default ACL, or one with named entries or a
		// mask, which Linux would keep.
		return sentry.Err(unix.EOPNOTSUPP)
	}
	// posix_acl_update_mode: the ACL becomes the mode's permission bits
	// (the setgid bit cleared for a caller outside the file's group
	// without CAP_FSETID, as a chmod: SetAttr), with ctime now; nothing
	// is stored.
	s, ok := x.ino.(vfs.AttrSetter)
	if !ok {
		return sentry.Err(unix.EOPNOTSUPP)
	}
	if err := s.SetAttr(cr, &vfs.Attr{Mask: vfs.AttrMode, Mode: st.Mode&07000 | bits}); err != nil {
		return sentry.ErrOf(err)
	}
	// fsnotify_xattr.
	notifyChild(x.d, vfs.DNAttrib)
	return sentry.Ret(0)
}

// xattrCapsValid is validheader: a struct vfs_cap_data of revision 2 (20
// bytes) or 3 (24 bytes, with the namespace's root uid).
func xattrCapsValid(v []byte) bool {
	if len(v) < 4 {
		return false
	}
	rev := binary.LittleEndian.Uint32(v) &^ 1 // VFS_CAP_FLAGS_EFFECTIVE
	return len(v) == 20 && rev == 0x02000000 || len(v) == 24 && rev == 0x03000000
}

// listxattr is listxattr on a resolved target: the names, each ending in
// NUL, trusted. ones only with CAP_SYS_ADMIN (simple_xattr_list); no
// permission is needed. There are never ACLs to list.
func listxattr(c *sentry.Call, x xattrTarget, listAddr uintptr, size uint64) sentry.Result {
	defer x.release()
	var buf []byte
	if xi, ok := x.ino.(vfs.XattrInode); ok {
		// Linux 6.18's simple_xattr_list gives the names in
		// descending order (measured on /dev/shm).
		names := xi.Listxattr()
		slices.Reverse(names)
		for _, n := range names {
			if strings.HasPrefix(n, xattrTrusted) && !c.Creds().Capable(vfs.CapSysAdmin) {
				continue
			}
			buf = append(append(buf, n...), 0)
		}
	}
	return copyXattrOut(c, listAddr, size, xattrListMax, buf)
}

// setxattrCopy is setxattr_copy: flags, name, size and value are checked
// and copied before the path is walked.
func setxattrCopy(c *sentry.Call, nameAddr, valueAddr uintptr, size uint64, flags uint32) (string, []byte, error) {
	if flags&^(unix.XATTR_CREATE|unix.XATTR_REPLACE) != 0 {
		return "", nil, unix.EINVAL
	}
	name, err := xattrName(c, nameAddr)
	if err != nil {
		return "", nil, err
	}
	if size > xattrSizeMax {
		return "", nil, unix.E2BIG
	}
	// __vfs_setxattr: an empty value is stored, not a removal.
	value := make([]byte, size)
	if size > 0 {
		// After the name's (ReadPath), as the value is read after it.
		if err := c.ReadArg(valueAddr, value); err != nil {
			return "", nil, err
		}
	}
	return name, value, nil
}

// xattrWhere names the file of an xattr call: a path walked from dirfd
// (atFlags: AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH), or for the f* calls the
// descriptor fd.
type xattrWhere struct {
	byFD    bool
	fd      int32
	path    uintptr
	atFlags uint32
}

func xattrPath(dirfd int32, path uintptr, atFlags uint32) xattrWhere {
	return xattrWhere{fd: dirfd, path: path, atFlags: atFlags}
}

func xattrFD(fd int32) xattrWhere { return xattrWhere{byFD: true, fd: fd} }

func (w xattrWhere) resolve(c *sentry.Call) (xattrTarget, sentry.Result, bool) {
	if w.byFD {
		return xattrAtFD(c, w.fd)
	}
	return xattrAtPath(c, w.fd, w.path, w.atFlags&unix.AT_SYMLINK_NOFOLLOW == 0, w.atFlags&unix.AT_EMPTY_PATH != 0)
}

// xattrNamed checks the name at nameAddr, then finds the file, then runs
// op: the order of getxattr and removexattr.
func xattrNamed(c *sentry.Call, w xattrWhere, nameAddr uintptr, op func(xattrTarget, string) sentry.Result) sentry.Result {
	name, err := xattrName(c, nameAddr)
	if err != nil {
		return sentry.ErrOf(err)
	}
	x, res, ok := w.resolve(c)
	if !ok {
		return res
	}
	return op(x, name)
}

func getxattrAt(c *sentry.Call, w xattrWhere, nameAddr, valueAddr uintptr, size uint64) sentry.Result {
	return xattrNamed(c, w, nameAddr, func(x xattrTarget, name string) sentry.Result {
		return getxattr(c, x, name, valueAddr, size)
	})
}

func setxattrAt(c *sentry.Call, w xattrWhere, nameAddr, valueAddr uintptr, size uint64, flags uint32) sentry.Result {
	name, value, err := setxattrCopy(c, nameAddr, valueAddr, size, flags)
	if err != nil {
		return sentry.ErrOf(err)
	}
	x, res, ok := w.resolve(c)
	if !ok {
		return res
	}
	return setxattr(c, x, name, value, flags)
}

func removexattrAt(c *sentry.Call, w xattrWhere, nameAddr uintptr) sentry.Result {
	return xattrNamed(c, w, nameAddr, func(x xattrTarget, name string) sentry.Result {
		return setxattr(c, x, name, nil, 0)
	})
}

func listxattrAt(c *sentry.Call, w xattrWhere, listAddr uintptr, size uint64) sentry.Result {
	x, res, ok := w.resolve(c)
	if !ok {
		return res
	}
	return listxattr(c, x, listAddr, size)
}

// Getxattr is getxattr(path, name, value, size).
func Getxattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return getxattrAt(c, xattrPath(unix.AT_FDCWD, args[0], 0), args[1], args[2], uint64(args[3]))
}

// Lgetxattr is lgetxattr(path, name, value, size).
func Lgetxattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return getxattrAt(c, xattrPath(unix.AT_FDCWD, args[0], unix.AT_SYMLINK_NOFOLLOW), args[1], args[2], uint64(args[3]))
}

// Fgetxattr is fgetxattr(fd, name, value, size).
func Fgetxattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return getxattrAt(c, xattrFD(int32(args[0])), args[1], args[2], uint64(args[3]))
}

// Setxattr is setxattr(path, name, value, size, flags).
func Setxattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return setxattrAt(c, xattrPath(unix.AT_FDCWD, args[0], 0), args[1], args[2], uint64(args[3]), uint32(args[4]))
}

// Lsetxattr is lsetxattr(path, name, value, size, flags).
func Lsetxattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return setxattrAt(c, xattrPath(unix.AT_FDCWD, args[0], unix.AT_SYMLINK_NOFOLLOW), args[1], args[2], uint64(args[3]), uint32(args[4]))
}

// Fsetxattr is fsetxattr(fd, name, value, size, flags).
func Fsetxattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return setxattrAt(c, xattrFD(int32(args[0])), args[1], args[2], uint64(args[3]), uint32(args[4]))
}

// Removexattr is removexattr(path, name).
func Removexattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return removexattrAt(c, xattrPath(unix.AT_FDCWD, args[0], 0), args[1])
}

// Lremovexattr is lremovexattr(path, name).
func Lremovexattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return removexattrAt(c, xattrPath(unix.AT_FDCWD, args[0], unix.AT_SYMLINK_NOFOLLOW), args[1])
}

// Fremovexattr is fremovexattr(fd, name).
func Fremovexattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return removexattrAt(c, xattrFD(int32(args[0])), args[1])
}

// Listxattr is listxattr(path, list, size).
func Listxattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return listxattrAt(c, xattrPath(unix.AT_FDCWD, args[0], 0), args[1], uint64(args[2]))
}

// Llistxattr is llistxattr(path, list, size).
func Llistxattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return listxattrAt(c, xattrPath(unix.AT_FDCWD, args[0], unix.AT_SYMLINK_NOFOLLOW), args[1], uint64(args[2]))
}

// Flistxattr is flistxattr(fd, list, size).
func Flistxattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return listxattrAt(c, xattrFD(int32(args[0])), args[1], uint64(args[2]))
}

// xattrAtWhere is the file of the *xattrat calls: (dirfd, path) with
// at_flags, which may only hold AT_SYMLINK_NOFOLLOW and AT_EMPTY_PATH.
func xattrAtWhere(args *platform.SyscallArgs) (xattrWhere, error) {
	atFlags := uint32(args[2])
	if atFlags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return xattrWhere{}, unix.EINVAL
	}
	return xattrPath(int32(args[0]), args[1], atFlags), nil
}

// xattrAtValue is xattrAtWhere and the struct xattr_args of setxattrat
// and getxattrat (arguments 4 and 5).
func xattrAtValue(c *sentry.Call, args *platform.SyscallArgs) (w xattrWhere, value uintptr, size, flags uint32, err error) {
	if w, err = xattrAtWhere(args); err != nil {
		return w, 0, 0, 0, err
	}
	value, size, flags, err = xattrArgs(c, args[4], uint64(args[5]))
	return w, value, size, flags, err
}

// xattrArgs reads struct xattr_args as copy_struct_from_user does: a
// shorter struct is EINVAL, bytes past the known ones must be zero (E2BIG).
func xattrArgs(c *sentry.Call, addr uintptr, usize uint64) (value uintptr, size, flags uint32, err error) {
	if usize < xattrArgsSize {
		return 0, 0, 0, unix.EINVAL
	}
	if usize > pageSize {
		return 0, 0, 0, unix.E2BIG
	}
	buf := make([]byte, usize)
	if err := c.CopyIn(addr, buf); err != nil {
		return 0, 0, 0, err
	}
	for _, b := range buf[xattrArgsSize:] {
		if b != 0 {
			return 0, 0, 0, unix.E2BIG
		}
	}
	return uintptr(binary.LittleEndian.Uint64(buf)), binary.LittleEndian.Uint32(buf[8:]), binary.LittleEndian.Uint32(buf[12:]), nil
}

// Setxattrat is setxattrat(dirfd, path, at_flags, name, args, size).
func Setxattrat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	w, value, size, flags, err := xattrAtValue(c, args)
	if err != nil {
		return sentry.ErrOf(err)
	}
	return setxattrAt(c, w, args[3], value, uint64(size), flags)
}

// Getxattrat is getxattrat(dirfd, path, at_flags, name, args, size).
func Getxattrat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	w, value, size, flags, err := xattrAtValue(c, args)
	if err == nil && flags != 0 {
		err = unix.EINVAL
	}
	if err != nil {
		return sentry.ErrOf(err)
	}
	return getxattrAt(c, w, args[3], value, uint64(size))
}

// Listxattrat is listxattrat(dirfd, path, at_flags, list, size).
func Listxattrat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	w, err := xattrAtWhere(args)
	if err != nil {
		return sentry.ErrOf(err)
	}
	return listxattrAt(c, w, args[3], uint64(args[4]))
}

// Removexattrat is removexattrat(dirfd, path, at_flags, name).
func Removexattrat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	w, err := xattrAtWhere(args)
	if err != nil {
		return sentry.ErrOf(err)
	}
	return removexattrAt(c, w, args[3])
}
