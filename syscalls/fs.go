package syscalls

import (
	"strconv"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// Chdir runs on the host; on success the sentry learns the new working
// directory from the kernel itself (/proc/TID/cwd), so that symlinks and
// ".." are resolved exactly as the kernel did.
func Chdir(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return sentry.Observe(t, unix.SYS_CHDIR, args, chdirExit, false)
}

// Fchdir: see Chdir.
func Fchdir(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return sentry.Observe(t, unix.SYS_FCHDIR, args, chdirExit, false)
}

func chdirExit(t *sentry.Task, ret int64) int64 {
	if ret == 0 {
		var buf [unix.PathMax]byte
		n, err := unix.Readlink("/proc/"+strconv.Itoa(int(t.TID))+"/cwd", buf[:])
		if err == nil {
			t.FSContext().SetCwd(string(buf[:n]))
		}
	}
	return ret
}

// Umask records the new mask (umask cannot fail) for files the sentry
// creates, and lets the host keep its own copy in step.
func Umask(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	t.FSContext().SetUmask(uint32(args[0]))
	return sentry.Pass()
}
