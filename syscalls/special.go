package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Mknod is mknod(path, mode, dev).
func Mknod(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return mknodat(t, unix.AT_FDCWD, args[0], uint32(args[1]))
}

// Mknodat is mknodat(dirfd, path, mode, dev).
func Mknodat(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return mknodat(t, int32(args[0]), args[1], uint32(args[2]))
}

// mknodat is do_mknodat: a type of 0 or S_IFREG makes a regular file,
// FIFOs and sockets are the sentry's, device nodes are not modelled
// (EPERM, which is also what an unprivileged guest gets), a directory is
// EPERM and an unknown type EINVAL.
func mknodat(t *sentry.Task, dirfd int32, pathAddr uintptr, mode uint32) sentry.Result {
	typ := mode & unix.S_IFMT
	switch typ {
	case 0, unix.S_IFREG, unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
	case unix.S_IFDIR:
		return sentry.Err(unix.EPERM)
	default:
		return sentry.Err(unix.EINVAL)
	}
	r, err := resolveAt(t, dirfd, pathAddr, false, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	if r.Dentry != nil || r.Parent == nil {
		return sentry.Err(unix.EEXIST)
	}
	perm := mode & 07777 &^ t.FSContext().Umask()
	switch typ {
	case 0, unix.S_IFREG:
		_, err = r.Parent.Create(r.Name, perm, t.Creds())
		return retErr(err)
	case unix.S_IFCHR, unix.S_IFBLK:
		return sentry.Err(unix.EPERM)
	}
	m, ok := r.Parent.(vfs.Mknoder)
	if !ok {
		return sentry.Err(unix.EPERM)
	}
	_, err = m.Mknod(r.Name, typ|perm, t.Creds())
	return retErr(err)
}

// openFIFO opens a FIFO of the sentry's: the guest opens a host FIFO that
// stands for it (one per inode, made on first use), so readers and writers
// in different guest processes meet and block as Linux's pipes do. The
// descriptor is then a host fd.
func openFIFO(t *sentry.Task, m *vfs.Mount, ino vfs.Inode, flags uint32) sentry.Result {
	host, err := t.Kernel().HostFIFO(m, ino.Ino())
	if err != nil {
		return sentry.Err(unix.ENXIO)
	}
	if t.Notified() {
		// The open may block until the other end opens: this serving
		// thread waits, others serve the rest of the guest.
		t.Blocking()
		fd, err := unix.Open(host, int(flags&^(unix.O_CREAT|unix.O_EXCL|unix.O_TRUNC))|unix.O_CLOEXEC, 0)
		if err != nil {
			return sentry.ErrOf(errnoOf(err))
		}
		return installHostFD(t, fd, flags&unix.O_CLOEXEC != 0)
	}
	addr, err := t.WriteStackString(host)
	if err != nil {
		return sentry.ErrOf(err)
	}
	cwd := int64(unix.AT_FDCWD)
	args := platform.SyscallArgs{uintptr(cwd), addr, uintptr(flags &^ (unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC)), 0}
	return sentry.RewriteTo(t, unix.SYS_OPENAT, args, fifoOpenExit)
}

func fifoOpenExit(_ *sentry.Task, ret int64) int64 { return ret }
