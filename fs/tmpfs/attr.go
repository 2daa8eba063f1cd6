package tmpfs

import (
	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

var _ vfs.AttrSetter = (*inode)(nil)

// SetAttr implements vfs.AttrSetter as notify_change -> setattr_prepare ->
// shmem_setattr:
//   - chmod needs the owner or root (EPERM); a non-root caller outside the
//     file's group loses S_ISGID from the new mode (setattr_prepare's
//     in_group_or_capable).
//   - chown of the owner needs root; a change of group needs root, or the
//     owner naming one of its own groups (chown_ok, chgrp_ok). On a
//     non-directory, chown drops S_ISUID, and S_ISGID if group-executable
//     (setattr_should_drop_suidgid).
//   - explicit times need the owner or root; "now" for both needs that or
//     write permission (EACCES), as utimes_common.
//
// Every accepted change sets ctime to now.
func (i *inode) SetAttr(c *vfs.Credentials, a *vfs.Attr) error {
	now := nowNanos()
	i.mu.Lock()
	defer i.mu.Unlock()
	i.reconcileModeLocked()
	owner := c.UID == 0 || c.UID == i.uid
	if a.Mask&(vfs.AttrAtime|vfs.AttrMtime) != 0 {
		explicit := (a.Mask&vfs.AttrAtime != 0 && !a.AtimeNow) || (a.Mask&vfs.AttrMtime != 0 && !a.MtimeNow)
		if explicit && !owner {
			return unix.EPERM
		}
		if !explicit && !owner {
			if err := checkPermission(c, vfs.MayWrite, i.mode, i.uid, i.gid); err != nil {
				return unix.EACCES
			}
		}
	}
	if a.Mask&vfs.AttrMode != 0 && !owner {
		return unix.EPERM
	}
	if a.Mask&vfs.AttrUID != 0 && a.UID != i.uid && c.UID != 0 {
		return unix.EPERM
	}
	if a.Mask&vfs.AttrGID != 0 && a.GID != i.gid && c.UID != 0 {
		if c.UID != i.uid || (a.Mask&vfs.AttrUID != 0 && a.UID != i.uid) || !c.InGroup(a.GID) {
			return unix.EPERM
		}
	}
	if a.Mask&vfs.AttrMode != 0 {
		mode := a.Mode & 07777
		gid := i.gid
		if a.Mask&vfs.AttrGID != 0 {
			gid = a.GID
		}
		if c.UID != 0 && !c.InGroup(gid) {
			mode &^= unix.S_ISGID
		}
		i.mode = i.ftype | mode
	}
	if a.Mask&(vfs.AttrUID|vfs.AttrGID) != 0 {
		if a.Mask&vfs.AttrUID != 0 {
			i.uid = a.UID
		}
		if a.Mask&vfs.AttrGID != 0 {
			i.gid = a.GID
		}
		if i.ftype != unix.S_IFDIR {
			i.mode &^= unix.S_ISUID
			if i.mode&unix.S_IXGRP != 0 {
				i.mode &^= unix.S_ISGID
			}
		}
	}
	if a.Mask&vfs.AttrAtime != 0 {
		if a.AtimeNow {
			i.atime = now
		} else {
			i.atime = a.Atime
		}
	}
	if a.Mask&vfs.AttrMtime != 0 {
		if a.MtimeNow {
			i.mtime = now
		} else {
			i.mtime = a.Mtime
		}
	}
	i.ctime = now
	i.mirrorAttrLocked(a)
	return nil
}
