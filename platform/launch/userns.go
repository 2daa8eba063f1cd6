package launch

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"sentry/platform"
)

// A guest that is root on the host holds every capability of the initial
// user namespace: CAP_SYS_PTRACE opens every process's descriptors to it
// (pidfd_getfd, /proc/PID/fd), another sandbox's sentry and its store
// among them, and CAP_SYS_ADMIN unmounts the covers over the sandbox's
// directories. Linux has one answer that takes those away and leaves the
// guest its files: a user namespace. The init stage starts in one that
// maps every uid and gid to itself, so the guest is still uid 0, still
// owns and overrides what root does on the host's files
// (capable_wrt_inode_uidgid, the ids being mapped), and holds its
// capabilities in that namespace only: over other processes
// (cap_ptrace_access_check wants CAP_SYS_PTRACE in the target's
// namespace), devices (mknod), modules, the network's privileged ports, it
// has none.
//
// The mount namespace the init stage then makes (namespace.go) is owned by
// the new user namespace, so the covers it mounts are not locked as a
// namespace inherited from a more privileged one would be: the guest
// would unmount them with CAP_SYS_ADMIN in its namespace. The init stage
// drops CAP_SYS_ADMIN from its bounding set before exec, so the guest
// never has it there; a user namespace the guest makes below gives it
// CAP_SYS_ADMIN over that namespace only, which owns no mount namespace
// (a new one is refused, syscalls/task.go, and would lock the covers).

// identityMap maps every id to itself: 0 to 4294967294 (the count is
// 2^32-1; 4294967295 is the invalid id).
var identityMap = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}

// uidMap maps every uid to itself but platform.SentryUID, the sentries'
// own (KeepFromGuests): a guest that could take it (setuid, as root of its
// namespace may to any mapped id) could signal every sentry. A host file
// owned by it shows as the overflow uid, as any unmapped owner does.
var uidMap = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: platform.SentryUID}}

// userNSAttr is the init stage's clone attributes: a user namespace of its
// own when on, whose maps the sentry writes before the init stage runs
// (setgroups stays allowed: the guest may change its groups as root does).
func userNSAttr(on bool) *syscall.SysProcAttr {
	if !on {
		return nil
	}
	return &syscall.SysProcAttr{
		Cloneflags:                 unix.CLONE_NEWUSER,
		UidMappings:                uidMap,
		GidMappings:                identityMap,
		GidMappingsEnableSetgroups: true,
	}
}

// dropNamespaceAdmin takes CAP_SYS_ADMIN out of the calling thread's
// bounding set (the exec of the guest gives root its bounding set) and its
// effective, permitted and inheritable sets.
func dropNamespaceAdmin() error {
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_ADMIN, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN): %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	bit := uint32(1) << (unix.CAP_SYS_ADMIN % 32)
	w := unix.CAP_SYS_ADMIN / 32
	data[w].Effective &^= bit
	data[w].Permitted &^= bit
	data[w].Inheritable &^= bit
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset without CAP_SYS_ADMIN: %w", err)
	}
	return nil
}

// NativeArg0 is argv[0] of the sentry binary re-executed inside a user
// namespace as the guest's would be, to exec a program natively there
// (NativeMain): "sentry diff" and the tests compare a guest with Linux under
// the same credentials.
const NativeArg0 = "[sentry-userns]"

// StartNative starts argv (argv[0] a path) natively in a user namespace
// like the guest's: every id mapped to itself, no CAP_SYS_ADMIN. It
// shares the caller's standard streams, environment and working
// directory.
func StartNative(argv []string) (int, error) {
	return syscall.ForkExec("/proc/self/exe", append([]string{NativeArg0}, argv...), &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   userNSAttr(true),
	})
}

// NativeMain is the re-executed binary of StartNative and never returns:
// it drops CAP_SYS_ADMIN as the init stage does and execs its arguments.
func NativeMain() {
	if len(os.Args) < 2 {
		os.Exit(ExitSandbox)
	}
	if err := dropNamespaceAdmin(); err != nil {
		fmt.Fprintf(os.Stderr, "sentry: %v\n", err)
		os.Exit(ExitSandbox)
	}
	execFailed(os.Args[1], syscall.Exec(os.Args[1], os.Args[1:], os.Environ()))
}
