package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// The sandbox does not model these calls on its own files yet. They are
// trapped all the same so that they never act on the host's file behind a
// mount (a path) or on a placeholder (a virtual fd): on a sentry file they
// fail with errUnserved; on host files they pass through, with the host
// path the sentry resolved when the guest's path went through a sentry
// mount (a working directory there: the kernel's own cwd is stale).
const errUnserved = unix.EOPNOTSUPP

// hostFD passes a call whose descriptor argument fd is the host's and
// fails it with errno when fd is a virtual fd: the host would act on the
// placeholder.
func hostFD(c *sentry.Call, fd int32, errno unix.Errno) sentry.Result {
	if c.FDTable().Has(fd) {
		return sentry.Err(errno)
	}
	return sentry.Pass()
}

// unservedPath guards calls whose first argument is a path (chroot,
// acct), which Linux follows.
func unservedPath(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if args[0] == 0 && c.Sysno == unix.SYS_ACCT {
		// acct(NULL) turns accounting off: no path.
		return sentry.Pass()
	}
	res, _ := hostPathAt(c, unix.AT_FDCWD, args[0], true, false)
	return res
}

// hostPathOrEmpty is hostPathAt where a NULL path with emptyOK is the
// empty path (getname_maybe_null).
func hostPathOrEmpty(c *sentry.Call, dirfd int32, addr uintptr, follow, emptyOK bool) sentry.Result {
	if addr == 0 && emptyOK {
		return hostDirFD(c, dirfd)
	}
	res, _ := hostPathAt(c, dirfd, addr, follow, emptyOK)
	return res
}

// hostDirFD passes a call that acts on dirfd itself (an empty path, a
// NULL one): the working directory for AT_FDCWD.
func hostDirFD(c *sentry.Call, dirfd int32) sentry.Result {
	if dirfd == unix.AT_FDCWD {
		if c.FSContext().Cwd().IsHost() {
			return sentry.Pass()
		}
		return sentry.Err(errUnserved)
	}
	return hostFD(c, dirfd, errUnserved)
}

// hostPathAt resolves (dirfd, path) for a call the sentry does not serve
// on its files: ok with Pass when the path stays on the host (the host
// then gets the path the sentry resolved, when it differs from the
// guest's), errUnserved when it leads to a sentry file, and the error
// when the path cannot be read or walked. A path the sentry cannot read
// (a bad pointer, memory it may not read such as memfd_secret's) fails
// here: the host might read it where the sentry could not, and act on a
// path nobody checked.
func hostPathAt(c *sentry.Call, dirfd int32, addr uintptr, follow, emptyOK bool) (sentry.Result, bool) {
	res, _, ok := hostResolve(c, dirfd, addr, follow, emptyOK)
	return res, ok
}

// hostPathAsIs is hostPathAt for a path the host reads from guest memory
// no register points at (inside a struct, an option string): the call can
// pass only if the host resolves the guest's own path to where the sentry
// did; a path that needs the sentry's resolution (it went through a
// sentry mount back to the host) cannot be handed over, and fails.
func hostPathAsIs(c *sentry.Call, dirfd int32, addr uintptr, follow, emptyOK bool) (sentry.Result, bool) {
	res, redirected, ok := hostResolve(c, dirfd, addr, follow, emptyOK)
	if ok && redirected {
		return sentry.Err(errUnserved), false
	}
	return res, ok
}

// hostResolve is hostPathAt, and whether the host must use the sentry's
// resolved path instead of the guest's.
func hostResolve(c *sentry.Call, dirfd int32, addr uintptr, follow, emptyOK bool) (res sentry.Result, redirected, ok bool) {
	r, err := resolveAt(c, dirfd, addr, follow, emptyOK)
	switch {
	case err != nil:
		return sentry.ErrOf(err), false, false
	case r.file != nil:
		r.file.DecRef()
		return sentry.Err(errUnserved), false, false
	case r.host:
		return sentry.Pass(), r.hostPath != "", true
	}
	return sentry.Err(errUnserved), false, false
}

// hostStringAsIs is hostPathAsIs for a path the sentry already holds.
func hostStringAsIs(c *sentry.Call, p string, follow bool) (sentry.Result, bool) {
	if p == "" {
		return sentry.Err(unix.ENOENT), false
	}
	addr, err := c.WriteStackString(p)
	if err != nil {
		return sentry.ErrOf(err), false
	}
	return hostPathAsIs(c, unix.AT_FDCWD, addr, follow, false)
}

// refusedENOSYS answers calls of kernel features the sandbox leaves out,
// as a kernel built without them does (cond_syscall: sys_ni_syscall).
func refusedENOSYS(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return sentry.Err(unix.ENOSYS)
}

// onSentryFile resolves a path argument for a call Linux itself fails on
// a tmpfs file: a host path passes (with the sentry's resolution when it
// went through a sentry mount); a missing sentry file is ENOENT, as the
// lookup's; an existing one is fn's answer for its inode, Linux's for a
// file of a tmpfs.
func onSentryFile(c *sentry.Call, addr uintptr, follow bool, fn func(mode uint32) unix.Errno) sentry.Result {
	r, err := resolveAt(c, unix.AT_FDCWD, addr, follow, false)
	switch {
	case err != nil:
		return sentry.ErrOf(err)
	case r.host:
		return sentry.Pass()
	case r.Dentry == nil:
		return sentry.Err(unix.ENOENT)
	}
	return sentry.Err(fn(r.Dentry.Inode().Mode()))
}

// Swap is swapon(path, flags) and swapoff(path): CAP_SYS_ADMIN first,
// then the file is opened for writing (EISDIR for a directory, as
// file_open_name's), and a tmpfs file cannot back swap: shmem has no
// swap_activate and no bmap, so setup_swap_extents fails with EINVAL
// (swapoff: a file that is not in use as swap is EINVAL too).
func Swap(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if !c.Creds().Capable(vfs.CapSysAdmin) {
		return sentry.Err(unix.EPERM)
	}
	return onSentryFile(c, args[0], true, func(mode uint32) unix.Errno {
		if mode&unix.S_IFMT == unix.S_IFDIR {
			return unix.EISDIR
		}
		return unix.EINVAL
	})
}
