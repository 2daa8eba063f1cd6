package syscalls

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sentry/sentry"
)

// A descriptor's owner (fcntl F_SETOWN, F_SETOWN_EX, ioctl FIOSETOWN and
// SIOCSPGRP on a socket, or a terminal's foreground process group, which
// tty_fasync makes the owner when O_ASYNC is set without one) gets its
// SIGIO and SIGURG, or the signal F_SETSIG names instead of SIGIO. The
// kernel checks the owner's credentials only when it sends (sigio_perm),
// and lets a sender whose effective uid is the host's root signal anyone:
// a root guest, root of its own user namespace but uid 0 on the host,
// could make any sandbox's sentry the owner, which kill no longer lets it
// reach (platform.SentryUID), and have SIGKILL sent to it. Checking the
// owner cannot be done once for all: F_SETOWN_EX and the ioctls read it
// from guest memory, which a second thread changes between the sentry's
// read and the kernel's, and a terminal's process group is the one of the
// moment. The signal is a plain argument: F_SETSIG may name only a signal
// a sentry ignores (Go's runtime, for one it was not asked to deliver, and
// the kernel, for SIGCHLD and SIGCONT), and any other is EPERM, where
// Linux takes every valid signal. SIGIO and SIGURG themselves are such
// signals; SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are not, as the sentry
// passes them on to its guest (cmd/sentry/run.go).

// sigioSafe reports whether F_SETSIG may name sig: 0 (SIGIO), a signal no
// sentry acts on, or one Linux refuses anyway (EINVAL, valid_signal), which
// the host answers.
func sigioSafe(arg uintptr) bool {
	v := int32(arg) // the kernel's argi
	switch s := unix.Signal(v); {
	case v < 0 || v > 64:
		return true
	case s == 0, s == unix.SIGALRM, s == unix.SIGCHLD, s == unix.SIGCONT, s == unix.SIGURG,
		s == unix.SIGWINCH, s == unix.SIGIO, s == unix.SIGPWR:
		return true
	default:
		// The real-time signals but glibc's own two (SIGCANCEL and
		// SIGSETXID, 32 and 33, whose handlers glibc installs only once
		// it uses them). 34, which Go's runtime does not handle, the
		// sentry ignores (launch.KeepFromGuests).
		return s >= 34
	}
}

// refuseSetsig is F_SETSIG's EPERM, or EBADF first, as the kernel checks
// the descriptor before the signal: a number not open, or an O_PATH
// descriptor (check_fcntl_cmd).
func refuseSetsig(c *sentry.Call, fd int32) sentry.Result {
	info, err := fdInfo(c, fd)
	if err != nil {
		return sentry.Err(unix.EBADF)
	}
	for line := range strings.Lines(string(info)) {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			if fl, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64); err == nil && fl&unix.O_PATH != 0 {
				return sentry.Err(unix.EBADF)
			}
		}
	}
	return sentry.Err(unix.EPERM)
}
