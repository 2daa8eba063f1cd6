package syscalls

import (
	"strconv"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Mknod is mknod(path, mode, dev).
func Mknod(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return mknodat(c, unix.AT_FDCWD, args[0], uint32(args[1]), uint32(args[2]))
}

// Mknodat is mknodat(dirfd, path, mode, dev).
func Mknodat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return mknodat(c, int32(args[0]), args[1], uint32(args[2]), uint32(args[3]))
}

// mknodat is do_mknodat: a type of 0 or S_IFREG makes a regular file;
// FIFOs, sockets and device nodes are the sentry's inodes (a device node
// needs CAP_MKNOD, checked by the file system after the directory's
// permission, as vfs_mknod); a directory is EPERM and an unknown type
// EINVAL. dev is the syscall's unsigned int, which the kernel decodes
// (new_decode_dev) and stat encodes back to the same 32 bits.
func mknodat(c *sentry.Call, dirfd int32, pathAddr uintptr, mode, dev uint32) sentry.Result {
	typ := mode & unix.S_IFMT
	switch typ {
	case 0, unix.S_IFREG, unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
	case unix.S_IFDIR:
		return sentry.Err(unix.EPERM)
	default:
		return sentry.Err(unix.EINVAL)
	}
	r, err := resolveAt(c, dirfd, pathAddr, false, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	if r.Dentry != nil || r.Parent == nil {
		return sentry.Err(unix.EEXIST)
	}
	if r.TrailingSlash {
		// filename_create: a trailing slash asks for a directory.
		return sentry.Err(unix.ENOENT)
	}
	if err := mntWantWrite(r.Parent.Inode()); err != nil {
		return sentry.ErrOf(err)
	}
	perm := mode & 07777 &^ c.FSContext().Umask()
	if typ == 0 || typ == unix.S_IFREG {
		_, err = r.Parent.Create(r.Name, perm, c.Creds())
		return retErr(err)
	}
	m, ok := r.Parent.(vfs.Mknoder)
	if !ok {
		return sentry.Err(unix.EPERM)
	}
	_, err = m.Mknod(r.Name, typ|perm, uint64(dev), c.Creds())
	return retErr(err)
}

// openDevice opens a device node of the sentry's: the guest opens a host
// device node with the same number, made in the sandbox's private
// directory on first use (permission was checked on the sentry's inode),
// so reads, writes and ioctls reach the device itself. The descriptor is
// then a host fd, as for a FIFO.
func openDevice(c *sentry.Call, m *vfs.Mount, ino vfs.Inode, flags uint32) sentry.Result {
	dev, ok := ino.(vfs.DeviceInode)
	if !ok {
		return sentry.Err(unix.ENXIO)
	}
	host, err := c.Kernel().HostDevice(m, ino.Ino(), ino.Mode()&unix.S_IFMT, dev.Rdev())
	if err != nil {
		return sentry.ErrOf(errnoOf(err))
	}
	return openHostSpecial(c, host, ino, flags)
}

// openFIFO opens a FIFO of the sentry's: the guest opens a host FIFO that
// stands for it (one per inode, made on first use), so readers and writers
// in different guest processes meet and block as Linux's pipes do. The
// descriptor is then a host fd.
func openFIFO(c *sentry.Call, m *vfs.Mount, ino vfs.Inode, flags uint32) sentry.Result {
	host, err := c.Kernel().HostFIFO(m, ino.Ino())
	if err != nil {
		return sentry.Err(unix.ENXIO)
	}
	return openHostSpecial(c, host, ino, flags)
}

// openHostSpecial opens the host special file standing for ino, with the
// guest's flags less those that only create or truncate. The host file
// takes ino's permission bits and owner first: fstat of the descriptor,
// which the host answers, then shows them as Linux would (only st_dev,
// st_ino and the times are the host file's). On ptrace the guest's own
// open is pointed at the file's path in the guest's mount namespace; on
// unotify the sentry opens it through the registry's descriptor of the
// private directory and installs it.
func openHostSpecial(c *sentry.Call, host sentry.HostSpecial, ino vfs.Inode, flags uint32) sentry.Result {
	var want unix.Stat_t
	ino.Stat(&want)
	host.SetAttr(want.Mode, want.Uid, want.Gid)
	flags &^= unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC
	if c.Notified() {
		// O_NOCTTY: a terminal opened here must not become the
		// sentry's controlling terminal; the guest's own open (ptrace)
		// acquires it as Linux would.
		oflags := int(flags) | unix.O_NOCTTY
		open := func() (int, error) { return host.Open(oflags) }
		if ino.Mode()&unix.S_IFMT == unix.S_IFIFO {
			// It may wait for the other end: off the serving threads
			// and without the task's lock (a reader nobody writes to
			// must not hold up the sandbox, nor outlive its guest:
			// the other end, opened without blocking, releases it).
			other := unix.O_WRONLY
			if flags&unix.O_ACCMODE != unix.O_RDONLY {
				other = unix.O_RDONLY
			}
			cancel := func() {
				if fd, err := host.Open(other | unix.O_NONBLOCK); err == nil {
					unix.Close(fd)
				}
			}
			return c.OpenFIFO(sentry.FIFOOpen{
				FIFO:    host.GuestPath(),
				Key:     host.GuestPath() + "\x00" + strconv.Itoa(oflags),
				Flags:   oflags,
				Open:    host.Open,
				Cancel:  cancel,
				Cloexec: flags&unix.O_CLOEXEC != 0,
			})
		}
		// A device's open may block too (a terminal's carrier): that
		// serving thread waits, others serve the rest of the guest.
		c.Blocking()
		fd, err := open()
		if err != nil {
			return sentry.ErrOf(errnoOf(err))
		}
		return c.InstallHost(fd, flags&unix.O_CLOEXEC != 0)
	}
	addr, err := c.WriteStackString(host.GuestPath())
	if err != nil {
		return sentry.ErrOf(err)
	}
	cwd := int64(unix.AT_FDCWD)
	// O_NOFOLLOW: only the sentry makes nodes there, never a symlink.
	args := platform.SyscallArgs{uintptr(cwd), addr, uintptr(flags | unix.O_NOFOLLOW), 0}
	return sentry.RewriteTo(c, unix.SYS_OPENAT, args, sentry.Identity{})
}
