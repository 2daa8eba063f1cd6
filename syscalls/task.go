package syscalls

import (
	"bytes"
	"encoding/binary"
	"strconv"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Execve is execve(path, argv, envp). A host file is the host's to run;
// the sentry's side (close-on-exec, unsharing the table) happens at the
// exec event, which only a successful exec reports. A file of the
// sentry's is run by the host from its backing, the file's data itself
// (fs/tmpfs/storage.go): the call becomes the install call of a
// close-on-exec descriptor of it, and the guest then issues
// execveat(fd, "", argv, envp, AT_EMPTY_PATH) (execBacking). The backing
// has the file's mode and owner, so the host's exec checks agree with the
// sentry's, and while it runs, an open of the file for writing is
// ETXTBSY, as on Linux. A "#!" script is started as the kernel's
// binfmt_script would: its interpreter is exec'd with the script's path
// as an argument (execScript), from its own backing when it is a file of
// the sentry's too.
func Execve(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return seenIfCopying(c, execveat(c, unix.AT_FDCWD, args[0], args[1], args[2], 0))
}

// Execveat is execveat(dirfd, path, argv, envp, flags); see Execve.
func Execveat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return seenIfCopying(c, execveat(c, int32(args[0]), args[1], args[2], args[3], uint32(args[4])))
}

// seenIfCopying makes a call the host runs (an exec, a clone) that opened
// a window on a shared table stop at its exit too, where the window ends
// if its event did not take it (Task.RecordingWindow).
func seenIfCopying(c *sentry.Call, r sentry.Result) sentry.Result {
	if r.Action == platform.Passthrough && c.RecordingWindow() {
		c.ThenAtExit(sentry.Identity{})
	}
	return r
}

func execveat(c *sentry.Call, dirfd int32, pathAddr, argv, envp uintptr, flags uint32) sentry.Result {
	c.BeginTableCopy()
	if flags&^(unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW) != 0 || pathAddr == 0 {
		return sentry.Pass()
	}
	r, err := resolveAt(c, dirfd, pathAddr, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0)
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
	if err := ino.CheckPermission(c.Creds(), vfs.MayExec); err != nil {
		return sentry.ErrOf(err)
	}
	var head [binprmBufSize]byte
	n, _ := ino.ReadAt(head[:], 0)
	if n >= 2 && head[0] == '#' && head[1] == '!' {
		return execScript(c, dirfd, pathAddr, argv, envp, flags, head[:n])
	}
	return execBacking(c, r.Mount, d, argv, envp)
}

// execBacking runs a file of the sentry's: a close-on-exec descriptor of
// its backing is installed in the guest (the install call, with an exit
// stop), then the guest issues execveat(fd, "", argv, envp,
// AT_EMPTY_PATH). If that fails, the descriptor is closed again and the
// guest's call returns execveat's error.
func execBacking(c *sentry.Call, m *vfs.Mount, d vfs.Dentry, argv, envp uintptr) sentry.Result {
	// execveat's path: an empty string of the sentry's (the guest's
	// memory is no place for it: another thread may rewrite it).
	empty, err := c.WriteStackString("")
	if err != nil {
		return sentry.ErrOf(err)
	}
	// Opened for neither reading nor writing (access mode 3, which
	// execveat's own open of it does not need: do_open_execat checks
	// MAY_EXEC alone): the guest holds it until its exec, and may keep
	// it if the exec never comes (its own seccomp filter can fail the
	// reissued execveat), and an O_RDONLY one let a guest that may only
	// execute a file read it.
	f := vfs.NewFileDescription(m, d, unix.O_ACCMODE|oLargefile)
	defer f.DecRef()
	hfd, err := d.Inode().OpenHost(unix.O_ACCMODE)
	if err != nil {
		return sentry.ErrOf(errnoOf(err))
	}
	f.HostFD = hfd
	return c.InstallFileThen(f, true, nil, &execInstalled{empty: empty, argv: argv, envp: envp})
}

// execInstalled has the guest exec the descriptor the install call gave
// it: execveat(fd, empty, argv, envp, AT_EMPTY_PATH), with empty an empty
// string below its stack.
type execInstalled struct {
	empty, argv, envp uintptr
}

func (e *execInstalled) Exit(c *sentry.Call, ret int64) int64 {
	if ret < 0 {
		return ret
	}
	fd := int32(ret)
	c.Reissue(unix.SYS_EXECVEAT, platform.SyscallArgs{uintptr(fd), e.empty, e.argv, e.envp, unix.AT_EMPTY_PATH}, execveatExit{fd: fd})
	return ret
}

// execveatExit closes the installed descriptor fd again when its exec
// failed.
type execveatExit struct{ fd int32 }

func (e execveatExit) Exit(c *sentry.Call, ret int64) int64 {
	if ret < 0 {
		// The image did not change: the descriptor goes.
		c.FailAfterClose(e.fd, unix.Errno(-ret))
	}
	return ret
}

// binprmBufSize is BINPRM_BUF_SIZE: how much of a file exec looks at.
const binprmBufSize = 256

// parseShebang splits a "#!" line as binfmt_script's load_script does, on
// the first 256 bytes of the file zero-padded (prepare_binprm): the line
// ends at the first newline; without one, at the buffer's last byte, and
// only if the interpreter's name is followed by a blank or NUL within the
// buffer (else it may be truncated). Trailing blanks go; the interpreter
// is the first word (up to a blank or NUL) and what follows its blanks,
// up to a NUL, one argument. ok is false for ENOEXEC.
func parseShebang(head []byte) (interp, arg string, ok bool) {
	var buf [binprmBufSize]byte
	copy(buf[:], head)
	blank := func(c byte) bool { return c == ' ' || c == '\t' }
	term := func(c byte) bool { return blank(c) || c == 0 }
	const last = binprmBufSize - 1
	end := bytes.IndexByte(buf[:], '\n')
	if end < 0 {
		first := 2
		for first <= last && blank(buf[first]) {
			first++
		}
		if first > last {
			return "", "", false
		}
		sep := first
		for sep <= last && !term(buf[sep]) {
			sep++
		}
		if sep > last {
			return "", "", false
		}
		end = last
	}
	for end > 2 && blank(buf[end-1]) {
		end--
	}
	name := 2
	for name <= end && blank(buf[name]) {
		name++
	}
	if name >= end {
		return "", "", false
	}
	sep := name
	for sep <= end && !term(buf[sep]) {
		sep++
	}
	if sep > end || sep == end {
		return string(buf[name:end]), "", true
	}
	interp = string(buf[name:sep])
	if buf[sep] == 0 {
		return interp, "", true
	}
	a := sep
	for a < end && blank(buf[a]) {
		a++
	}
	rest := buf[a:end]
	if i := bytes.IndexByte(rest, 0); i >= 0 {
		rest = rest[:i]
	}
	return interp, string(rest), true
}

// execScript starts a sentry "#!" script as load_script would: the call
// becomes execve(interpreter, [interpreter, arg?, filename, argv[1:]...],
// envp), where filename is the path the guest exec'd (bprm->filename:
// /dev/fd/N/path for execveat relative to a directory fd). An interpreter
// that is a file of the sentry's runs from its backing (execBacking), with
// that argv; one that is itself a script of the sentry's is started the
// same way in turn (exec_binprm's loop: its path, as the script names it,
// goes in front of the arguments, and a sixth script is ELOOP), since the
// host would look its interpreter up outside the sentry; one that is
// neither (missing, a directory) fails as open_exec would.
func execScript(c *sentry.Call, dirfd int32, pathAddr, argv, envp uintptr, flags uint32, head []byte) sentry.Result {
	p, err := c.ReadPath(pathAddr)
	if err != nil {
		return sentry.ErrOf(err)
	}
	filename := string(p)
	switch {
	case len(filename) > 0 && filename[0] == '/':
	case dirfd == unix.AT_FDCWD:
	case filename == "" && flags&unix.AT_EMPTY_PATH != 0:
		filename = "/dev/fd/" + strconv.Itoa(int(dirfd))
	default:
		filename = "/dev/fd/" + strconv.Itoa(int(dirfd)) + "/" + filename
	}
	// The guest's argv after argv[0]: its pointers stay valid until the
	// exec replaces the image.
	var rest []uintptr
	var ptr [8]byte
	for i := uintptr(1); ; i++ {
		if err := c.CopyIn(argv+8*i, ptr[:]); err != nil {
			return sentry.Err(unix.EFAULT)
		}
		v := uintptr(binary.LittleEndian.Uint64(ptr[:]))
		if v == 0 {
			break
		}
		if len(rest) >= 1<<16 {
			return sentry.Err(unix.E2BIG)
		}
		rest = append(rest, v)
	}
	// An argv[0] that was NULL means no further arguments either.
	if err := c.CopyIn(argv, ptr[:]); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	if binary.LittleEndian.Uint64(ptr[:]) == 0 {
		rest = nil
	}
	// strs are the new argv's first strings: each script level puts its
	// interpreter and argument in front (remove_arg_zero, then
	// bprm->interp, i_arg, i_name).
	strs := []string{filename}
	var ir resolved
	for depth := 1; ; depth++ {
		if depth > maxScriptDepth {
			return sentry.Err(unix.ELOOP)
		}
		interp, arg, ok := parseShebang(head)
		if !ok {
			return sentry.Err(unix.ENOEXEC)
		}
		if ir, err = resolveString(c, interp, true); err != nil {
			return sentry.ErrOf(err)
		}
		if arg != "" {
			strs = append([]string{interp, arg}, strs...)
		} else {
			strs = append([]string{interp}, strs...)
		}
		if ir.host {
			break
		}
		d := ir.Dentry
		if d == nil {
			return sentry.Err(unix.ENOENT)
		}
		if d.Inode().Mode()&unix.S_IFMT != unix.S_IFREG {
			// open_exec: a directory or special file.
			return sentry.Err(unix.EACCES)
		}
		if err := d.Inode().CheckPermission(c.Creds(), vfs.MayExec); err != nil {
			return sentry.ErrOf(err)
		}
		var buf [binprmBufSize]byte
		n, _ := d.Inode().ReadAt(buf[:], 0)
		if n < 2 || buf[0] != '#' || buf[1] != '!' {
			break
		}
		head = buf[:n]
	}
	var newArgv []uintptr
	for _, str := range strs {
		a, err := c.WriteStackString(str)
		if err != nil {
			return sentry.ErrOf(err)
		}
		newArgv = append(newArgv, a)
	}
	newArgv = append(append(newArgv, rest...), 0)
	buf := make([]byte, 8*len(newArgv))
	for i, v := range newArgv {
		binary.LittleEndian.PutUint64(buf[8*i:], uint64(v))
	}
	argvAddr, err := c.StackBuffer(len(buf), buf)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if ir.host {
		path := newArgv[0]
		if ir.hostPath != "" {
			// The interpreter's path leads through a sentry mount
			// back to the host: the host gets the path resolved.
			if path, err = c.WriteStackString(ir.hostPath); err != nil {
				return sentry.ErrOf(err)
			}
		}
		return sentry.RewriteTo(c, unix.SYS_EXECVE, platform.SyscallArgs{path, argvAddr, envp}, sentry.Identity{})
	}
	return execBacking(c, ir.Mount, ir.Dentry, argvAddr, envp)
}

// maxScriptDepth is how many "#!" scripts one exec may go through:
// exec_binprm gives up (ELOOP) after five rewrites.
const maxScriptDepth = 5

// Clone records the flags for the clone event that names the child: they
// decide whether the child shares the parent's descriptor table and fs
// context (copy_process: CLONE_FILES, CLONE_FS, CLONE_THREAD).
//
// CLONE_UNTRACED is taken out, as a tracer must: the child of a traced
// thread is then traced too (kernel_clone reports it), so its calls are
// the sentry's and it dies with the sandbox. The flags are a register, so
// no other guest thread can put the flag back before the kernel reads it.
// CLONE_NEWNS is refused (EPERM, as for a caller without CAP_SYS_ADMIN):
// the sentry resolves the guest's host paths in its own mount namespace,
// so the guest must stay in it (see Unshare).
func Clone(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	flags := uint64(args[0])
	if flags&unix.CLONE_NEWNS != 0 {
		return sentry.Err(unix.EPERM)
	}
	c.SetCloneFlags(flags)
	if flags&unix.CLONE_UNTRACED == 0 {
		return seenIfCopying(c, sentry.Pass())
	}
	na := *args
	na[0] &^= unix.CLONE_UNTRACED
	return sentry.Observe(c, unix.SYS_CLONE, &na, sentry.Identity{}, false)
}

// clone3 is refused with ENOSYS, as a kernel before 5.3 does (libc then
// falls back to clone): its flags are in guest memory (struct
// clone_args), where another guest thread could set CLONE_UNTRACED or
// CLONE_NEWNS again between the sentry's check and the kernel's read,
// whatever copy the sentry made there. clone's flags are a register.

// Unshare is unshare(flags). The descriptor table and the fs context
// follow the kernel's: when the call succeeds, CLONE_FILES gives the task
// a private copy of its table (unshare_fd) and CLONE_FS (implied by
// CLONE_NEWUSER) of its working directory and umask (unshare_fs), so that
// another thread's close or chdir no longer changes what this one sees.
// CLONE_NEWNS is refused with EPERM, as for a caller without
// CAP_SYS_ADMIN: a mount namespace of the guest's own (with a user
// namespace, any guest can make one) could mount over or link to paths
// the sentry resolves in its own namespace, where the mounts are not.
func Unshare(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	flags := uint64(args[0])
	if flags&unix.CLONE_NEWNS != 0 {
		return sentry.Err(unix.EPERM)
	}
	if flags&(unix.CLONE_FILES|unix.CLONE_FS|unix.CLONE_NEWUSER) == 0 {
		return sentry.Pass()
	}
	if flags&unix.CLONE_FILES != 0 {
		c.BeginTableCopy()
	}
	return sentry.Observe(c, unix.SYS_UNSHARE, args, unshareExit{flags: flags}, true)
}

// unshareExit follows an unshare that succeeded.
type unshareExit struct{ flags uint64 }

func (u unshareExit) Exit(c *sentry.Call, ret int64) int64 {
	flags := u.flags
	if ret != 0 {
		c.DropTableCopy()
		return ret
	}
	if flags&unix.CLONE_FILES != 0 {
		c.UnshareFDTable()
	}
	if flags&(unix.CLONE_FS|unix.CLONE_NEWUSER) != 0 {
		c.UnshareFSContext()
	}
	return ret
}

// Setns is setns(fd, nstype). Joining a mount namespace is refused with
// EPERM (mntns_install without CAP_SYS_ADMIN over it), as unshare's
// CLONE_NEWNS is: by a mount namespace file (nstype 0 or CLONE_NEWNS) or
// by a pidfd with CLONE_NEWNS among the namespaces to join. It would also
// move the kernel's root and working directory behind the sentry's back.
func Setns(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	nstype := uint64(args[1])
	switch {
	case nstype&unix.CLONE_NEWNS != 0:
		return sentry.Err(unix.EPERM)
	case nstype == 0:
		var buf [64]byte
		n, err := unix.Readlink(c.FDLink(int32(args[0])), buf[:])
		if err == nil && bytes.HasPrefix(buf[:n], []byte("mnt:[")) {
			return sentry.Err(unix.EPERM)
		}
	}
	return sentry.Pass()
}

// uffdUserModeOnly is UFFD_USER_MODE_ONLY (include/uapi/linux/userfaultfd.h).
const uffdUserModeOnly = 1

// Userfaultfd is userfaultfd(flags). One that handles the kernel's faults
// as well as the guest's own (without UFFD_USER_MODE_ONLY) is refused
// with EPERM, as userfaultfd_syscall_allowed refuses it to a caller
// without CAP_SYS_PTRACE while vm.unprivileged_userfaultfd is 0 (Linux's
// default): the sentry reads the guest's memory for its calls (a path, a
// stat buffer) with process_vm_readv, a remote fault that such a
// userfaultfd makes wait, killably only, until the guest resolves it,
// while the guest waits for the sentry (on ptrace the tracer, so every
// guest thread, hung for good). A user-mode-only userfaultfd fails those
// reads with EFAULT, as the guest's own kernel would fail the call.
func Userfaultfd(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if int32(args[0])&uffdUserModeOnly == 0 {
		return sentry.Err(unix.EPERM)
	}
	return sentry.Pass()
}

// Seccomp is seccomp(op, flags, args). A guest filter installed with
// SECCOMP_FILTER_FLAG_NEW_LISTENER would have its listener answer calls
// before the sentry sees them (SECCOMP_RET_USER_NOTIF outranks the
// sentry's RET_TRACE and, being newer, wins over its RET_USER_NOTIF), and
// an answer of SECCOMP_USER_NOTIF_FLAG_CONTINUE runs them on the host
// unchecked. The flag is refused with EINVAL, as a kernel without user
// notification refuses an unknown flag (before Linux 5.0). Filters
// without a listener cannot hide a call: the strongest action wins, so a
// guest filter can only make a call fail or kill, never let it past the
// sentry. prctl(PR_SET_SECCOMP) takes no flags (see Prctl).
func Seccomp(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if args[0] == unix.SECCOMP_SET_MODE_FILTER && args[1]&unix.SECCOMP_FILTER_FLAG_NEW_LISTENER != 0 {
		return sentry.Err(unix.EINVAL)
	}
	return sentry.Pass()
}

// Fork is clone(SIGCHLD).
func Fork(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	c.SetCloneFlags(uint64(unix.SIGCHLD))
	return seenIfCopying(c, sentry.Pass())
}

// Vfork is clone(CLONE_VM|CLONE_VFORK|SIGCHLD).
func Vfork(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	c.SetCloneFlags(unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD))
	return seenIfCopying(c, sentry.Pass())
}

// Setid serves the set*id calls (setuid, setresgid, setgroups, capset,
// setfsuid, ...): the host applies them with its own rules and the sentry
// then takes the task's new fsuid, fsgid, groups and capabilities from
// the kernel, for its permission checks on the sentry's files.
func Setid(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return sentry.Observe(c, c.Sysno, args, setidExit{}, false)
}

// setidExit takes the credentials the host's set*id left.
type setidExit struct{}

func (setidExit) Exit(c *sentry.Call, ret int64) int64 {
	c.RefreshCreds()
	return ret
}
