package sentry

import (
	"strconv"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"sentry/platform"
)

// retUnknown stands for a host result the platform does not report (a call
// passed through by notification).
const retUnknown = -1 << 63

// trace logs one completed call (--strace). It runs only when tracing is
// on; the hot path never gets here otherwise.
func (k *Kernel) trace(t *Task, sysno uintptr, args string, ret int64, served bool) {
	fields := []zap.Field{
		zap.Int32("tid", t.TID),
		zap.String("syscall", k.table[sysno].Name),
		zap.String("args", args),
	}
	if ret == retUnknown {
		fields = append(fields, zap.String("ret", "?"))
	} else if ret < 0 && ret > -4096 {
		e := unix.Errno(-ret)
		fields = append(fields, zap.Int64("ret", -1), zap.String("errno", unix.ErrnoName(e)), zap.String("error", e.Error()))
	} else {
		fields = append(fields, zap.Int64("ret", ret))
	}
	if served {
		fields = append(fields, zap.String("path", "emulated"))
	} else {
		fields = append(fields, zap.String("path", "passthrough"))
	}
	k.Opts.Strace.Info("syscall", fields...)
}

// decodeArgs renders the call's arguments as strace does.
func (k *Kernel) decodeArgs(t *Task, sysno uintptr, args *platform.SyscallArgs) string {
	var b strings.Builder
	for i, kind := range k.table[sysno].Args {
		if i > 0 {
			b.WriteString(", ")
		}
		a := args[i]
		switch kind {
		case ArgFD:
			if int32(a) == unix.AT_FDCWD {
				b.WriteString("AT_FDCWD")
			} else {
				b.WriteString(strconv.Itoa(int(int32(a))))
			}
		case ArgPath:
			if a == 0 {
				b.WriteString("NULL")
				break
			}
			s, err := platform.ReadString(t.TID, a, unix.PathMax, nil)
			if err != nil {
				b.WriteString("0x" + strconv.FormatUint(uint64(a), 16))
			} else {
				b.WriteString(strconv.Quote(string(s)))
			}
		case ArgOpenFlags:
			b.WriteString(OpenFlagsString(uint32(a)))
		case ArgAtFlags:
			b.WriteString(atFlagsString(uint32(a)))
		case ArgMode:
			b.WriteString("0" + strconv.FormatUint(uint64(a), 8))
		case ArgCloneFlags:
			b.WriteString(cloneFlagsString(uint64(a)))
		case ArgFcntlCmd:
			b.WriteString(fcntlCmdString(int(a)))
		case ArgInt:
			b.WriteString(strconv.FormatInt(int64(a), 10))
		default:
			b.WriteString("0x" + strconv.FormatUint(uint64(a), 16))
		}
	}
	return b.String()
}

type flagName struct {
	bit  uint64
	name string
}

var openFlagNames = []flagName{
	{unix.O_CREAT, "O_CREAT"}, {unix.O_EXCL, "O_EXCL"}, {unix.O_NOCTTY, "O_NOCTTY"},
	{unix.O_TRUNC, "O_TRUNC"}, {unix.O_APPEND, "O_APPEND"}, {unix.O_NONBLOCK, "O_NONBLOCK"},
	{unix.O_DSYNC, "O_DSYNC"}, {unix.O_ASYNC, "O_ASYNC"}, {unix.O_DIRECT, "O_DIRECT"},
	{unix.O_LARGEFILE, "O_LARGEFILE"}, {unix.O_DIRECTORY, "O_DIRECTORY"},
	{unix.O_NOFOLLOW, "O_NOFOLLOW"}, {unix.O_NOATIME, "O_NOATIME"}, {unix.O_CLOEXEC, "O_CLOEXEC"},
	{unix.O_PATH, "O_PATH"}, {unix.O_SYNC &^ unix.O_DSYNC, "__O_SYNC"}, {unix.O_TMPFILE &^ unix.O_DIRECTORY, "__O_TMPFILE"},
}

// OpenFlagsString renders open(2) flags symbolically: O_RDONLY|O_CREAT|...
func OpenFlagsString(f uint32) string {
	var parts []string
	switch f & unix.O_ACCMODE {
	case unix.O_RDONLY:
		parts = append(parts, "O_RDONLY")
	case unix.O_WRONLY:
		parts = append(parts, "O_WRONLY")
	case unix.O_RDWR:
		parts = append(parts, "O_RDWR")
	default:
		parts = append(parts, "O_ACCMODE")
	}
	rest := uint64(f &^ unix.O_ACCMODE)
	return joinFlags(parts, rest, openFlagNames)
}

var atFlagNames = []flagName{
	{unix.AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW"}, {unix.AT_REMOVEDIR, "AT_REMOVEDIR"},
	{unix.AT_SYMLINK_FOLLOW, "AT_SYMLINK_FOLLOW"}, {unix.AT_NO_AUTOMOUNT, "AT_NO_AUTOMOUNT"},
	{unix.AT_EMPTY_PATH, "AT_EMPTY_PATH"}, {unix.AT_STATX_FORCE_SYNC, "AT_STATX_FORCE_SYNC"},
	{unix.AT_STATX_DONT_SYNC, "AT_STATX_DONT_SYNC"},
}

func atFlagsString(f uint32) string {
	if f == 0 {
		return "0"
	}
	return joinFlags(nil, uint64(f), atFlagNames)
}

var cloneFlagNames = []flagName{
	{unix.CLONE_VM, "CLONE_VM"}, {unix.CLONE_FS, "CLONE_FS"}, {unix.CLONE_FILES, "CLONE_FILES"},
	{unix.CLONE_SIGHAND, "CLONE_SIGHAND"}, {unix.CLONE_PIDFD, "CLONE_PIDFD"}, {unix.CLONE_PTRACE, "CLONE_PTRACE"},
	{unix.CLONE_VFORK, "CLONE_VFORK"}, {unix.CLONE_PARENT, "CLONE_PARENT"}, {unix.CLONE_THREAD, "CLONE_THREAD"},
	{unix.CLONE_NEWNS, "CLONE_NEWNS"}, {unix.CLONE_SYSVSEM, "CLONE_SYSVSEM"}, {unix.CLONE_SETTLS, "CLONE_SETTLS"},
	{unix.CLONE_PARENT_SETTID, "CLONE_PARENT_SETTID"}, {unix.CLONE_CHILD_CLEARTID, "CLONE_CHILD_CLEARTID"},
	{unix.CLONE_CHILD_SETTID, "CLONE_CHILD_SETTID"},
}

func cloneFlagsString(f uint64) string {
	sig := f & unix.CSIGNAL
	parts := []string(nil)
	s := joinFlags(parts, f&^unix.CSIGNAL, cloneFlagNames)
	if sig != 0 {
		name := unix.SignalName(unix.Signal(sig))
		if name == "" {
			name = strconv.FormatUint(sig, 10)
		}
		if s == "0" {
			return name
		}
		return s + "|" + name
	}
	return s
}

func fcntlCmdString(cmd int) string {
	switch cmd {
	case unix.F_DUPFD:
		return "F_DUPFD"
	case unix.F_DUPFD_CLOEXEC:
		return "F_DUPFD_CLOEXEC"
	case unix.F_GETFD:
		return "F_GETFD"
	case unix.F_SETFD:
		return "F_SETFD"
	case unix.F_GETFL:
		return "F_GETFL"
	case unix.F_SETFL:
		return "F_SETFL"
	case unix.F_GETLK:
		return "F_GETLK"
	case unix.F_SETLK:
		return "F_SETLK"
	case unix.F_SETLKW:
		return "F_SETLKW"
	}
	return strconv.Itoa(cmd)
}

func joinFlags(parts []string, rest uint64, names []flagName) string {
	for _, n := range names {
		if rest&n.bit == n.bit && n.bit != 0 {
			parts = append(parts, n.name)
			rest &^= n.bit
		}
	}
	if rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(rest, 16))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, "|")
}
