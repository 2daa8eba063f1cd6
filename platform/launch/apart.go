package launch

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"sentry/platform"
)

// KeepFromGuests puts the calling sentry out of its guests' reach, and
// other sandboxes' guests', once the init stage is forked (a child would
// inherit what it changes; the init stage then sets every disposition the
// guest starts with itself) and before any thread blocks signals (the
// serving threads, the tracer's):
//
//   - if it is root, platform.SentryUID becomes its real and saved uid,
//     on every thread (glibc's setresuid signals each). Its effective uid
//     stays 0, and with it every capability and the owner of the files
//     it makes; a thread that takes a guest's effective uid to act for it
//     keeps its permitted capabilities (SECBIT_KEEP_CAPS, set before the
//     runtime starts: keepcaps_cgo.go) and takes 0 back;
//   - signal 34 (glibc's SIGRTMIN) is ignored. F_SETSIG lets a guest have
//     any sentry sent a signal it may name (syscalls/owner.go), and the
//     real-time ones are among them, which Go's runtime ignores but for
//     34, which it leaves to C (musl's SIGSYNCCALL) at its default
//     action: the end of the process.
func KeepFromGuests() error {
	setAction(34, 1)
	if unix.Geteuid() != 0 {
		return nil
	}
	if err := syscall.Setresuid(platform.SentryUID, -1, platform.SentryUID); err != nil {
		return fmt.Errorf("setresuid(%d, -1, %d): %w", platform.SentryUID, platform.SentryUID, err)
	}
	return nil
}
