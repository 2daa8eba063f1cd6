package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// Execve runs on the host; the sentry's side (close-on-exec, unsharing the
// table) happens at the exec event, which only a successful exec reports.
func Execve(t *sentry.Task, args *platform.SyscallArgs) sentry.Result { return sentry.Pass() }

// Execveat: see Execve.
func Execveat(t *sentry.Task, args *platform.SyscallArgs) sentry.Result { return sentry.Pass() }

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
