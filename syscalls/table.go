// Package syscalls holds the sentry's system call table and handlers, one
// file per family. The seccomp trap list is derived from the table, so a
// handler cannot exist without its trap, nor a trap without its handler.
package syscalls

import (
	"golang.org/x/sys/unix"

	"sentry/sentry"
)

// A is shorthand for argument kinds in the table.
type A = sentry.ArgKind

const (
	fd    = sentry.ArgFD
	path  = sentry.ArgPath
	oflag = sentry.ArgOpenFlags
	atfl  = sentry.ArgAtFlags
	mode  = sentry.ArgMode
	ptr   = sentry.ArgPtr
	num   = sentry.ArgInt
	hex   = sentry.ArgHex
	clfl  = sentry.ArgCloneFlags
	fcmd  = sentry.ArgFcntlCmd
)

// NewTable returns the syscall table.
func NewTable() *sentry.SyscallTable {
	var t sentry.SyscallTable
	add := func(nr uintptr, name string, fn sentry.SyscallFn, args ...A) {
		t[nr] = sentry.Syscall{Name: name, Fn: fn, Args: args}
	}
	// Files: open.go.
	add(unix.SYS_OPEN, "open", Open, path, oflag, mode)
	add(unix.SYS_OPENAT, "openat", Openat, fd, path, oflag, mode)
	add(unix.SYS_OPENAT2, "openat2", Openat2, fd, path, ptr, num)
	add(unix.SYS_CREAT, "creat", Creat, path, mode)
	// Close: close.go.
	add(unix.SYS_CLOSE, "close", Close, fd)
	add(unix.SYS_CLOSE_RANGE, "close_range", CloseRange, num, num, hex)
	// Stat: stat.go.
	add(unix.SYS_FSTAT, "fstat", Fstat, fd, ptr)
	add(unix.SYS_NEWFSTATAT, "newfstatat", Newfstatat, fd, path, ptr, atfl)
	add(unix.SYS_STAT, "stat", Stat, path, ptr)
	add(unix.SYS_LSTAT, "lstat", Lstat, path, ptr)
	add(unix.SYS_STATX, "statx", Statx, fd, path, atfl, hex, ptr)
	// Descriptors: fd.go.
	add(unix.SYS_DUP, "dup", Dup, fd)
	add(unix.SYS_DUP2, "dup2", Dup2, fd, fd)
	add(unix.SYS_DUP3, "dup3", Dup3, fd, fd, oflag)
	add(unix.SYS_FCNTL, "fcntl", Fcntl, fd, fcmd, hex)
	// Data: rw.go.
	add(unix.SYS_READ, "read", Read, fd, ptr, num)
	add(unix.SYS_WRITE, "write", Write, fd, ptr, num)
	add(unix.SYS_PREAD64, "pread64", Pread64, fd, ptr, num, num)
	add(unix.SYS_PWRITE64, "pwrite64", Pwrite64, fd, ptr, num, num)
	add(unix.SYS_LSEEK, "lseek", Lseek, fd, num, num)
	add(unix.SYS_FTRUNCATE, "ftruncate", Ftruncate, fd, num)
	// Names: dir.go.
	add(unix.SYS_UNLINK, "unlink", Unlink, path)
	add(unix.SYS_UNLINKAT, "unlinkat", Unlinkat, fd, path, atfl)
	add(unix.SYS_RMDIR, "rmdir", Rmdir, path)
	add(unix.SYS_MKDIR, "mkdir", Mkdir, path, mode)
	add(unix.SYS_MKDIRAT, "mkdirat", Mkdirat, fd, path, mode)
	// Processes: task.go.
	add(unix.SYS_EXECVE, "execve", Execve, path, ptr, ptr)
	add(unix.SYS_EXECVEAT, "execveat", Execveat, fd, path, ptr, ptr, atfl)
	add(unix.SYS_CLONE, "clone", Clone, clfl, ptr, ptr, ptr, hex)
	add(unix.SYS_CLONE3, "clone3", Clone3, ptr, num)
	add(unix.SYS_FORK, "fork", Fork)
	add(unix.SYS_VFORK, "vfork", Vfork)
	// The file system context: fs.go.
	add(unix.SYS_CHDIR, "chdir", Chdir, path)
	add(unix.SYS_FCHDIR, "fchdir", Fchdir, fd)
	add(unix.SYS_UMASK, "umask", Umask, mode)
	return &t
}
