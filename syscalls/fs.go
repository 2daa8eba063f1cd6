package syscalls

import (
	"strconv"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Chdir is chdir(path). A host directory is the host's: on success the
// sentry learns the new working directory from the kernel itself
// (/proc/TID/cwd), so that symlinks and ".." resolve as the kernel did. A
// directory of the sentry's becomes the task's working directory in the
// sentry only (the kernel's stays where it was; every path call that can
// reach the sentry's files is trapped and resolved against the sentry's).
func Chdir(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	r, err := resolveAt(c, unix.AT_FDCWD, args[0], true, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		// Passed with the path the sentry resolved, when it redirected
		// it (a walk through its mount back to the host, a pinned
		// jump: Observe would hand the host the guest's own path).
		c.ThenAtExit(chdirExit{})
		return sentry.Pass()
	}
	return chdirTo(c, r.Mount, r.Dentry)
}

// fchdirPinned serves fchdir(fd), a descriptor the table does not hold,
// when another thread may put a placeholder at the number meanwhile
// (racedDirfd): the kernel's own fchdir would look again, and a
// placeholder there made the guest's working directory a directory of the
// store, where its relative paths then led (against a thread moving the
// number between a host directory and a tmpfs one: 195 to 298 of 3,000
// made in the store; chdir of /proc/self/fd/N, 358 to 423: pinEnd). The
// directory is taken once (pinDirfd): a virtual one is the sentry's to
// enter; a host one is entered by chdir of its own path (the same checks
// for a guest that may enter the store: it overrides search permission).
// A host directory without such a path is left to the guest's call.
func fchdirPinned(c *sentry.Call, args *platform.SyscallArgs, fd int32) sentry.Result {
	loc, pinned, err := pinDirfd(c, fd)
	switch {
	case err != nil:
		return sentry.ErrOf(err)
	case !loc.IsHost():
		return chdirTo(c, loc.Mount, loc.Dentry)
	case pinned && pinnable(c, loc.Host) && len(loc.Host) < unix.PathMax:
		addr, err := c.WriteStackString(loc.Host)
		if err != nil {
			return sentry.ErrOf(err)
		}
		return sentry.RewriteTo(c, unix.SYS_CHDIR, platform.SyscallArgs{addr}, chdirExit{})
	}
	return sentry.Observe(c, unix.SYS_FCHDIR, args, chdirExit{}, false)
}

// Fchdir is fchdir(fd); see Chdir.
func Fchdir(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	f := c.FDTable().Get(int32(args[0]))
	if f == nil && racedDirfd(c) {
		return fchdirPinned(c, args, int32(args[0]))
	}
	if f == nil {
		if onSentryStore(c, int32(args[0])) {
			return sentry.Err(errUnserved)
		}
		return sentry.Observe(c, unix.SYS_FCHDIR, args, chdirExit{}, false)
	}
	defer f.DecRef()
	return chdirTo(c, f.Mount, f.Dentry)
}

// chdirTo is set_fs_pwd after the checks of chdir: ENOENT, ENOTDIR, and
// search permission.
func chdirTo(c *sentry.Call, m *vfs.Mount, d vfs.Dentry) sentry.Result {
	if d == nil {
		return sentry.Err(unix.ENOENT)
	}
	if d.Inode().Mode()&unix.S_IFMT != unix.S_IFDIR {
		return sentry.Err(unix.ENOTDIR)
	}
	if err := d.Inode().CheckPermission(c.Creds(), vfs.MayExec); err != nil {
		return sentry.ErrOf(err)
	}
	c.FSContext().SetCwd(vfs.Location{Mount: m, Dentry: d})
	return sentry.Ret(0)
}

// Getcwd is getcwd(buf, size): a working directory in the sentry's files
// is the sentry's to report. As Linux's, the path is built from the
// directory up into one PATH_MAX buffer, its NUL included: ENAMETOOLONG
// if it does not fit there (however deep the directory, the walk up
// stops at the buffer's start), then ERANGE if it does not fit the
// caller's; with the directory unlinked, "(unreachable)"-less Linux
// reports ENOENT.
func Getcwd(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	loc := c.FSContext().Cwd()
	if loc.IsHost() {
		return sentry.Pass()
	}
	st := c.StatBuf()
	if loc.Dentry.Inode().Stat(st); st.Nlink == 0 {
		// An unlinked working directory has no path (d_path's
		// "(unreachable)" case is ENOENT for getcwd).
		return sentry.Err(unix.ENOENT)
	}
	b := c.IOBuf(vfs.PathMax)
	b[len(b)-1] = 0
	i, err := vfs.PrependPath(b[:len(b)-1], loc.Mount, loc.Dentry)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if uintptr(len(b)-i) > args[1] {
		return sentry.Err(unix.ERANGE)
	}
	if err := c.CopyOut(args[0], b[i:]); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	return sentry.Ret(int64(len(b) - i))
}

// chdirExit takes the working directory a host chdir moved to from the
// kernel.
type chdirExit struct{}

func (chdirExit) Exit(c *sentry.Call, ret int64) int64 {
	if ret == 0 {
		var buf [unix.PathMax]byte
		link := "/proc/" + strconv.Itoa(int(c.TID)) + "/cwd"
		n, err := unix.Readlink(link, buf[:])
		if err == nil {
			// Held open: the directory the kernel's cwd is, however
			// it is renamed later (a path relative to it is checked
			// there, not at a stale name).
			c.FSContext().SetCwd(vfs.Location{Host: string(buf[:n]), Dir: c.Kernel().VFS.OpenHostDir(link)})
		}
	}
	return ret
}

// Umask records the new mask (umask cannot fail) for files the sentry
// creates, and lets the host keep its own copy in step.
func Umask(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	c.FSContext().SetUmask(uint32(args[0]))
	return sentry.Pass()
}
