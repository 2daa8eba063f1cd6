package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// setAttrAt resolves (dirfd, path) and applies a; a host file passes
// through. An empty path with AT_EMPTY_PATH (or a NULL one where the call
// allows it) is dirfd itself.
func setAttrAt(c *sentry.Call, dirfd int32, pathAddr uintptr, follow, emptyOK bool, a *vfs.Attr) sentry.Result {
	var r resolved
	var err error
	if pathAddr == 0 && emptyOK {
		r, err = resolveEmpty(c, dirfd)
	} else {
		r, err = resolveAt(c, dirfd, pathAddr, follow, emptyOK)
	}
	d, res, ok := existing(r, err)
	if !ok {
		return res
	}
	return setAttr(c, d, a)
}

// setAttr is notify_change after mnt_want_write: a symlink's mode cannot
// change (EOPNOTSUPP, whichever way the symlink was reached: fchmodat2's
// AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH of an O_PATH descriptor, or
// /proc/self/fd/N of one, which leads to the symlink itself).
func setAttr(c *sentry.Call, d vfs.Dentry, a *vfs.Attr) sentry.Result {
	ino := d.Inode()
	s, ok := ino.(vfs.AttrSetter)
	if !ok {
		return sentry.Err(unix.EPERM)
	}
	if err := mntWantWrite(ino); err != nil {
		return sentry.ErrOf(err)
	}
	if a.Mask&vfs.AttrMode != 0 && ino.Mode()&unix.S_IFMT == unix.S_IFLNK {
		return sentry.Err(unix.EOPNOTSUPP)
	}
	if err := s.SetAttr(c.Creds(), a); err != nil {
		return sentry.ErrOf(err)
	}
	notifyChild(d, attrEvent(a.Mask))
	return sentry.Ret(0)
}

// attrEvent is the dnotify event of a change (fsnotify_change): an
// owner, mode or both times is FS_ATTRIB, atime alone FS_ACCESS, mtime
// alone FS_MODIFY.
func attrEvent(mask uint32) uint32 {
	switch {
	case mask&(vfs.AttrMode|vfs.AttrUID|vfs.AttrGID) != 0, mask&(vfs.AttrAtime|vfs.AttrMtime) == vfs.AttrAtime|vfs.AttrMtime:
		return vfs.DNAttrib
	case mask&vfs.AttrAtime != 0:
		return vfs.DNAccess
	case mask&vfs.AttrMtime != 0:
		return vfs.DNModify
	}
	return 0
}

// notifyChild raises event in the directory holding d, for a dnotify
// watch there (fs/tmpfs/dnotify.go).
func notifyChild(d vfs.Dentry, event uint32) {
	if n, ok := d.(vfs.ChildNotifier); ok && event != 0 {
		n.NotifyChild(event)
	}
}

// setAttrFD applies a to a virtual fd (fchmod, fchown, futimens);
// O_PATH descriptions are EBADF.
func setAttrFD(c *sentry.Call, fd int32, a *vfs.Attr) sentry.Result {
	f, res, ok := fileFor(c, fd)
	if !ok {
		return res
	}
	defer f.DecRef()
	return setAttr(c, f.Dentry, a)
}

func modeAttr(mode uintptr) *vfs.Attr {
	return &vfs.Attr{Mask: vfs.AttrMode, Mode: uint32(mode) & 07777}
}

// Chmod is chmod(path, mode).
func Chmod(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return setAttrAt(c, unix.AT_FDCWD, args[0], true, false, modeAttr(args[1]))
}

// Fchmod is fchmod(fd, mode).
func Fchmod(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return setAttrFD(c, int32(args[0]), modeAttr(args[1]))
}

// Fchmodat is fchmodat(dirfd, path, mode): no flags at all.
func Fchmodat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return setAttrAt(c, int32(args[0]), args[1], true, false, modeAttr(args[2]))
}

// Fchmodat2 is fchmodat2(dirfd, path, mode, flags): AT_SYMLINK_NOFOLLOW
// on a symlink is EOPNOTSUPP (setAttr: symlink modes cannot change),
// AT_EMPTY_PATH names dirfd.
func Fchmodat2(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	flags := uint32(args[3])
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return sentry.Err(unix.EINVAL)
	}
	r, err := resolveAt(c, int32(args[0]), args[1], flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.file != nil {
		defer r.file.DecRef()
		return setAttr(c, r.file.Dentry, modeAttr(args[2]))
	}
	if r.host {
		return sentry.Pass()
	}
	if r.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	return setAttr(c, r.Dentry, modeAttr(args[2]))
}

// ownerAttr is chown's (uid, gid), where -1 leaves one unchanged.
func ownerAttr(uid, gid uintptr) *vfs.Attr {
	a := &vfs.Attr{}
	if int32(uid) != -1 {
		a.Mask |= vfs.AttrUID
		a.UID = uint32(uid)
	}
	if int32(gid) != -1 {
		a.Mask |= vfs.AttrGID
		a.GID = uint32(gid)
	}
	return a
}

// Chown is chown(path, uid, gid).
func Chown(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return setAttrAt(c, unix.AT_FDCWD, args[0], true, false, ownerAttr(args[1], args[2]))
}

// Lchown is lchown(path, uid, gid).
func Lchown(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return setAttrAt(c, unix.AT_FDCWD, args[0], false, false, ownerAttr(args[1], args[2]))
}

// Fchown is fchown(fd, uid, gid).
func Fchown(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return setAttrFD(c, int32(args[0]), ownerAttr(args[1], args[2]))
}

// Fchownat is fchownat(dirfd, path, uid, gid, flags).
func Fchownat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	flags := uint32(args[4])
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return sentry.Err(unix.EINVAL)
	}
	return setAttrAt(c, int32(args[0]), args[1], flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0,
		ownerAttr(args[2], args[3]))
}

// utimeNow and utimeOmit are UTIME_NOW and UTIME_OMIT.
const (
	utimeNow  = (1 << 30) - 1
	utimeOmit = (1 << 30) - 2
)

// timesAttr reads struct timespec[2] (NULL: both now), as
// do_utimensat: nanoseconds outside [0, 1e9) other than UTIME_NOW and
// UTIME_OMIT are EINVAL.
func timesAttr(c *sentry.Call, addr uintptr) (*vfs.Attr, error) {
	return readTimes(c, addr, 1, true)
}

// readTimes reads two {seconds, fraction} pairs, the fraction counting
// units nanoseconds (timespec: 1, timeval: 1000), with the UTIME_*
// specials only for timespecs; NULL means both now.
func readTimes(c *sentry.Call, addr uintptr, unit int64, specials bool) (*vfs.Attr, error) {
	a := &vfs.Attr{Mask: vfs.AttrAtime | vfs.AttrMtime}
	if addr == 0 {
		a.AtimeNow, a.MtimeNow = true, true
		return a, nil
	}
	var b [32]byte
	if err := c.CopyIn(addr, b[:]); err != nil {
		return nil, unix.EFAULT
	}
	for i := 0; i < 2; i++ {
		sec := int64(binary.LittleEndian.Uint64(b[16*i:]))
		frac := int64(binary.LittleEndian.Uint64(b[16*i+8:]))
		bit, now, val := uint32(vfs.AttrAtime), &a.AtimeNow, &a.Atime
		if i == 1 {
			bit, now, val = vfs.AttrMtime, &a.MtimeNow, &a.Mtime
		}
		switch {
		case specials && frac == utimeOmit:
			a.Mask &^= bit
		case specials && frac == utimeNow:
			*now = true
		case frac < 0 || frac >= 1e9/unit:
			return nil, unix.EINVAL
		default:
			*val = sec*1e9 + frac*unit
		}
	}
	return a, nil
}

// Utimensat is utimensat(dirfd, path, times, flags); a NULL path is
// futimens(dirfd). Both times UTIME_OMIT changes nothing and succeeds.
func Utimensat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	flags := uint32(args[3])
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return sentry.Err(unix.EINVAL)
	}
	if args[1] == 0 && !c.FDTable().Has(int32(args[0])) {
		return sentry.Pass()
	}
	a, err := timesAttr(c, args[2])
	if err != nil {
		if args[1] == 0 || c.FDTable().Has(int32(args[0])) {
			return sentry.ErrOf(err)
		}
		// A host path's own errors come from the host.
		r, rerr := resolveAt(c, int32(args[0]), args[1], true, true)
		if rerr == nil && r.host {
			return sentry.Pass()
		}
		return sentry.ErrOf(err)
	}
	if args[1] == 0 {
		return setAttrFD(c, int32(args[0]), a)
	}
	if a.Mask == 0 {
		r, err := resolveAt(c, int32(args[0]), args[1], flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0)
		if err != nil {
			return sentry.ErrOf(err)
		}
		if r.file != nil {
			r.file.DecRef()
		}
		if r.host {
			return sentry.Pass()
		}
		return sentry.Ret(0)
	}
	return setAttrAt(c, int32(args[0]), args[1], flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0, a)
}

// timevalsAttr reads struct timeval[2] (NULL: both now) for utimes and
// futimesat: microseconds outside [0, 1e6) are EINVAL.
func timevalsAttr(c *sentry.Call, addr uintptr) (*vfs.Attr, error) {
	return readTimes(c, addr, 1000, false)
}

// Utimes is utimes(path, times).
func Utimes(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return futimesat(c, unix.AT_FDCWD, args[0], args[1])
}

// Futimesat is futimesat(dirfd, path, times).
func Futimesat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return futimesat(c, int32(args[0]), args[1], args[2])
}

func futimesat(c *sentry.Call, dirfd int32, pathAddr, times uintptr) sentry.Result {
	r, err := resolveAt(c, dirfd, pathAddr, true, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	a, err := timevalsAttr(c, times)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	return setAttr(c, r.Dentry, a)
}

// Utime is utime(path, struct utimbuf *) (seconds only).
func Utime(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	r, err := resolveAt(c, unix.AT_FDCWD, args[0], true, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	a := &vfs.Attr{Mask: vfs.AttrAtime | vfs.AttrMtime, AtimeNow: true, MtimeNow: true}
	if args[1] != 0 {
		var b [16]byte
		if err := c.CopyIn(args[1], b[:]); err != nil {
			return sentry.Err(unix.EFAULT)
		}
		a = &vfs.Attr{Mask: vfs.AttrAtime | vfs.AttrMtime,
			Atime: int64(binary.LittleEndian.Uint64(b[0:])) * 1e9,
			Mtime: int64(binary.LittleEndian.Uint64(b[8:])) * 1e9}
	}
	if r.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	return setAttr(c, r.Dentry, a)
}
