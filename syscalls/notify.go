package syscalls

import (
	"os"
	"runtime"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// This file is what the handlers of the notify set do differently when a
// call is served by notification (the unotify platform): no register can
// be rewritten, so a path the sentry resolved back to the host is acted on
// by the sentry itself, with the guest's credentials, and a host
// descriptor the guest must get is installed with the platform's ADDFD.

// asGuest runs fn on this (locked) serving thread as the guest's own call
// would run: with the task's fsuid, fsgid, groups and effective
// capabilities (Kernel.ActAs: each set and checked, then the sentry's
// own restored and checked), and with umask, the guest's umask (the
// serving threads have fs_structs of their own). An errno instead of
// fn's result says the identity could not be taken (fn did not run) or
// given back (fn ran: the caller releases what it made).
func asGuest(t *sentry.Task, umask bool, fn func() error) error {
	if umask {
		old, _, _ := unix.RawSyscall(unix.SYS_UMASK, uintptr(t.FSContext().Umask()), 0, 0)
		defer unix.RawSyscall(unix.SYS_UMASK, old, 0, 0)
	}
	return t.Kernel().ActAs(t.Creds(), fn)
}

// openHost is an open whose path the sentry resolved back to the host:
// the sentry opens the host file for the guest and installs it.
func openHost(c *sentry.Call, host string, flags, mode uint32, resolve uint64) sentry.Result {
	if flags&(unix.O_NONBLOCK|unix.O_PATH) == 0 && flags&unix.O_ACCMODE != unix.O_RDWR {
		if r, ok := openHostPinned(c, host, flags, mode, resolve); ok {
			return r
		}
	}
	fd := -1
	// A host device or FUSE file may block the open.
	c.Blocking()
	err := asGuest(c.Task, true, func() error {
		var err error
		fd, err = openPath(host, flags, mode, resolve)
		return err
	})
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return sentry.ErrOf(errnoOf(err))
	}
	if c.Kernel().VFS.OnStore(fd, "") {
		// A magic link on the way led to a placeholder a racing
		// thread put there (openJumped): never the guest's to hold.
		unix.Close(fd)
		return sentry.Err(unix.EOPNOTSUPP)
	}
	return c.InstallHost(fd, flags&unix.O_CLOEXEC != 0)
}

// openPath opens host path with the guest's flags, mode and, for
// openat2, its RESOLVE_* flags (open(2) itself ignores unknown flags,
// which openat2 refuses).
func openPath(host string, flags, mode uint32, resolve uint64) (int, error) {
	if resolve != 0 {
		how := unix.OpenHow{Flags: uint64(flags) | unix.O_CLOEXEC, Mode: uint64(mode), Resolve: resolve}
		return unix.Openat2(unix.AT_FDCWD, host, &how)
	}
	return unix.Open(host, int(flags)|unix.O_CLOEXEC, mode)
}

// openHostPinned serves an open that may wait: found first as the guest
// by an O_PATH descriptor, which never waits, so that what is opened is
// the inode the guest's path named, whatever is renamed meanwhile (a
// guest swapping a FIFO in after a look at the path would otherwise hold
// a serving thread). A FIFO's open is then served as the sentry's own
// FIFOs are (Call.OpenFIFO: off the serving threads, which 64 such opens
// held before, hanging the sandbox); any other file is opened on this
// thread through the descriptor's /proc link, as the guest (the open
// checks the inode as the guest's own open would). ok is false when the
// caller must open the path itself: O_CREAT|O_EXCL and O_DIRECTORY, which
// never open a FIFO, a store file (refused there), and a name still
// missing after three tries to make it.
func openHostPinned(c *sentry.Call, host string, flags, mode uint32, resolve uint64) (sentry.Result, bool) {
	if flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL || flags&unix.O_DIRECTORY != 0 {
		return sentry.Result{}, false
	}
	// A FUSE file's lookup or open may wait, and a device's open (a
	// terminal's carrier): another serving thread serves meanwhile.
	c.Blocking()
	for try := 0; try < 3; try++ {
		pfd := -1
		err := asGuest(c.Task, false, func() error {
			var err error
			how := unix.OpenHow{Flags: uint64(flags&unix.O_NOFOLLOW) | unix.O_PATH | unix.O_CLOEXEC, Resolve: resolve}
			pfd, err = unix.Openat2(unix.AT_FDCWD, host, &how)
			return err
		})
		switch {
		case err == unix.ENOENT && flags&unix.O_CREAT != 0:
			// Made here, or found at the next try if another made it
			// meanwhile.
			fd := -1
			err := asGuest(c.Task, true, func() error {
				var err error
				fd, err = openPath(host, flags|unix.O_EXCL, mode, resolve)
				return err
			})
			if err == unix.EEXIST {
				continue
			}
			if err != nil {
				return sentry.ErrOf(errnoOf(err)), true
			}
			return c.InstallHost(fd, flags&unix.O_CLOEXEC != 0), true
		case err != nil:
			// The walk's own errno, which the open would meet first.
			return sentry.ErrOf(errnoOf(err)), true
		}
		var st unix.Stat_t
		if unix.Fstat(pfd, &st) != nil || c.Kernel().VFS.OnStore(pfd, "") {
			unix.Close(pfd)
			return sentry.Result{}, false
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFIFO:
			return openPinnedFIFO(c, pfd, &st, flags), true
		case unix.S_IFLNK:
			// O_NOFOLLOW met a symlink.
			unix.Close(pfd)
			return sentry.Err(unix.ELOOP), true
		}
		fd := -1
		err = asGuest(c.Task, false, func() error {
			var err error
			fd, err = unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), int(flags&^(unix.O_CREAT|unix.O_NOFOLLOW))|unix.O_CLOEXEC, 0)
			return err
		})
		unix.Close(pfd)
		if err != nil {
			return sentry.ErrOf(errnoOf(err)), true
		}
		return c.InstallHost(fd, flags&unix.O_CLOEXEC != 0), true
	}
	return sentry.Result{}, false
}

// openPinnedFIFO opens the host FIFO pfd (an O_PATH descriptor, which it
// takes) for the guest with flags (Call.OpenFIFO).
func openPinnedFIFO(c *sentry.Call, pfd int, st *unix.Stat_t, flags uint32) sentry.Result {
	// The O_PATH file lives as long as an open may use it: the garbage
	// collector closes it once the open is done with.
	file := os.NewFile(uintptr(pfd), "")
	link := "/proc/self/fd/" + strconv.Itoa(pfd)
	k, creds := c.Kernel(), c.Creds()
	oflags := int(flags&^(unix.O_CREAT|unix.O_EXCL|unix.O_TRUNC|unix.O_NOFOLLOW)) | unix.O_NOCTTY | unix.O_CLOEXEC
	open := func(fl int) (int, error) {
		defer runtime.KeepAlive(file)
		fd := -1
		err := k.ActAs(creds, func() error {
			var err error
			fd, err = unix.Open(link, fl, 0)
			return err
		})
		return fd, err
	}
	fifo := "host:" + strconv.FormatUint(st.Dev, 10) + ":" + strconv.FormatUint(st.Ino, 10)
	return c.OpenFIFO(sentry.FIFOOpen{
		FIFO:    fifo,
		Key:     fifo + "\x00" + strconv.Itoa(oflags),
		Flags:   oflags,
		Open:    open,
		Cloexec: flags&unix.O_CLOEXEC != 0,
	})
}

// statHost serves the stat family for a path the sentry resolved back to
// the host (the Host of stat, lstat, newfstatat and statx).
func statHost(c *sentry.Call, args *platform.SyscallArgs, host string) sentry.Result {
	var buf uintptr
	var out []byte
	err := asGuest(c.Task, false, func() error {
		if c.Sysno == unix.SYS_STATX {
			stx := c.StatxBuf()
			buf, out = args[4], statxBytes(stx)
			return unix.Statx(unix.AT_FDCWD, host, int(args[2])&^unix.AT_EMPTY_PATH, int(args[3]), stx)
		}
		buf = args[1]
		flags := 0
		switch c.Sysno {
		case unix.SYS_NEWFSTATAT:
			buf, flags = args[2], int(args[3])&unix.AT_SYMLINK_NOFOLLOW
		case unix.SYS_LSTAT:
			flags = unix.AT_SYMLINK_NOFOLLOW
		}
		st := c.StatBuf()
		out = statBytes(st)
		return unix.Fstatat(unix.AT_FDCWD, host, st, flags)
	})
	if err != nil {
		return sentry.ErrOf(errnoOf(err))
	}
	if err := c.CopyOut(buf, out); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	return sentry.Ret(0)
}

// accessHost serves access, faccessat and faccessat2 on a host path.
func accessHost(c *sentry.Call, args *platform.SyscallArgs, host string) sentry.Result {
	mode, flags := uint32(args[1]), 0
	switch c.Sysno {
	case unix.SYS_FACCESSAT:
		mode = uint32(args[2])
	case unix.SYS_FACCESSAT2:
		mode, flags = uint32(args[2]), int(args[3])&unix.AT_SYMLINK_NOFOLLOW
	}
	// The guest's real and effective ids are the ones it acts with here
	// (the sandbox does not model them apart): AT_EACCESS checks with
	// the credentials asGuest set.
	err := asGuest(c.Task, false, func() error {
		return unix.Faccessat2(unix.AT_FDCWD, host, mode, flags|unix.AT_EACCESS)
	})
	return retErr(err)
}

// readlinkHost serves readlink and readlinkat on a host path.
func readlinkHost(c *sentry.Call, args *platform.SyscallArgs, host string) sentry.Result {
	buf, size := args[1], int(int32(args[2]))
	if c.Sysno == unix.SYS_READLINKAT {
		buf, size = args[2], int(int32(args[3]))
	}
	if size <= 0 {
		return sentry.Err(unix.EINVAL)
	}
	b := c.IOBuf(unix.PathMax)
	var n int
	err := asGuest(c.Task, false, func() error {
		var err error
		n, err = unix.Readlink(host, b)
		return err
	})
	if err != nil {
		return sentry.ErrOf(errnoOf(err))
	}
	if n > size {
		n = size
	}
	if err := c.CopyOut(buf, b[:n]); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	return sentry.Ret(int64(n))
}

// unlinkHost serves unlink, unlinkat and rmdir on a path the sentry
// resolved back to the host (Unlinkat checked the flags).
func unlinkHost(c *sentry.Call, args *platform.SyscallArgs, host string) sentry.Result {
	flags := 0
	switch c.Sysno {
	case unix.SYS_UNLINKAT:
		flags = int(uint32(args[2]))
	case unix.SYS_RMDIR:
		flags = unix.AT_REMOVEDIR
	}
	return retErr(asGuest(c.Task, false, func() error {
		return unix.Unlinkat(unix.AT_FDCWD, host, flags)
	}))
}

// mkdirHost serves mkdir and mkdirat on a path the sentry resolved back to
// the host, with the guest's umask.
func mkdirHost(c *sentry.Call, args *platform.SyscallArgs, host string) sentry.Result {
	mode := uint32(args[1])
	if c.Sysno == unix.SYS_MKDIRAT {
		mode = uint32(args[2])
	}
	return retErr(asGuest(c.Task, true, func() error {
		return unix.Mkdir(host, mode)
	}))
}

// utimensatHost serves utimensat on a path the sentry resolved back to the
// host: the times are copied in and the host checks them. NULL is both
// UTIME_NOW, which vfs_utimes treats as NULL.
func utimensatHost(c *sentry.Call, args *platform.SyscallArgs, host string) sentry.Result {
	ts := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	if args[2] != 0 {
		if err := c.ReadArg(args[2], unsafe.Slice((*byte)(unsafe.Pointer(&ts[0])), 2*unsafe.Sizeof(ts[0]))); err != nil {
			return sentry.ErrOf(err)
		}
	}
	flags := int(uint32(args[3]) & unix.AT_SYMLINK_NOFOLLOW)
	return retErr(asGuest(c.Task, false, func() error {
		return unix.UtimesNanoAt(unix.AT_FDCWD, host, ts, flags)
	}))
}

// openHostPath is the Host of the open family: openat serves its
// redirected paths itself (it knows the flags), so nothing reaches here
// but a call that passed through after a redirect.
func openHostPath(c *sentry.Call, _ *platform.SyscallArgs, _ string) sentry.Result {
	return sentry.Err(unix.ENOSYS)
}

// notifySet are the calls a notifying platform serves without a stop: the
// hot ones, whose handlers never rewrite a call, with the Host that serves
// their paths resolved back to the host (the name changes of one path
// too: unlink, rmdir, mkdir, utimensat), and the descriptor calls whose
// handlers act on the sentry's file or let the host run the call (fcntl
// and ioctl but for the values that stop: the table's StopValues). The
// others (exec, chdir, renames and links, ...) still stop for the tracer.
var notifySet = map[uintptr]sentry.HostFn{
	unix.SYS_OPEN: openHostPath, unix.SYS_OPENAT: openHostPath, unix.SYS_OPENAT2: openHostPath, unix.SYS_CREAT: openHostPath,
	unix.SYS_CLOSE: nil, unix.SYS_FSTAT: nil,
	unix.SYS_DUP: nil, unix.SYS_DUP2: nil, unix.SYS_DUP3: nil,
	unix.SYS_NEWFSTATAT: statHost, unix.SYS_STAT: statHost, unix.SYS_LSTAT: statHost, unix.SYS_STATX: statHost,
	unix.SYS_GETDENTS64: nil, unix.SYS_FSTATFS: nil,
	unix.SYS_ACCESS: accessHost, unix.SYS_FACCESSAT: accessHost, unix.SYS_FACCESSAT2: accessHost,
	unix.SYS_READLINK: readlinkHost, unix.SYS_READLINKAT: readlinkHost,
	unix.SYS_UNLINK: unlinkHost, unix.SYS_UNLINKAT: unlinkHost, unix.SYS_RMDIR: unlinkHost,
	unix.SYS_MKDIR: mkdirHost, unix.SYS_MKDIRAT: mkdirHost, unix.SYS_UTIMENSAT: utimensatHost,
	unix.SYS_FCNTL: nil, unix.SYS_IOCTL: nil,
	unix.SYS_FGETXATTR: nil, unix.SYS_FSETXATTR: nil, unix.SYS_FLISTXATTR: nil, unix.SYS_FREMOVEXATTR: nil,
}
