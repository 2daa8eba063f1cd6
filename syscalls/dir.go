package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// Unlink is unlink(path).
func Unlink(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return unlinkat(c, unix.AT_FDCWD, args[0], 0)
}

// Unlinkat is unlinkat(dirfd, path, flags).
func Unlinkat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	flags := uint32(args[2])
	if flags&^unix.AT_REMOVEDIR != 0 {
		return sentry.Err(unix.EINVAL)
	}
	return unlinkat(c, int32(args[0]), args[1], flags)
}

// Rmdir is rmdir(path).
func Rmdir(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return unlinkat(c, unix.AT_FDCWD, args[0], unix.AT_REMOVEDIR)
}

// unlinkat is do_unlinkat and do_rmdir: the parent is walked, the last
// component must be a plain name ("." and ".." are refused as Linux
// refuses them), and a trailing slash is only allowed on a directory.
func unlinkat(c *sentry.Call, dirfd int32, pathAddr uintptr, flags uint32) sentry.Result {
	r, err := resolveAt(c, dirfd, pathAddr, false, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	rmdir := flags&unix.AT_REMOVEDIR != 0
	switch r.Name {
	case "":
		// A mount's root.
		if rmdir {
			return sentry.Err(unix.EBUSY)
		}
		return sentry.Err(unix.EISDIR)
	case ".":
		if rmdir {
			return sentry.Err(unix.EINVAL)
		}
		return sentry.Err(unix.EISDIR)
	case "..":
		if rmdir {
			return sentry.Err(unix.ENOTEMPTY)
		}
		return sentry.Err(unix.EISDIR)
	}
	if err := mntWantWrite(r.Parent.Inode()); err != nil {
		return sentry.ErrOf(err)
	}
	if r.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	if rmdir {
		return retErr(r.Parent.Rmdir(r.Name, c.Creds()))
	}
	if r.TrailingSlash {
		if r.Dentry.Inode().Mode()&unix.S_IFMT == unix.S_IFDIR {
			return sentry.Err(unix.EISDIR)
		}
		return sentry.Err(unix.ENOTDIR)
	}
	return retErr(r.Parent.Unlink(r.Name, c.Creds()))
}

// Mkdir is mkdir(path, mode).
func Mkdir(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return mkdirat(c, unix.AT_FDCWD, args[0], uint32(args[1]))
}

// Mkdirat is mkdirat(dirfd, path, mode).
func Mkdirat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return mkdirat(c, int32(args[0]), args[1], uint32(args[2]))
}

// mkdirat is do_mkdirat: the mode keeps permission and sticky bits, less
// the umask.
func mkdirat(c *sentry.Call, dirfd int32, pathAddr uintptr, mode uint32) sentry.Result {
	r, err := resolveAt(c, dirfd, pathAddr, false, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	if r.Dentry != nil || r.Name == "" || r.Name == "." || r.Name == ".." {
		return sentry.Err(unix.EEXIST)
	}
	if err := mntWantWrite(r.Parent.Inode()); err != nil {
		return sentry.ErrOf(err)
	}
	mode = mode & (0777 | unix.S_ISVTX) &^ c.FSContext().Umask()
	_, err = r.Parent.Mkdir(r.Name, mode, c.Creds())
	return retErr(err)
}

func retErr(err error) sentry.Result {
	if err != nil {
		return sentry.ErrOf(err)
	}
	return sentry.Ret(0)
}
