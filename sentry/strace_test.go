package sentry

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The --strace decoders: what "sentry diff" compares between two runs,
// so a flag must print the same whatever else is set.

func TestOpenFlagsString(t *testing.T) {
	for _, tc := range []struct {
		flags uint32
		want  string
	}{
		{unix.O_RDONLY, "O_RDONLY"},
		{unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC, "O_WRONLY|O_CREAT|O_TRUNC"},
		{unix.O_RDWR | unix.O_CLOEXEC | unix.O_EXCL, "O_RDWR|O_EXCL|O_CLOEXEC"},
		// Both access bits: not a mode open(2) defines.
		{unix.O_ACCMODE, "O_ACCMODE"},
		{unix.O_PATH | unix.O_NOFOLLOW | unix.O_DIRECTORY, "O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_PATH"},
		// O_SYNC and O_TMPFILE are two bits each, printed apart as in
		// the kernel's definitions.
		{unix.O_WRONLY | unix.O_SYNC, "O_WRONLY|O_DSYNC|__O_SYNC"},
		{unix.O_RDWR | unix.O_TMPFILE, "O_RDWR|O_DIRECTORY|__O_TMPFILE"},
		{unix.O_RDONLY | unix.O_NONBLOCK | unix.O_APPEND | unix.O_NOATIME | unix.O_DIRECT | unix.O_ASYNC | unix.O_NOCTTY,
			"O_RDONLY|O_NOCTTY|O_APPEND|O_NONBLOCK|O_ASYNC|O_DIRECT|O_NOATIME"},
		// Bits without a name print as a number.
		{unix.O_WRONLY | 1<<30, "O_WRONLY|0x40000000"},
		{unix.O_CREAT | 1<<30 | 1<<29, "O_RDONLY|O_CREAT|0x60000000"},
	} {
		if got := OpenFlagsString(tc.flags); got != tc.want {
			t.Errorf("OpenFlagsString(%#x) = %q, want %q", tc.flags, got, tc.want)
		}
	}
}

func TestAtFlagsString(t *testing.T) {
	for _, tc := range []struct {
		flags uint32
		want  string
	}{
		{0, "0"},
		{unix.AT_EMPTY_PATH, "AT_EMPTY_PATH"},
		{unix.AT_SYMLINK_NOFOLLOW | unix.AT_EMPTY_PATH, "AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH"},
		{unix.AT_REMOVEDIR, "AT_REMOVEDIR"},
		{unix.AT_STATX_DONT_SYNC | unix.AT_NO_AUTOMOUNT, "AT_NO_AUTOMOUNT|AT_STATX_DONT_SYNC"},
		{unix.AT_SYMLINK_FOLLOW | 0x1, "AT_SYMLINK_FOLLOW|0x1"},
		{1 << 20, "0x100000"},
	} {
		if got := atFlagsString(tc.flags); got != tc.want {
			t.Errorf("atFlagsString(%#x) = %q, want %q", tc.flags, got, tc.want)
		}
	}
}

func TestCloneFlagsString(t *testing.T) {
	thread := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD |
		unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID)
	for _, tc := range []struct {
		flags uint64
		want  string
	}{
		{0, "0"},
		// fork(): only the exit signal.
		{uint64(unix.SIGCHLD), "SIGCHLD"},
		{unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD), "CLONE_VM|CLONE_VFORK|SIGCHLD"},
		// glibc's pthread_create.
		{thread, "CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|" +
			"CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID"},
		{unix.CLONE_CHILD_SETTID | unix.CLONE_CHILD_CLEARTID | uint64(unix.SIGCHLD), "CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD"},
		// A flag without a name, and a signal without one, as numbers.
		{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD), "0x10000000|SIGCHLD"},
		{unix.CLONE_FILES | 40, "CLONE_FILES|40"},
	} {
		if got := cloneFlagsString(tc.flags); got != tc.want {
			t.Errorf("cloneFlagsString(%#x) = %q, want %q", tc.flags, got, tc.want)
		}
	}
}

func TestFcntlCmdString(t *testing.T) {
	for _, tc := range []struct {
		cmd  int
		want string
	}{
		{unix.F_DUPFD, "F_DUPFD"},
		{unix.F_DUPFD_CLOEXEC, "F_DUPFD_CLOEXEC"},
		{unix.F_GETFD, "F_GETFD"},
		{unix.F_SETFD, "F_SETFD"},
		{unix.F_GETFL, "F_GETFL"},
		{unix.F_SETFL, "F_SETFL"},
		{unix.F_GETLK, "F_GETLK"},
		{unix.F_SETLK, "F_SETLK"},
		{unix.F_SETLKW, "F_SETLKW"},
		// The rest by number ("sentry diff" relies on it to tell a
		// value from an address in the third argument).
		{unix.F_OFD_SETLK, "37"},
		{unix.F_ADD_SEALS, "1033"},
		{-1, "-1"},
	} {
		if got := fcntlCmdString(tc.cmd); got != tc.want {
			t.Errorf("fcntlCmdString(%d) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}
