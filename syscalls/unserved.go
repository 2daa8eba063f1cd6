package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// The sandbox does not model these calls on its own files yet. They are
// trapped all the same so that they never act on the host's file behind a
// mount (a path) or on a placeholder (a virtual fd): on a sentry file they
// fail with errUnserved; on host files they pass through.
const errUnserved = unix.EOPNOTSUPP

// unservedFD guards calls whose first argument is a descriptor.
func unservedFD(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	if t.FDTable().Has(int32(args[0])) {
		return sentry.Err(errUnserved)
	}
	return sentry.Pass()
}

// unservedPath guards calls whose first argument is a path.
func unservedPath(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return unservedAt(t, unix.AT_FDCWD, args[0])
}

// unservedPathAt guards calls whose first two arguments are (dirfd, path).
func unservedPathAt(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return unservedAt(t, int32(args[0]), args[1])
}

func unservedAt(t *sentry.Task, dirfd int32, pathAddr uintptr) sentry.Result {
	r, err := resolveAt(t, dirfd, pathAddr, true, true)
	if err != nil {
		// Let the host report path errors for paths it will see; ours
		// are ours.
		if err == unix.EFAULT || err == unix.ENAMETOOLONG {
			return sentry.Pass()
		}
		return sentry.ErrOf(err)
	}
	if r.file != nil {
		r.file.DecRef()
		return sentry.Err(errUnserved)
	}
	if r.host {
		return sentry.Pass()
	}
	return sentry.Err(errUnserved)
}
