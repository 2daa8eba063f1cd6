package syscalls

import (
	"sentry/platform"
	"sentry/sentry"
)

// The handlers below pass every call through to the host for now; the
// tmpfs handlers replace them.

func Open(t *sentry.Task, args *platform.SyscallArgs) sentry.Result       { return sentry.Pass() }
func Openat(t *sentry.Task, args *platform.SyscallArgs) sentry.Result     { return sentry.Pass() }
func Openat2(t *sentry.Task, args *platform.SyscallArgs) sentry.Result    { return sentry.Pass() }
func Creat(t *sentry.Task, args *platform.SyscallArgs) sentry.Result      { return sentry.Pass() }
func Close(t *sentry.Task, args *platform.SyscallArgs) sentry.Result      { return sentry.Pass() }
func CloseRange(t *sentry.Task, args *platform.SyscallArgs) sentry.Result { return sentry.Pass() }
func Fstat(t *sentry.Task, args *platform.SyscallArgs) sentry.Result      { return sentry.Pass() }
func Newfstatat(t *sentry.Task, args *platform.SyscallArgs) sentry.Result { return sentry.Pass() }
func Stat(t *sentry.Task, args *platform.SyscallArgs) sentry.Result       { return sentry.Pass() }
func Lstat(t *sentry.Task, args *platform.SyscallArgs) sentry.Result      { return sentry.Pass() }
func Statx(t *sentry.Task, args *platform.SyscallArgs) sentry.Result      { return sentry.Pass() }
func Dup(t *sentry.Task, args *platform.SyscallArgs) sentry.Result        { return sentry.Pass() }
func Dup2(t *sentry.Task, args *platform.SyscallArgs) sentry.Result       { return sentry.Pass() }
func Dup3(t *sentry.Task, args *platform.SyscallArgs) sentry.Result       { return sentry.Pass() }
func Fcntl(t *sentry.Task, args *platform.SyscallArgs) sentry.Result      { return sentry.Pass() }
