package ptrace

import (
	"fmt"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// loadFilter installs the trap filter on the calling thread only (no TSYNC:
// the init stage's main thread is the one that execs the guest). Listed
// calls stop the guest for the tracer (SECCOMP_RET_TRACE); every other call
// runs on the host at native speed. Calls of a foreign architecture (int
// 0x80, x32) fail with ENOSYS: the sandbox only models x86-64 and they would
// otherwise reach the host's files behind the sentry's back.
func loadFilter(traps []uintptr) error {
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return fmt.Errorf("seccomp: new filter: %w", err)
	}
	defer f.Release()
	if err := f.SetBadArchAction(seccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS))); err != nil {
		return fmt.Errorf("seccomp: bad-arch action: %w", err)
	}
	if err := f.SetNoNewPrivsBit(true); err != nil {
		return fmt.Errorf("seccomp: no_new_privs: %w", err)
	}
	// A binary tree of syscall numbers instead of a linear list: every
	// untrapped call runs this filter, so its depth is their only cost.
	if err := f.SetOptimize(2); err != nil {
		return fmt.Errorf("seccomp: optimize: %w", err)
	}
	for _, nr := range traps {
		if err := f.AddRule(seccomp.ScmpSyscall(nr), seccomp.ActTrace); err != nil {
			return fmt.Errorf("seccomp: trap syscall %d: %w", nr, err)
		}
	}
	if err := f.Load(); err != nil {
		return fmt.Errorf("seccomp: load: %w", err)
	}
	return nil
}
