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
// sentry's is run by the host from a copy: the call becomes
// memfd_create, the sentry fills the memfd with the file, and the guest
// then issues execveat(memfd, "", argv, envp, AT_EMPTY_PATH). A "#!"
// script is started as the kernel's binfmt_script would: its interpreter
// is exec'd with the script's path as an argument (execScript), unless
// that interpreter is itself a sentry file; then the script runs from a
// memfd too, not close-on-exec, and its $0 is /dev/fd/N.
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
	var head [binprmBufSize]byte
	n, _ := ino.ReadAt(head[:], 0)
	memfdFlags := uintptr(unix.MFD_CLOEXEC)
	if n >= 2 && head[0] == '#' && head[1] == '!' {
		if res, ok := execScript(t, dirfd, pathAddr, argv, envp, flags, head[:n]); ok {
			return res
		}
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
// /dev/fd/N/path for execveat relative to a directory fd). The
// interpreter must be an absolute host path; otherwise ok is false and
// the script runs from a memfd.
func execScript(t *sentry.Task, dirfd int32, pathAddr, argv, envp uintptr, flags uint32, head []byte) (sentry.Result, bool) {
	interp, arg, ok := parseShebang(head)
	if !ok {
		return sentry.Err(unix.ENOEXEC), true
	}
	if interp[0] != '/' || argv == 0 {
		return sentry.Result{}, false
	}
	if r, err := resolveString(t, interp, true); err != nil || !r.host || r.hostPath != "" {
		return sentry.Result{}, false
	}
	p, err := t.ReadPath(pathAddr)
	if err != nil {
		return sentry.ErrOf(err), true
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
		if err := t.CopyIn(argv+8*i, ptr[:]); err != nil {
			return sentry.Err(unix.EFAULT), true
		}
		v := uintptr(binary.LittleEndian.Uint64(ptr[:]))
		if v == 0 {
			break
		}
		if len(rest) >= 1<<16 {
			return sentry.Result{}, false
		}
		rest = append(rest, v)
	}
	// An argv[0] that was NULL means no further arguments either.
	if err := t.CopyIn(argv, ptr[:]); err != nil {
		return sentry.Err(unix.EFAULT), true
	}
	if binary.LittleEndian.Uint64(ptr[:]) == 0 {
		rest = nil
	}
	strs := []string{interp}
	if arg != "" {
		strs = append(strs, arg)
	}
	strs = append(strs, filename)
	var newArgv []uintptr
	for _, str := range strs {
		a, err := t.WriteStackString(str)
		if err != nil {
			return sentry.Result{}, false
		}
		newArgv = append(newArgv, a)
	}
	newArgv = append(append(newArgv, rest...), 0)
	buf := make([]byte, 8*len(newArgv))
	for i, v := range newArgv {
		binary.LittleEndian.PutUint64(buf[8*i:], uint64(v))
	}
	argvAddr, err := t.StackBuffer(len(buf), buf)
	if err != nil {
		return sentry.Result{}, false
	}
	return sentry.RewriteTo(t, unix.SYS_EXECVE, platform.SyscallArgs{newArgv[0], argvAddr, envp}, identityExit), true
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

// Setid serves the set*id calls (setuid, setresgid, setgroups, capset,
// setfsuid, ...): the host applies them with its own rules and the sentry
// then takes the task's new fsuid, fsgid, groups and capabilities from
// the kernel, for its permission checks on the sentry's files.
func Setid(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return sentry.Observe(t, t.Sysno(), args, setidExit, false)
}

func setidExit(t *sentry.Task, ret int64) int64 {
	t.RefreshCreds()
	return ret
}

// placeholderPath is the /proc path of the guest's placeholder at fd.
func placeholderPath(t *sentry.Task, fd int32) string {
	return "/proc/" + strconv.Itoa(int(t.TID)) + "/fd/" + strconv.Itoa(int(fd))
}

// fillPlaceholder makes the placeholder memfd behind fd hold the file's
// size and data.
func fillPlaceholder(t *sentry.Task, fd int32, size int64, readAt func([]byte, int64) (int, error)) error {
	hfd, err := unix.Open(placeholderPath(t, fd), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return unix.ENOMEM
	}
	defer unix.Close(hfd)
	if err := unix.Ftruncate(hfd, size); err != nil {
		return unix.ENOMEM
	}
	buf := t.IOBuf(1 << 17)
	for off := int64(0); off < size; {
		n, err := readAt(buf, off)
		if n > 0 {
			if _, werr := unix.Pwrite(hfd, buf[:n], off); werr != nil {
				return unix.ENOMEM
			}
			off += int64(n)
		}
		if err != nil || n == 0 {
			break
		}
	}
	return nil
}
