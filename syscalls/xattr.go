package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// The sentry's tmpfs stores no extended attributes (setting them is not
// modelled: EOPNOTSUPP, see unserved.go). Reading them answers as Linux's
// tmpfs does for a file that has none: getxattr ENODATA (after the name is
// checked: ERANGE for an empty or over-long name, as xattr_name_from_user),
// listxattr an empty list.

// xattrNameMax is XATTR_NAME_MAX.
const xattrNameMax = 255

func getxattrAt(t *sentry.Task, pathAddr, nameAddr uintptr, follow bool) sentry.Result {
	r, err := resolveAt(t, unix.AT_FDCWD, pathAddr, follow, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	if r.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	return noXattr(t, nameAddr)
}

func noXattr(t *sentry.Task, nameAddr uintptr) sentry.Result {
	name, err := t.ReadPath(nameAddr)
	if err == unix.ENAMETOOLONG || (err == nil && (len(name) == 0 || len(name) > xattrNameMax)) {
		return sentry.Err(unix.ERANGE)
	}
	if err != nil {
		return sentry.ErrOf(err)
	}
	return sentry.Err(unix.ENODATA)
}

// Getxattr is getxattr(path, name, value, size).
func Getxattr(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return getxattrAt(t, args[0], args[1], true)
}

// Lgetxattr is lgetxattr(path, name, value, size).
func Lgetxattr(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return getxattrAt(t, args[0], args[1], false)
}

// Fgetxattr is fgetxattr(fd, name, value, size).
func Fgetxattr(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	f, res, ok := fileFor(t, int32(args[0]))
	if !ok {
		return res
	}
	defer f.DecRef()
	return noXattr(t, args[1])
}

func listxattrAt(t *sentry.Task, pathAddr uintptr, follow bool) sentry.Result {
	r, err := resolveAt(t, unix.AT_FDCWD, pathAddr, follow, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	if r.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	return sentry.Ret(0)
}

// Listxattr is listxattr(path, list, size).
func Listxattr(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return listxattrAt(t, args[0], true)
}

// Llistxattr is llistxattr(path, list, size).
func Llistxattr(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return listxattrAt(t, args[0], false)
}

// Flistxattr is flistxattr(fd, list, size).
func Flistxattr(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	f, res, ok := fileFor(t, int32(args[0]))
	if !ok {
		return res
	}
	defer f.DecRef()
	return sentry.Ret(0)
}
