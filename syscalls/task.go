package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Execve is execve(path, argv, envp). A host file is the host's to run;
// the sentry's side (close-on-exec, unsharing the table) happens at the
// exec event, which only a successful exec reports. A file of the
// sentry's is run by the host from a copy: the call becomes
// memfd_create, the sentry fills the memfd with the file, and the guest
// then issues execveat(memfd, "", argv, envp, AT_EMPTY_PATH). An ELF
// binary's memfd is close-on-exec; a "#!" script's is not, since the
// kernel hands the interpreter /dev/fd/N (so the script's $0 is that
// name, not its path: a known divergence).
func Execve(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return execveat(t, unix.AT_FDCWD, args[0], args[1], args[2], 0)
}

// Execveat is execveat(dirfd, path, argv, envp, flags); see Execve.
func Execveat(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return execveat(t, int32(args[0]), args[1], args[2], args[3], uint32(args[4]))
}

func execveat(t *sentry.Task, dirfd int32, pathAddr, argv, envp uintptr, flags uint32) sentry.Result {
	if flags&^(unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW) != 0 || pathAddr == 0 {
		return sentry.Pass()
	}
	r, err := resolveAt(t, dirfd, pathAddr, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0)
	if err != nil {
		return sentry.ErrOf(err)
	}
	d := r.Dentry
	if r.file != nil {
		d = r.file.Dentry
		r.file.DecRef()
	} else if r.host {
		return sentry.Pass()
	}
	if d == nil {
		return sentry.Err(unix.ENOENT)
	}
	ino := d.Inode()
	switch ino.Mode() & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return sentry.Err(unix.ELOOP)
	default:
		// do_open_execat: only regular files run.
		return sentry.Err(unix.EACCES)
	}
	if err := ino.CheckPermission(t.Creds(), vfs.MayExec); err != nil {
		return sentry.ErrOf(err)
	}
	var magic [2]byte
	n, _ := ino.ReadAt(magic[:], 0)
	memfdFlags := uintptr(unix.MFD_CLOEXEC)
	if n == 2 && magic == [2]byte{'#', '!'} {
		memfdFlags = 0
	}
	// An empty string of the sentry's: the memfd's name and execveat's
	// path (see openat).
	nameAddr, err := t.WriteStackString("")
	if err != nil {
		return sentry.ErrOf(err)
	}
	s := t.Scratch()
	*s = sentry.Scratch{Found: d, Args: platform.SyscallArgs{0, nameAddr, argv, envp, unix.AT_EMPTY_PATH}}
	return sentry.RewriteTo(t, unix.SYS_MEMFD_CREATE, platform.SyscallArgs{nameAddr, memfdFlags}, execExit)
}

func execExit(t *sentry.Task, ret int64) int64 {
	if ret < 0 {
		return ret
	}
	s := t.Scratch()
	ino := s.Found.Inode()
	if err := fillPlaceholder(t, int32(ret), ino.Size(), ino.ReadAt); err != nil {
		*s = sentry.Scratch{}
		t.FailAfterClose(int32(ret), errnoOf(err))
		return ret
	}
	args := s.Args
	args[0] = uintptr(ret)
	*s = sentry.Scratch{}
	t.SetReissue(unix.SYS_EXECVEAT, args)
	return ret
}

// Clone records the flags for the clone event that names the child: they
// decide whether the child shares the parent's descriptor table and fs
// context (copy_process: CLONE_FILES, CLONE_FS, CLONE_THREAD).
func Clone(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	t.SetCloneFlags(uint64(args[0]))
	return sentry.Pass()
}

// Clone3 reads the flags from struct clone_args (its first field). A bad
// pointer is left for the host to report.
func Clone3(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	var b [8]byte
	if platform.ReadMemory(t.TID, args[0], b[:]) == nil {
		t.SetCloneFlags(uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56)
	}
	return sentry.Pass()
}

// Fork is clone(SIGCHLD).
func Fork(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	t.SetCloneFlags(uint64(unix.SIGCHLD))
	return sentry.Pass()
}

// Vfork is clone(CLONE_VM|CLONE_VFORK|SIGCHLD).
func Vfork(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	t.SetCloneFlags(unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD))
	return sentry.Pass()
}

// Setid serves the set*id calls (setuid, setresgid, setgroups,
// setfsuid, ...): the host applies them with its own rules and the sentry
// then takes the task's new fsuid, fsgid and groups from the kernel, for
// its permission checks on the sentry's files.
func Setid(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return sentry.Observe(t, t.Sysno(), args, setidExit, false)
}

func setidExit(t *sentry.Task, ret int64) int64 {
	t.RefreshCreds()
	return ret
}
