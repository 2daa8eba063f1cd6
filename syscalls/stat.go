package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Fstat is fstat(fd, buf), served for virtual fds (O_PATH ones included).
func Fstat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	c.Kernel().Counters.Fstat.Add(1)
	return fstat(c, int32(args[0]), args[1])
}

// fstat is vfs_fstat: a host fd is the host's.
func fstat(c *sentry.Call, fd int32, buf uintptr) sentry.Result {
	f := c.FDTable().Get(fd)
	if f == nil {
		return sentry.Pass()
	}
	defer f.DecRef()
	if s, ok := f.Inode.(vfs.FDStater); ok && !f.IsPath() {
		// (An O_PATH description's host descriptor is not the file's
		// data but the store's empty file.)
		st := c.StatBuf()
		s.StatFD(f.HostFD, st)
		if err := c.CopyOut(buf, statBytes(st)); err != nil {
			return sentry.Err(unix.EFAULT)
		}
		return sentry.Ret(0)
	}
	return statTo(c, f.Inode, f.Mount, buf)
}

func statTo(c *sentry.Call, ino vfs.Inode, m *vfs.Mount, buf uintptr) sentry.Result {
	st := c.StatBuf()
	ino.Stat(st)
	if err := c.CopyOut(buf, statBytes(st)); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	return sentry.Ret(0)
}

// Newfstatat is newfstatat(dfd, path, buf, flags). With the shortcut on
// (the seeds' vfs_fstatat patch), dfd >= 0 with flags == AT_EMPTY_PATH
// reads one byte of the path and, if the path is empty (or NULL, which
// Linux 6.11+ takes as empty), is fstat(dfd) with no path copy and no walk.
// Everything else is copied and walked; an empty path with AT_EMPTY_PATH
// still ends on dfd itself, as vfs_statx does.
func Newfstatat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	dfd, pathAddr, buf, flags := int32(args[0]), args[1], args[2], uint32(args[3])
	k := c.Kernel()
	if k.Opts.FstatatShortcut && dfd >= 0 && flags == unix.AT_EMPTY_PATH {
		empty := pathAddr == 0
		if !empty {
			var b [1]byte
			if c.CopyIn(pathAddr, b[:]) != nil {
				return sentry.Err(unix.EFAULT)
			}
			empty = b[0] == 0
		}
		if empty {
			k.Counters.FstatatShortcut.Add(1)
			return fstat(c, dfd, buf)
		}
	}
	k.Counters.FstatatLookup.Add(1)
	if flags&unix.AT_EMPTY_PATH != 0 && pathAddr == 0 {
		// getname_maybe_null: NULL is the empty path.
		if dfd >= 0 {
			return fstat(c, dfd, buf)
		}
		r, _ := resolveEmpty(c, dfd)
		if r.host {
			return sentry.Pass()
		}
		return statTo(c, r.Dentry.Inode(), r.Mount, buf)
	}
	r, err := resolveAt(c, dfd, pathAddr, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.file != nil {
		defer r.file.DecRef()
		return statTo(c, r.file.Inode, r.file.Mount, buf)
	}
	if r.host {
		return sentry.Pass()
	}
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT|unix.AT_EMPTY_PATH|atStatxSyncType) != 0 {
		return sentry.Err(unix.EINVAL)
	}
	return statWalk(c, &r, buf)
}

func statWalk(c *sentry.Call, r *resolved, buf uintptr) sentry.Result {
	if r.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	if r.TrailingSlash && r.Dentry.Inode().Mode()&unix.S_IFMT != unix.S_IFDIR {
		return sentry.Err(unix.ENOTDIR)
	}
	return statTo(c, r.Dentry.Inode(), r.Mount, buf)
}

// Stat is stat(path, buf).
func Stat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return statPath(c, args[0], args[1], true)
}

// Lstat is lstat(path, buf).
func Lstat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return statPath(c, args[0], args[1], false)
}

func statPath(c *sentry.Call, pathAddr, buf uintptr, follow bool) sentry.Result {
	r, err := resolveAt(c, unix.AT_FDCWD, pathAddr, follow, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	return statWalk(c, &r, buf)
}

// statxReserved is STATX__RESERVED: a mask asking for it is EINVAL.
const statxReserved = 0x80000000

// Statx is statx(dfd, path, flags, mask, buf), with Linux's checks first
// (do_statx: unknown flags, both sync types, the reserved mask bit).
func Statx(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	dfd, pathAddr, flags, mask, buf := int32(args[0]), args[1], uint32(args[2]), uint32(args[3]), args[4]
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT|unix.AT_EMPTY_PATH|atStatxSyncType) != 0 ||
		flags&atStatxSyncType == atStatxSyncType || mask&statxReserved != 0 {
		return sentry.Err(unix.EINVAL)
	}
	var r resolved
	var err error
	if flags&unix.AT_EMPTY_PATH != 0 && pathAddr == 0 {
		r, err = resolveEmpty(c, dfd)
	} else {
		r, err = resolveAt(c, dfd, pathAddr, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0)
	}
	if err != nil {
		return sentry.ErrOf(err)
	}
	var ino vfs.Inode
	var m *vfs.Mount
	switch {
	case r.file != nil:
		defer r.file.DecRef()
		ino, m = r.file.Inode, r.file.Mount
	case r.host:
		return sentry.Pass()
	case r.Dentry == nil:
		return sentry.Err(unix.ENOENT)
	case r.TrailingSlash && r.Dentry.Inode().Mode()&unix.S_IFMT != unix.S_IFDIR:
		return sentry.Err(unix.ENOTDIR)
	default:
		ino, m = r.Dentry.Inode(), r.Mount
	}
	stx := c.StatxBuf()
	ino.Statx(stx)
	fillStatxMask(stx, mask, m)
	if err := c.CopyOut(buf, statxBytes(stx)); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	return sentry.Ret(0)
}

// atStatxSyncType is AT_STATX_SYNC_TYPE (not in x/sys/unix).
const atStatxSyncType = 0x6000

// statxMntIDUnique is STATX_MNT_ID_UNIQUE.
const statxMntIDUnique = 0x4000

// fillStatxMask trims what statx reports to what Linux 6.18 reports for
// tmpfs given the request: btime only when asked (shmem_getattr), mtime
// and ctime only when asked (multigrain timestamps, generic_fillattr since
// 6.13), and the mount id as the unique or the old kind, as requested.
func fillStatxMask(stx *unix.Statx_t, request uint32, m *vfs.Mount) {
	if request&unix.STATX_BTIME == 0 {
		stx.Mask &^= unix.STATX_BTIME
		stx.Btime = unix.StatxTimestamp{}
	}
	if request&(unix.STATX_MTIME|unix.STATX_CTIME) == 0 {
		stx.Mask &^= unix.STATX_MTIME | unix.STATX_CTIME
		stx.Mtime = unix.StatxTimestamp{}
		stx.Ctime = unix.StatxTimestamp{}
	}
	stx.Mnt_id = m.ID
	if request&statxMntIDUnique != 0 {
		stx.Mask |= statxMntIDUnique
	} else {
		stx.Mask |= unix.STATX_MNT_ID
	}
}
