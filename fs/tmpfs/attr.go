package tmpfs

import (
	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

var _ vfs.AttrSetter = (*inode)(nil)

// SetAttr implements vfs.AttrSetter as notify_change -> setattr_prepare ->
// shmem_setattr, with capabilities over the inode (capable_wrt_inode_uidgid)
// where Linux checks them:
//   - chmod needs the owner or CAP_FOWNER (inode_owner_or_capable, EPERM);
//     a caller outside the file's (new) group without CAP_FSETID loses
//     S_ISGID from the new mode (in_group_or_capable).
//   - a change of owner needs CAP_CHOWN, or the owner "changing" it to
//     itself (chown_ok); a change of group needs CAP_CHOWN, or the owner
//     naming one of its groups or the current one (chgrp_ok). On a
//     non-directory, chown drops S_ISUID always and S_ISGID if
//     group-executable or, without CAP_FSETID, if the caller is not in the
//     file's group (chown_common: ATTR_KILL_SUID, setattr_should_drop_sgid).
//   - explicit times need the owner or CAP_FOWNER; "now" for both needs
//     that or write permission (EACCES), as utimes_common.
//
// Every accepted change sets ctime to now.
func (i *inode) SetAttr(c *vfs.Credentials, a *vfs.Attr) error {
	now := nowNanos()
	i.mu.Lock()
	defer i.mu.Unlock()
	i.reconcileModeLocked()
	owner := c.OwnerOrCapable(i.uid, i.gid)
	times := a.Mask & (vfs.AttrAtime | vfs.AttrMtime)
	touch := times == vfs.AttrAtime|vfs.AttrMtime && a.AtimeNow && a.MtimeNow
	if a.Mask&(vfs.AttrMode|vfs.AttrUID|vfs.AttrGID) != 0 || times != 0 && !touch {
		// notify_change: an immutable or append-only inode keeps its
		// mode, owner and explicit times.
		if i.isAppendOrImmutable() {
			return unix.EPERM
		}
	}
	if touch && i.isImmutable() {
		// Both times to now (ATTR_TOUCH) needs write access.
		return unix.EPERM
	}
	if times != 0 {
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
	chown := c.CapableWrt(vfs.CapChown, i.uid, i.gid)
	if a.Mask&vfs.AttrUID != 0 && !chown && (c.UID != i.uid || a.UID != i.uid) {
		return unix.EPERM
	}
	if a.Mask&vfs.AttrGID != 0 && !chown && (c.UID != i.uid || a.GID != i.gid && !c.InGroup(a.GID)) {
		return unix.EPERM
	}
	if a.Mask&vfs.AttrMode != 0 && !owner {
		return unix.EPERM
	}
	if a.Mask&vfs.AttrMode != 0 {
		mode := a.Mode & 07777
		gid := i.gid
		if a.Mask&vfs.AttrGID != 0 {
			gid = a.GID
		}
		if !c.InGroupOrCapable(gid, i.uid, i.gid) {
			mode &^= unix.S_ISGID
		}
		i.mode = i.ftype | mode
	}
	if a.Mask&(vfs.AttrUID|vfs.AttrGID) != 0 {
		oldUID, oldGID := i.uid, i.gid
		if a.Mask&vfs.AttrUID != 0 {
			i.uid = a.UID
		}
		if a.Mask&vfs.AttrGID != 0 {
			i.gid = a.GID
		}
		if i.ftype != unix.S_IFDIR {
			// The group that decides is the file's before the change.
			i.mode &^= unix.S_ISUID
			if i.mode&unix.S_IXGRP != 0 || !c.InGroupOrCapable(oldGID, oldUID, oldGID) {
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
