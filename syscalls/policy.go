package syscalls

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Decision is what the sandbox does with one x86-64 system call number.
// Only the numbers in the table are trapped (NewTable); every other call
// runs on the host untouched, so a number is left untrapped only when the
// host cannot reach a sentry file or the host's copy of a sentry mount
// point through it. Calls of other ABIs (int 0x80, x32's 512+) never run:
// the trap filter's bad-architecture action fails them with ENOSYS.
type Decision uint8

const (
	// Served: trapped; the sentry serves the call on its files and lets
	// the host serve it on the host's.
	Served Decision = iota + 1
	// Checked: trapped; the handler checks the path and descriptor
	// arguments and passes through only calls on the host's objects
	// (with the host path the sentry resolved); on a sentry file the
	// call fails, with errUnserved or the errno Linux gives for a file
	// that cannot take part.
	Checked
	// Harmless: not trapped; the call takes no path and no descriptor
	// that could be a virtual fd, or the host's answer for a
	// placeholder is already Linux's for a tmpfs file.
	Harmless
	// Refused: trapped; always answered with Policy.Errno, the errno a
	// Linux kernel gives in the closest real situation.
	Refused
)

func (d Decision) String() string {
	switch d {
	case Served:
		return "served"
	case Checked:
		return "checked"
	case Harmless:
		return "harmless"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("Decision(%d)", uint8(d))
}

// Policy is the decision for one number and why.
type Policy struct {
	Decision Decision
	// Errno answers every call of a Refused number.
	Errno  unix.Errno
	Reason string
}

// LastSyscall is the highest x86-64 number with a decision: the last one
// golang.org/x/sys knows. Numbers past it do not exist on the kernels the
// sandbox runs on; the trap filter fails them with ENOSYS itself
// (launch.Spec.LastSyscall), so that a newer kernel's calls are refused
// until they get a decision here. The sentry's own
// install call (platform.SysInstallFD) lies far past it, and a guest that
// issues it is answered ENOSYS.
const LastSyscall = unix.SYS_RSEQ_SLICE_YIELD

// Reasons shared by groups of calls.
const (
	whyServedFile   = "served: the sentry's file system call on its files (path or descriptor), the host's on the host's"
	whyBacking      = "harmless: a virtual fd of a regular file is the sentry's own open of its backing (the file's bytes, on a private tmpfs mounted nowhere), so the host's answer is the file's; a directory's is a directory, O_PATH's an anonymous file"
	whyServedAttr   = "served: metadata of sentry files (attr.go, xattr.go, stat.go)"
	whyServedCreds  = "served: the host applies it, the sentry then takes the new fsuid, fsgid, groups and capabilities for its permission checks"
	whyUnservedPath = "checked: not modelled on sentry files: errUnserved on a path into a sentry mount, the resolved host path passed through otherwise"
	whyMount        = "checked: every path (target, bind or move source, device, overlay layers) resolved by the sentry; into a sentry mount errUnserved, else passed with the resolved host path (policy_mount.go)"
	whyMountAt      = "checked: (dirfd, path) resolved by the sentry; a sentry file (a virtual dirfd included) errUnserved, a host one passed with the resolved path (policy_mount.go)"
	whyMemory       = "harmless: the guest's own memory, no path, no descriptor"
	whyMapping      = "harmless: acts on mappings; a sentry file's mapping is of its backing, so the host's answer is the file's"
	whySignals      = "harmless: signals and their masks, no path, no descriptor; no guest may signal a sentry, whose real and saved uid the kernel checks (platform.SentryUID)"
	whyPidfd        = "harmless: takes a pidfd; a placeholder is none, and the host answers EBADF as for a tmpfs file (pidfd_pid)"
	whyTime         = "harmless: clocks, timers and sleeps, no path, no descriptor"
	whyState        = "harmless: the guest's own ids, limits, scheduling or resource use, no path, no descriptor"
	whyFutex        = "harmless: futexes are memory words, no path, no descriptor"
	whyWait         = "harmless: waits for the guest's own children (P_PIDFD: a placeholder is no pidfd, EBADF as for a tmpfs file)"
	whyHostAdmin    = "harmless: host administration without a path or descriptor (root only; a root guest is host root outside the tmpfs)"
	whyKeys         = "harmless: kernel keyrings, no path, no descriptor"
	whyGone         = "harmless: not implemented by Linux on x86-64 any more (removed or never wired): the host answers ENOSYS"
	whyUnassigned   = "harmless: no x86-64 call has this number (kept free to align the tables): the host answers ENOSYS"
	whyIPC          = "harmless: System V IPC lives in the IPC namespace, not the file system"
	whyMqueue       = "harmless: POSIX message queues are named in the mqueue file system, not by path; a placeholder is no queue, EBADF as for a tmpfs file"
	whyNewHostFD    = "harmless: creates a host object and returns a host fd, no path, no descriptor of a sentry file"
	whyPoll         = "harmless: polls descriptors; a placeholder, like a tmpfs file or directory, has no poll method and is always ready"
	whySocketOp     = "harmless: a socket operation; a placeholder is no socket, and the host answers ENOTSOCK as for a tmpfs file"
	whySockopt      = "harmless: the options that take a descriptor take a bpf program, refused for a placeholder with the EINVAL a tmpfs file gets"
	whyTypedFD      = "harmless: the descriptor must be of a kernel type (timerfd, inotify, signalfd, pipe, fs context); a placeholder is a regular file and gets the errno a tmpfs file gets"
	whyLandlockSelf = "harmless: Landlock rulesets and self-restriction take no path (rules: landlock_add_rule)"
	whyRefusedAIO   = "refused: Linux AIO would read and write placeholders and reach host paths unseen; ENOSYS, as a kernel built without CONFIG_AIO"
	whyRefusedUring = "refused: io_uring's requests (IORING_OP_OPENAT, _WRITE, ...) would reach host paths and placeholders unseen; ENOSYS, as a kernel built without CONFIG_IO_URING"
)

// Policies returns the decision for every number 0..LastSyscall. It
// panics if a number has two.
func Policies() []Policy {
	p := make([]Policy, LastSyscall+1)
	set := func(d Decision, errno unix.Errno, why string, nrs ...uintptr) {
		for _, nr := range nrs {
			if p[nr].Decision != 0 {
				panic(fmt.Sprintf("syscall %d has two decisions: %q and %q", nr, p[nr].Reason, why))
			}
			p[nr] = Policy{Decision: d, Errno: errno, Reason: why}
		}
	}
	served := func(why string, nrs ...uintptr) { set(Served, 0, why, nrs...) }
	checked := func(why string, nrs ...uintptr) { set(Checked, 0, why, nrs...) }
	harmless := func(why string, nrs ...uintptr) { set(Harmless, 0, why, nrs...) }

	// Files, names and data: served.
	served(whyServedFile,
		unix.SYS_OPEN, unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_CREAT, unix.SYS_CLOSE,
		unix.SYS_STAT, unix.SYS_LSTAT, unix.SYS_FSTAT, unix.SYS_NEWFSTATAT, unix.SYS_STATX,
		unix.SYS_UNLINK, unix.SYS_UNLINKAT, unix.SYS_RMDIR, unix.SYS_MKDIR, unix.SYS_MKDIRAT,
		unix.SYS_GETDENTS64, unix.SYS_GETDENTS, unix.SYS_SYMLINK, unix.SYS_SYMLINKAT, unix.SYS_READLINK, unix.SYS_READLINKAT,
		unix.SYS_LINK, unix.SYS_LINKAT, unix.SYS_RENAME, unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2,
		unix.SYS_ACCESS, unix.SYS_FACCESSAT, unix.SYS_FACCESSAT2, unix.SYS_TRUNCATE,
		unix.SYS_MKNOD, unix.SYS_MKNODAT, unix.SYS_STATFS, unix.SYS_FSTATFS)
	served("served: the host allocates and checks, the sentry's table follows at the call's exit (fd.go, close.go)",
		unix.SYS_DUP, unix.SYS_DUP2, unix.SYS_DUP3, unix.SYS_CLOSE_RANGE)
	served("served: F_SETFD, F_GETFD, locks, owners, F_GETLEASE, pipe sizes, seals, write hints and F_DUPFD_QUERY run on the host untrapped, on the placeholder for a virtual fd (exec's sweep asks the kernel which placeholders survived); every other command is trapped (the filter compares the command as the kernel reads it, 32 bits; a list of what passes, so a command a newer kernel adds is trapped): the dups run on the host and the table follows at their exit stop (fd.go; they stop on unotify too); F_SETSIG of a signal a sentry would act on is EPERM (owner.go: an owner may be any sentry); F_SETLEASE on a sentry file is EINVAL (no leases: a lease break would hold the sentry's own open of the backing, fd.go); on a virtual fd a command the sentry does not know is EINVAL and one check_fcntl_cmd refuses an O_PATH file is EBADF on a virtual O_PATH fd; F_NOTIFY on a sentry directory is the host's on its placeholder, whose backing then mirrors the directory's changes (fs/tmpfs/dnotify.go)",
		unix.SYS_FCNTL)
	served("served: the inode-flag requests (FS_IOC_GETFLAGS, _SETFLAGS, _FSGETXATTR, _FSSETXATTR) are the sentry's (flags.go), an O_PATH one is EBADF, the other requests tmpfs answers (FIOCLEX and FIONCLEX on the placeholder's descriptor flag too) act on the backing, any other on a regular file or directory is ENOTTY as on tmpfs, a special file's go to its host node (ioctl.go); on a host fd, requests handing a driver a virtual fd (loop, reflink, dedupe, seccomp ADDFD, btrfs send) or a path (autofs) are checked (policy_fdargs.go)",
		unix.SYS_IOCTL)
	served(whyServedAttr,
		unix.SYS_CHMOD, unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_CHOWN,
		unix.SYS_LCHOWN, unix.SYS_FCHOWN, unix.SYS_FCHOWNAT, unix.SYS_UTIMENSAT, unix.SYS_UTIMES,
		unix.SYS_FUTIMESAT, unix.SYS_UTIME,
		unix.SYS_GETXATTR, unix.SYS_LGETXATTR, unix.SYS_FGETXATTR, unix.SYS_LISTXATTR, unix.SYS_LLISTXATTR,
		unix.SYS_FLISTXATTR, unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_REMOVEXATTR,
		unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, unix.SYS_SETXATTRAT, unix.SYS_GETXATTRAT,
		unix.SYS_LISTXATTRAT, unix.SYS_REMOVEXATTRAT)
	served("served: AF_UNIX paths into a sentry mount reach the host socket standing for the sentry's (socket.go)",
		unix.SYS_BIND, unix.SYS_CONNECT, unix.SYS_SENDTO, unix.SYS_GETSOCKNAME, unix.SYS_GETPEERNAME)
	served("served: msg_name as sendto's; a virtual fd in SCM_RIGHTS travels as its placeholder, its description kept until a guest receives it (policy_fdargs.go, sentry/scm_rights.go)",
		unix.SYS_SENDMSG, unix.SYS_SENDMMSG)
	served("served: observed when there is room for control data; a received descriptor that is a sentry file's placeholder (kcmp KCMP_FILE) gets its description, one of a sentry store the sentry cannot place is closed (scm_rights.go)",
		unix.SYS_RECVMSG, unix.SYS_RECVMMSG)
	served("served: a sentry file runs from its backing, installed and exec'd with execveat; a host one passes (task.go)", unix.SYS_EXECVE, unix.SYS_EXECVEAT)
	served("served: the child's table and fs context follow the flags; CLONE_UNTRACED is stripped, CLONE_NEWNS refused with EPERM (task.go)",
		unix.SYS_CLONE)
	served("served: the child gets a copy of the table and fs context", unix.SYS_FORK, unix.SYS_VFORK)
	served("served: CLONE_FILES and CLONE_FS (and CLONE_NEWUSER) give the task private copies when the host's succeeds; CLONE_NEWNS refused with EPERM (task.go)",
		unix.SYS_UNSHARE)
	served("served: another process's virtual fd arrives with its description (policy_fdargs.go)", unix.SYS_PIDFD_GETFD)
	served(whyServedCreds,
		unix.SYS_SETUID, unix.SYS_SETGID, unix.SYS_SETREUID, unix.SYS_SETREGID, unix.SYS_SETRESUID,
		unix.SYS_SETRESGID, unix.SYS_SETFSUID, unix.SYS_SETFSGID, unix.SYS_SETGROUPS, unix.SYS_CAPSET)
	served("served: the working directory and umask are the sentry's when in its mounts (fs.go)",
		unix.SYS_CHDIR, unix.SYS_FCHDIR, unix.SYS_UMASK, unix.SYS_GETCWD)

	// Calls the sentry does not model on its files: checked.
	checked("checked: a virtual fd is Linux's tmpfs without quota options (EINVAL for a bad type, else ENOSYS); host fds pass (policy_mount.go)",
		unix.SYS_QUOTACTL_FD)
	checked(whyUnservedPath,
		unix.SYS_CHROOT, unix.SYS_ACCT)
	served("served: a sentry file's watch is added to the guest's own instance on the host inode that raises its events (a regular file's or directory's backing, a directory's mirroring its entries; a symlink's or socket's stand-in), after Linux's checks in Linux's order; a FIFO or device errUnserved; host paths pass with the sentry's resolution (inotify.go)",
		unix.SYS_INOTIFY_ADD_WATCH)
	served("served: a tmpfs mounted on a sentry directory by a guest with CAP_SYS_ADMIN is a new sentry mount (EPERM without, as may_mount), with MS_RDONLY, the other per-mount flags and MS_REMOUNT; another type there ENODEV (a host file system inside the sentry's tree would put host files under it), bind, move and propagation there errUnserved; the sandbox's own mounts are locked (remount EPERM); a host target passes with the resolved paths, as whyMount (mount.go, policy_mount.go)",
		unix.SYS_MOUNT)
	served("served: a guest's mount in the sentry is unmounted (EBUSY while a file, working directory, mapping or mount is in it, MNT_DETACH lazy); the sandbox's own mounts are locked, EINVAL (under them is the namespace's cover); a host target passes (mount.go)",
		unix.SYS_UMOUNT2)
	checked(whyMount, unix.SYS_PIVOT_ROOT)
	checked("checked: special in a sentry mount is Linux's quotactl_block on a tmpfs file (ENOENT, ENOTBLK); a Q_QUOTAON quota file there is on another file system (EPERM without CAP_SYS_ADMIN, else EXDEV); host paths pass with the sentry's resolution (policy_mount.go)",
		unix.SYS_QUOTACTL)
	served("served: a new, empty tmpfs from fsmount moved onto a sentry directory is a new sentry mount with its options, as mount(2) (mount.go); an attached or cloned mount, or one holding files, errUnserved there; host ends as whyMountAt",
		unix.SYS_MOVE_MOUNT)
	checked(whyMountAt, unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR, unix.SYS_FSPICK,
		unix.SYS_MOUNT_SETATTR, unix.SYS_FANOTIFY_MARK)
	checked("checked: SET_PATH and SET_PATH_EMPTY resolved as paths, SET_FD may not be a virtual fd, string values of path parameters (source, overlay layers) resolved (policy_mount.go)",
		unix.SYS_FSCONFIG)
	served("served: a sentry file's inode flags as fsxattr flags, as FS_IOC_FSGETXATTR and FS_IOC_FSSETXATTR (flags.go)",
		unix.SYS_FILE_GETATTR, unix.SYS_FILE_SETATTR)
	served("served: file handles of sentry files are the sentry's (generation and inode number, as shmem_encode_fh), decoded in its own tree for a virtual mount_fd or a sentry working directory; a host mount_fd passes, unless it is on a sentry store (errUnserved), where the host would open backings by number (handle.go)",
		unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_OPEN_BY_HANDLE_AT)
	checked("checked: a path-beneath rule's parent_fd may not be a virtual fd: EBADFD, as get_path_from_fd for a file Landlock cannot restrict",
		unix.SYS_LANDLOCK_ADD_RULE)
	checked("checked: BPF_OBJ_PIN and BPF_OBJ_GET paths and uprobe-multi link binaries resolved; other descriptors must be bpf objects, cgroups or namespaces, which a placeholder is not",
		unix.SYS_BPF)
	checked("checked: a uprobe event's binary path (attr.config1) resolved; group_fd and a cgroup fd must be perf events and cgroup directories, which a placeholder is not",
		unix.SYS_PERF_EVENT_OPEN)
	checked("checked: PR_SET_MM_EXE_FILE may not make a placeholder /proc/self/exe: EACCES; PR_SET_SECCOMP takes no flags and cannot install a listener",
		unix.SYS_PRCTL)
	checked("checked: joining a mount namespace (by its file or a pidfd with CLONE_NEWNS) refused with EPERM: the guest stays in the namespace the sentry resolves its paths in",
		unix.SYS_SETNS)
	checked("checked: a userfaultfd that handles the kernel's faults too (without UFFD_USER_MODE_ONLY) refused with EPERM, as for an unprivileged caller on a default system: the sentry's own reads of the guest's memory (paths, structs) would wait on it for a fault the guest, waiting for the sentry, never resolves (task.go); the same for /dev/userfaultfd's USERFAULTFD_IOC_NEW (policy_fdargs.go)",
		unix.SYS_USERFAULTFD)
	checked("checked: SECCOMP_FILTER_FLAG_NEW_LISTENER refused with EINVAL (an unknown flag before Linux 5.0): a guest listener's CONTINUE would run calls the sentry never saw",
		unix.SYS_SECCOMP)

	// Kernel features left out.
	set(Refused, unix.ENOSYS, whyRefusedUring, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER)
	set(Refused, unix.ENOSYS, whyRefusedAIO, unix.SYS_IO_SETUP, unix.SYS_IO_DESTROY, unix.SYS_IO_SUBMIT,
		unix.SYS_IO_CANCEL, unix.SYS_IO_GETEVENTS, unix.SYS_IO_PGETEVENTS)
	checked("checked: CAP_SYS_ADMIN (EPERM), then a sentry file is Linux's answer for a tmpfs file (EISDIR for a directory, EINVAL: shmem cannot back swap); host paths pass with the sentry's resolution",
		unix.SYS_SWAPON, unix.SYS_SWAPOFF)
	set(Refused, unix.ENOSYS, "refused: ENOSYS, as a kernel built without CONFIG_USELIB (a.out shared libraries; Debian's, and most, are)",
		unix.SYS_USELIB)
	set(Refused, unix.ENOSYS, "refused: the flags are in guest memory another thread can change after the sentry's check; ENOSYS, as before Linux 5.3, and libc falls back to clone",
		unix.SYS_CLONE3)

	// Untrapped.
	harmless("harmless: a virtual fd of a regular file is the sentry's open of its backing, so the host reads the file's own bytes (kernel_read_file); a placeholder gets Linux's answer for the same kind of file (a directory EINVAL, O_PATH EBADF)",
		unix.SYS_FINIT_MODULE, unix.SYS_KEXEC_FILE_LOAD)
	harmless(whyMemory,
		unix.SYS_MPROTECT, unix.SYS_MUNMAP, unix.SYS_BRK, unix.SYS_MREMAP, unix.SYS_MINCORE,
		unix.SYS_MLOCK, unix.SYS_MUNLOCK, unix.SYS_MLOCKALL, unix.SYS_MUNLOCKALL, unix.SYS_MLOCK2,
		unix.SYS_MBIND, unix.SYS_SET_MEMPOLICY, unix.SYS_GET_MEMPOLICY, unix.SYS_MIGRATE_PAGES,
		unix.SYS_MOVE_PAGES, unix.SYS_SET_MEMPOLICY_HOME_NODE, unix.SYS_PKEY_MPROTECT, unix.SYS_PKEY_ALLOC,
		unix.SYS_PKEY_FREE, unix.SYS_MEMBARRIER, unix.SYS_MEMFD_SECRET, unix.SYS_MEMFD_CREATE, unix.SYS_MAP_SHADOW_STACK,
		unix.SYS_MSEAL, unix.SYS_MODIFY_LDT, unix.SYS_ARCH_PRCTL, unix.SYS_SET_THREAD_AREA,
		unix.SYS_GET_THREAD_AREA, unix.SYS_SET_TID_ADDRESS, unix.SYS_RSEQ, unix.SYS_RSEQ_SLICE_YIELD)
	harmless("harmless: another process's memory, no path, no descriptor (a checked path it rewrites is the race another thread of the caller can run: the host must get a copy the guest cannot change, issue #12 item 4)",
		unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV)
	harmless(whyBacking,
		unix.SYS_READ, unix.SYS_WRITE, unix.SYS_PREAD64, unix.SYS_PWRITE64, unix.SYS_LSEEK, unix.SYS_READV,
		unix.SYS_WRITEV, unix.SYS_PREADV, unix.SYS_PWRITEV, unix.SYS_PREADV2, unix.SYS_PWRITEV2, unix.SYS_MMAP,
		unix.SYS_FTRUNCATE, unix.SYS_FALLOCATE, unix.SYS_FSYNC, unix.SYS_FDATASYNC, unix.SYS_SYNCFS,
		unix.SYS_FADVISE64, unix.SYS_FLOCK, unix.SYS_SENDFILE, unix.SYS_COPY_FILE_RANGE, unix.SYS_SPLICE,
		unix.SYS_TEE, unix.SYS_SYNC_FILE_RANGE, unix.SYS_READAHEAD, unix.SYS_CACHESTAT)
	harmless(whyMapping, unix.SYS_MSYNC, unix.SYS_MADVISE, unix.SYS_REMAP_FILE_PAGES)
	harmless(whySignals,
		unix.SYS_RT_SIGACTION, unix.SYS_RT_SIGPROCMASK, unix.SYS_RT_SIGRETURN, unix.SYS_PAUSE,
		unix.SYS_RT_SIGPENDING, unix.SYS_RT_SIGTIMEDWAIT, unix.SYS_RT_SIGQUEUEINFO, unix.SYS_RT_SIGSUSPEND,
		unix.SYS_SIGALTSTACK, unix.SYS_KILL, unix.SYS_TKILL, unix.SYS_TGKILL, unix.SYS_RT_TGSIGQUEUEINFO,
		unix.SYS_RESTART_SYSCALL)
	harmless(whyPidfd, unix.SYS_PIDFD_SEND_SIGNAL, unix.SYS_PROCESS_MADVISE, unix.SYS_PROCESS_MRELEASE)
	harmless(whyNewHostFD+" (a pidfd)", unix.SYS_PIDFD_OPEN)
	harmless(whyTime,
		unix.SYS_NANOSLEEP, unix.SYS_GETITIMER, unix.SYS_ALARM, unix.SYS_SETITIMER, unix.SYS_GETTIMEOFDAY,
		unix.SYS_SETTIMEOFDAY, unix.SYS_ADJTIMEX, unix.SYS_TIME, unix.SYS_TIMES, unix.SYS_TIMER_CREATE,
		unix.SYS_TIMER_SETTIME, unix.SYS_TIMER_GETTIME, unix.SYS_TIMER_GETOVERRUN, unix.SYS_TIMER_DELETE,
		unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_GETTIME, unix.SYS_CLOCK_GETRES, unix.SYS_CLOCK_NANOSLEEP,
		unix.SYS_CLOCK_ADJTIME)
	harmless(whyState,
		unix.SYS_GETPID, unix.SYS_GETPPID, unix.SYS_GETTID, unix.SYS_GETUID, unix.SYS_GETGID,
		unix.SYS_GETEUID, unix.SYS_GETEGID, unix.SYS_GETGROUPS, unix.SYS_GETRESUID, unix.SYS_GETRESGID,
		unix.SYS_GETPGID, unix.SYS_GETSID, unix.SYS_GETPGRP, unix.SYS_SETPGID, unix.SYS_SETSID,
		unix.SYS_CAPGET, unix.SYS_PERSONALITY, unix.SYS_GETRLIMIT, unix.SYS_SETRLIMIT,
		unix.SYS_PRLIMIT64, unix.SYS_GETRUSAGE, unix.SYS_SYSINFO, unix.SYS_UNAME, unix.SYS_GETPRIORITY,
		unix.SYS_SETPRIORITY, unix.SYS_SCHED_SETPARAM, unix.SYS_SCHED_GETPARAM, unix.SYS_SCHED_SETSCHEDULER,
		unix.SYS_SCHED_GETSCHEDULER, unix.SYS_SCHED_GET_PRIORITY_MAX, unix.SYS_SCHED_GET_PRIORITY_MIN,
		unix.SYS_SCHED_RR_GET_INTERVAL, unix.SYS_SCHED_YIELD, unix.SYS_SCHED_SETAFFINITY,
		unix.SYS_SCHED_GETAFFINITY, unix.SYS_SCHED_SETATTR, unix.SYS_SCHED_GETATTR, unix.SYS_GETCPU,
		unix.SYS_IOPRIO_SET, unix.SYS_IOPRIO_GET, unix.SYS_GETRANDOM, unix.SYS_EXIT, unix.SYS_EXIT_GROUP,
		unix.SYS_SET_ROBUST_LIST, unix.SYS_GET_ROBUST_LIST, unix.SYS_LSM_GET_SELF_ATTR,
		unix.SYS_LSM_SET_SELF_ATTR, unix.SYS_LSM_LIST_MODULES)
	harmless("harmless: another process's state; guest processes are the sentry's tracees already (EPERM), others are the host's",
		unix.SYS_PTRACE)
	harmless("harmless: compares two processes' objects; two virtual fds share a placeholder exactly when they share a description, so KCMP_FILE is Linux's answer",
		unix.SYS_KCMP)
	harmless(whyFutex, unix.SYS_FUTEX, unix.SYS_FUTEX_WAITV, unix.SYS_FUTEX_WAKE, unix.SYS_FUTEX_WAIT,
		unix.SYS_FUTEX_REQUEUE)
	harmless(whyWait, unix.SYS_WAIT4, unix.SYS_WAITID)
	harmless(whyHostAdmin,
		unix.SYS_SYSLOG, unix.SYS_REBOOT, unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME, unix.SYS_IOPL,
		unix.SYS_IOPERM, unix.SYS_INIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_KEXEC_LOAD, unix.SYS_SYNC,
		unix.SYS_VHANGUP, unix.SYS_SYSFS, unix.SYS_USTAT, unix.SYS_STATMOUNT, unix.SYS_LISTMOUNT,
		unix.SYS_LISTNS)
	harmless(whyKeys, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL)
	harmless(whyGone,
		unix.SYS__SYSCTL, unix.SYS_CREATE_MODULE, unix.SYS_GET_KERNEL_SYMS, unix.SYS_QUERY_MODULE,
		unix.SYS_NFSSERVCTL, unix.SYS_GETPMSG, unix.SYS_PUTPMSG, unix.SYS_AFS_SYSCALL, unix.SYS_TUXCALL,
		unix.SYS_SECURITY, unix.SYS_VSERVER, unix.SYS_LOOKUP_DCOOKIE, unix.SYS_EPOLL_CTL_OLD,
		unix.SYS_EPOLL_WAIT_OLD)
	harmless("harmless: only valid from the kernel's uprobe trampolines (SIGILL elsewhere), no path, no descriptor",
		unix.SYS_URETPROBE, unix.SYS_UPROBE)
	harmless(whyIPC,
		unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_SHMDT, unix.SYS_SEMGET, unix.SYS_SEMOP,
		unix.SYS_SEMCTL, unix.SYS_SEMTIMEDOP, unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL)
	harmless(whyMqueue,
		unix.SYS_MQ_OPEN, unix.SYS_MQ_UNLINK, unix.SYS_MQ_TIMEDSEND, unix.SYS_MQ_TIMEDRECEIVE,
		unix.SYS_MQ_NOTIFY, unix.SYS_MQ_GETSETATTR)
	harmless(whyNewHostFD,
		unix.SYS_PIPE, unix.SYS_PIPE2, unix.SYS_SOCKET, unix.SYS_SOCKETPAIR, unix.SYS_EVENTFD,
		unix.SYS_EVENTFD2, unix.SYS_EPOLL_CREATE, unix.SYS_EPOLL_CREATE1, unix.SYS_TIMERFD_CREATE,
		unix.SYS_INOTIFY_INIT, unix.SYS_INOTIFY_INIT1, unix.SYS_FANOTIFY_INIT, unix.SYS_FSOPEN,
		unix.SYS_LANDLOCK_CREATE_RULESET)
	harmless(whyPoll,
		unix.SYS_POLL, unix.SYS_SELECT, unix.SYS_PSELECT6, unix.SYS_PPOLL, unix.SYS_EPOLL_WAIT,
		unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2)
	harmless("harmless: a placeholder, like a tmpfs file or directory, cannot be watched: EPERM from the host as from Linux",
		unix.SYS_EPOLL_CTL)
	harmless(whySocketOp,
		unix.SYS_ACCEPT, unix.SYS_ACCEPT4, unix.SYS_RECVFROM,
		unix.SYS_SHUTDOWN, unix.SYS_LISTEN, unix.SYS_GETSOCKOPT)
	harmless(whySockopt, unix.SYS_SETSOCKOPT)
	harmless(whyTypedFD,
		unix.SYS_TIMERFD_SETTIME, unix.SYS_TIMERFD_GETTIME, unix.SYS_INOTIFY_RM_WATCH, unix.SYS_SIGNALFD,
		unix.SYS_SIGNALFD4, unix.SYS_VMSPLICE, unix.SYS_FSMOUNT)
	harmless(whyLandlockSelf, unix.SYS_LANDLOCK_RESTRICT_SELF)
	for nr := uintptr(unix.SYS_UPROBE + 1); nr < unix.SYS_PIDFD_SEND_SIGNAL; nr++ {
		harmless(whyUnassigned, nr)
	}
	return p
}
