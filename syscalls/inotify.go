package syscalls

import (
	"strconv"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// InotifyAddWatch is inotify_add_watch(fd, path, mask). A host path is the
// host's (with the sentry's resolution when it went through a sentry
// mount). A sentry file's watch is the host's too, kept on the host inode
// that raises the file's events (vfs.InotifyTarget: a regular file's
// backing, a directory's backing mirroring its entries, a symlink's or
// socket's stand-in; a FIFO or device has none): the sentry adds
// it to the guest's own instance, its copy of which it takes with
// pidfd_getfd, through /proc/self/fd of an O_PATH open of that inode. The
// watch descriptor is then the instance's, and the events, their names
// and cookies, IN_IGNORED, IN_MASK_CREATE's EEXIST, inotify_rm_watch and
// the instance's limits are the host's, as Linux's tmpfs raises them
// through fsnotify.
func InotifyAddWatch(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	fd, mask := int32(args[0]), uint32(args[2])
	r, rerr := resolveAt(c, unix.AT_FDCWD, args[1], mask&unix.IN_DONT_FOLLOW == 0, false)
	switch {
	case rerr == nil && r.host:
		return sentry.Pass()
	case r.file != nil:
		r.file.DecRef()
	}
	inst, errno := inotifyInstance(c, fd, mask)
	if errno != 0 {
		return sentry.Err(errno)
	}
	defer unix.Close(inst)
	if rerr != nil {
		// The lookup's error (user_path_at), which comes after the
		// mask's and the instance's.
		return sentry.ErrOf(rerr)
	}
	d := r.Dentry
	if d == nil {
		return sentry.Err(unix.ENOENT)
	}
	ino := d.Inode()
	if mask&unix.IN_ONLYDIR != 0 && ino.Mode()&unix.S_IFMT != unix.S_IFDIR {
		// LOOKUP_DIRECTORY.
		return sentry.Err(unix.ENOTDIR)
	}
	// inotify_find_inode: "you can only watch an inode if you have read
	// permissions on it".
	if err := ino.CheckPermission(c.Creds(), vfs.MayRead); err != nil {
		return sentry.ErrOf(err)
	}
	t, ok := d.(vfs.InotifyTarget)
	if !ok {
		return sentry.Err(errUnserved)
	}
	target, err := t.WatchTarget()
	if err != nil {
		return sentry.ErrOf(err)
	}
	defer unix.Close(target)
	// The magic link is followed (no IN_DONT_FOLLOW: the guest's own
	// was applied by the walk); the lookup flags are not part of the
	// watch's mask (inotify_arg_to_mask).
	wd, err := unix.InotifyAddWatch(inst, "/proc/self/fd/"+strconv.Itoa(target), mask&^unix.IN_DONT_FOLLOW)
	if err != nil {
		return sentry.ErrOf(err)
	}
	return sentry.Ret(int64(wd))
}

// inotifyInstance takes the guest's descriptor fd, an inotify instance,
// with the checks inotify_add_watch makes before its lookup, in their
// order (the mask's bits, then the descriptor, then IN_MASK_ADD with
// IN_MASK_CREATE and the instance's type): they are the running kernel's
// own, asked with a lookup that cannot succeed (an empty path, ENOENT),
// so a newer kernel's mask bits are its own.
func inotifyInstance(c *sentry.Call, fd int32, mask uint32) (int, unix.Errno) {
	inst, err := platform.GetFD(c.TID, fd)
	if err != nil {
		if _, merr := unix.InotifyAddWatch(-1, "", mask); merr == unix.EINVAL {
			return -1, unix.EINVAL
		}
		return -1, errnoOf(err)
	}
	if _, err := unix.InotifyAddWatch(inst, "", mask); err != unix.ENOENT {
		unix.Close(inst)
		return -1, errnoOf(err)
	}
	return inst, 0
}
