package syscalls

import (
	"slices"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// The dup family runs on the host, which allocates the number, checks the
// arguments (EBADF, EINVAL, EMFILE) and replaces the target placeholder;
// on a stopped call the table follows at the call's exit when it
// succeeded. A notified call (dup, dup2, dup3 on unotify) has no exit: the
// sentry installs the placeholder itself with ADDFD, which is the kernel's
// own path for these calls (get_unused_fd_flags for dup, replace_fd, that
// is do_dup2, for dup2 and dup3), and the table follows as it does. Calls
// touching no virtual fd pass through without an exit stop, unless other
// threads share the table: then the source number may become a virtual fd
// between the sentry's look and the kernel's copy, so every dup is
// followed by what the kernel copied (Call.FollowCopy, Call.DupShared).

// Dup is dup(oldfd).
func Dup(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if c.Notified() {
		if c.FDTable().Shared() {
			return dupShared(c, int32(args[0]), -1, false)
		}
		f := c.FDTable().Get(int32(args[0]))
		if f == nil {
			return sentry.Pass()
		}
		defer f.DecRef()
		return c.InstallFile(f, false, nil)
	}
	return dupObserve(c, args, unix.SYS_DUP, int32(args[0]), -1, false)
}

// Dup2 is dup2(oldfd, newfd).
func Dup2(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if c.Notified() {
		return dupNotified(c, int32(args[0]), int32(args[1]), false)
	}
	return dupObserve(c, args, unix.SYS_DUP2, int32(args[0]), int32(args[1]), false)
}

// Dup3 is dup3(oldfd, newfd, flags).
func Dup3(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	oldfd, newfd, flags := int32(args[0]), int32(args[1]), uint32(args[2])
	if c.Notified() {
		if flags&^unix.O_CLOEXEC != 0 || oldfd == newfd {
			// ksys_dup3's EINVAL, the host's.
			return sentry.Pass()
		}
		return dupNotified(c, oldfd, newfd, flags&unix.O_CLOEXEC != 0)
	}
	return dupObserve(c, args, unix.SYS_DUP3, oldfd, newfd, flags&unix.O_CLOEXEC != 0)
}

// dupNotified serves a notified dup2 or dup3 that touches a virtual fd:
// oldfd's open file (the placeholder's, or a host file's, taken from the
// guest with pidfd_getfd) goes to newfd with ADDFD's SETFD, which closes
// what newfd held as dup2 does, and the table follows.
func dupNotified(c *sentry.Call, oldfd, newfd int32, cloexec bool) sentry.Result {
	fdt := c.FDTable()
	if fdt.Shared() && oldfd != newfd {
		return dupShared(c, oldfd, newfd, cloexec)
	}
	f := fdt.Get(oldfd)
	if f != nil {
		defer f.DecRef()
	}
	if f == nil && !fdt.Has(newfd) || oldfd == newfd {
		// No virtual fd, or dup2(fd, fd), which changes nothing: the
		// host's.
		return sentry.Pass()
	}
	if f != nil {
		return c.InstallAt(f.HostFD, newfd, f, cloexec)
	}
	// A host file over a virtual fd.
	src, err := platform.GetFD(c.TID, oldfd)
	if err != nil {
		// oldfd is not open: dup2's EBADF.
		return sentry.ErrOf(err)
	}
	defer unix.Close(src)
	if fl, err := unix.FcntlInt(uintptr(src), unix.F_GETFL, 0); err == nil && fl&unix.O_PATH != 0 {
		// ADDFD takes no O_PATH file (fget): the table lets newfd go
		// first and the host duplicates. Another thread using newfd
		// meanwhile sees the placeholder as a host file.
		if old := fdt.Remove(newfd); old != nil {
			old.DecRef()
		}
		return sentry.PassServed()
	}
	return c.InstallAt(src, newfd, nil, cloexec)
}

// dupShared serves a notified dup in a shared table (Call.DupShared).
func dupShared(c *sentry.Call, oldfd, newfd int32, cloexec bool) sentry.Result {
	if r, ok := c.DupShared(oldfd, newfd, cloexec); ok {
		return r
	}
	return sentry.PassServed()
}

func dupObserve(c *sentry.Call, args *platform.SyscallArgs, sysno uintptr, oldfd, newfd int32, cloexec bool) sentry.Result {
	fdt := c.FDTable()
	if !fdt.Has(oldfd) && (newfd < 0 || !fdt.Has(newfd)) && !fdt.Shared() {
		return sentry.Pass()
	}
	d := &dupExit{oldfd: oldfd, target: -1, cloexec: cloexec}
	if newfd >= 0 && fdt.Shared() {
		// After any close of newfd in flight; a close racing this
		// call is observed (sentry/fd_follow.go).
		c.DupTarget(newfd)
		d.target = newfd
	}
	return sentry.Observe(c, sysno, args, d, true)
}

// dupExit makes the table follow the copy the kernel made: newfd shares
// the description oldfd's placeholder stood for when the kernel copied
// it, which FollowCopy tells by the open file itself (a host file: no
// entry).
type dupExit struct {
	oldfd int32
	// target is a shared table's dup2 or dup3 target (Call.DupTarget),
	// else -1.
	target  int32
	cloexec bool
}

func (d *dupExit) Exit(c *sentry.Call, ret int64) int64 {
	if d.target >= 0 {
		defer c.DupTargetDone(d.target)
	}
	if ret < 0 {
		return ret
	}
	newfd := int32(ret)
	if newfd == d.oldfd {
		// dup2(fd, fd): nothing changes.
		return ret
	}
	if !c.FollowCopy(newfd, d.oldfd, d.cloexec) {
		// A placeholder whose description had gone by the time the
		// copy was followed: oldfd held nothing for the sentry.
		closeUnplaced(c, []int32{newfd}, -int64(unix.EBADF))
		return -int64(unix.EBADF)
	}
	return ret
}

// fGetOwnerUIDs is F_GETOWNER_UIDS (include/uapi/linux/fcntl.h), which
// x/sys/unix does not name.
const fGetOwnerUIDs = 17

// fcntlUntrapped are the commands the filter lets run on the host
// untrapped (the table's PassValues), on the placeholder for a virtual fd,
// which is the file's own open description: descriptor flags (exec's sweep
// asks the kernel, Kernel.Exec), record and OFD locks, owners, F_GETLEASE,
// pipe sizes, seals, write hints and F_DUPFD_QUERY. Every other command is
// trapped: those Fcntl serves or follows, F_SETSIG (owner.go), F_SETLEASE
// (refused on the sentry's files), and any the sentry does not know, which
// a newer kernel may have given a meaning (fail closed). The list is Linux
// 6.18's do_fcntl, checked command by command (TestFcntlCommands); the
// most frequent come first, as the filter compares them in this order.
var fcntlUntrapped = []uint32{unix.F_SETFD, unix.F_GETFD, unix.F_SETLK, unix.F_SETLKW, unix.F_GETLK,
	unix.F_OFD_SETLK, unix.F_OFD_SETLKW, unix.F_OFD_GETLK, unix.F_GETOWN, unix.F_SETOWN,
	unix.F_GETOWN_EX, unix.F_SETOWN_EX, fGetOwnerUIDs, unix.F_GETSIG, unix.F_GETLEASE,
	unix.F_DUPFD_QUERY, unix.F_GETPIPE_SZ, unix.F_SETPIPE_SZ, unix.F_GET_SEALS,
	unix.F_ADD_SEALS, unix.F_GET_RW_HINT, unix.F_SET_RW_HINT}

// pathFcntl reports whether cmd may be given an O_PATH descriptor
// (check_fcntl_cmd in fs/fcntl.c): any other is EBADF on one.
func pathFcntl(cmd int) bool {
	switch cmd {
	case unix.F_DUPFD, unix.F_DUPFD_CLOEXEC, unix.F_DUPFD_QUERY, unix.F_GETFD, unix.F_SETFD,
		unix.F_GETFL, unix.F_CREATED_QUERY:
		return true
	}
	return false
}

// Fcntl is fcntl(fd, cmd, arg). On a host fd every command runs on the
// host (F_SETSIG checked first); the table follows the duplicating ones.
// On a virtual fd the sentry answers what the placeholder cannot (O_PATH,
// F_CREATED_QUERY, O_TMPFILE's F_GETFL) and refuses a command it does not
// know with EINVAL, as a kernel that does not know it would, rather than
// let it act on the placeholder. FD_CLOEXEC is the placeholder's own,
// which exec obeys and the sentry's sweep then asks the kernel about
// (Kernel.Exec), so F_SETFD needs no following.
func Fcntl(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	fd, cmd := int32(args[0]), int(uint32(args[1])) // cmd is an unsigned int: the upper half is not read
	fdt := c.FDTable()
	dupfd := cmd == unix.F_DUPFD || cmd == unix.F_DUPFD_CLOEXEC
	f := fdt.Get(fd)
	if f != nil {
		defer f.DecRef()
	}
	switch {
	case f != nil && f.IsPath() && !pathFcntl(cmd):
		// do_fcntl is not reached for an O_PATH file, whose
		// placeholder is not one (fs/tmpfs/storage.go, openAnon).
		return sentry.Err(unix.EBADF)
	case cmd == unix.F_SETSIG && !sigioSafe(args[2]):
		return refuseSetsig(c, fd)
	case f == nil && cmd == unix.F_SETLEASE && onSentryStore(c, fd):
		// A placeholder the guest holds behind the table's back: as
		// one the table knows (below).
		return sentry.Err(unix.EINVAL)
	case f == nil && !(dupfd && fdt.Shared()):
		// A host fd. (A dup in a shared table is observed below:
		// another thread may put a virtual fd at fd before the host
		// dups it.)
		return sentry.Pass()
	}
	switch cmd {
	case unix.F_SETLEASE:
		// No leases on the sentry's files, as on a file system without
		// them (simple_nosetlease), and as in gVisor: a lease on a
		// backing would make the sentry's own open of it for another
		// guest (Inode.OpenHost), or its truncate, wait in the
		// kernel's break_lease for up to lease-break-time (45 s),
		// holding the thread that serves it (on ptrace, the tracer:
		// every guest thread) while the holder, itself waiting for
		// the sandbox, does not give it up. F_GETLEASE, untrapped,
		// then says F_UNLCK, as it does there.
		return sentry.Err(unix.EINVAL)
	case unix.F_DUPFD, unix.F_DUPFD_CLOEXEC:
		return sentry.Observe(c, unix.SYS_FCNTL, args, &dupExit{oldfd: fd, target: -1, cloexec: cmd == unix.F_DUPFD_CLOEXEC}, true)
	case unix.F_CREATED_QUERY:
		// f_mode's FMODE_CREATED is the guest's open's, not that of the
		// sentry's open of the backing (the placeholder). Linux ignores
		// arg and allows O_PATH descriptions.
		if f.Created {
			return sentry.Ret(1)
		}
		return sentry.Ret(0)
	case unix.F_NOTIFY:
		// The host keeps the watch on the placeholder, an open of the
		// directory's backing, which then mirrors the directory
		// (fs/tmpfs/dnotify.go).
		if w, ok := f.Dentry.(vfs.DirWatcher); ok && f.Inode.Mode()&unix.S_IFMT == unix.S_IFDIR {
			if err := w.Watch(); err != nil {
				return sentry.ErrOf(err)
			}
		}
	case unix.F_GETFL:
		// An O_PATH description's placeholder is not an O_PATH file:
		// the sentry answers for it. An O_TMPFILE one's keeps
		// O_TMPFILE in f_flags on Linux, which the placeholder, an
		// open of the file, cannot have.
		switch {
		case f.IsPath():
			return sentry.Ret(int64(f.Flags()))
		case f.Flags()&unix.O_TMPFILE == unix.O_TMPFILE:
			fl, err := unix.FcntlInt(uintptr(f.HostFD), unix.F_GETFL, 0)
			if err != nil {
				return sentry.ErrOf(err)
			}
			return sentry.Ret(int64(fl | unix.O_TMPFILE))
		}
	case unix.F_SETFL, unix.F_SETSIG:
	default:
		if !slices.Contains(fcntlUntrapped, uint32(cmd)) {
			// Not one this sentry knows: the kernel it runs on may
			// give it a meaning the sentry would have to serve.
			return sentry.Err(unix.EINVAL)
		}
	}
	// The rest act on the placeholder, which is the file's own open
	// description on the host (Inode.OpenHost): its status flags
	// (F_GETFL, F_SETFL: the host applies O_APPEND and O_NONBLOCK to the
	// guest's I/O), record and OFD locks (the host's, on the file's
	// backing: F_GETLK reports the guest's pids, F_SETLKW blocks and is
	// interrupted in the guest's own call, deadlocks are EDEADLK), leases,
	// owners and seals are the host's, as Linux's tmpfs answers them.
	return sentry.PassServed()
}
