// Command sentry runs Linux programs under a userspace syscall-emulation
// sandbox: a ptrace + seccomp supervisor that serves the guest's file system
// calls on its mounts (by default /tmp) from an in-memory tmpfs written in
// Go, counts every path it takes, and lets every other call run on the host.
package main

import (
	"fmt"
	"os"
	"runtime"

	"sentry/platform/launch"
)

func init() {
	// The init stage must load its seccomp filter and exec the guest from
	// the main thread; locking here keeps the main goroutine there.
	runtime.LockOSThread()
}

// Exit codes of the sandbox itself, like a shell's (defined once, by the
// init stage that reports a guest it cannot start), and of a bad command
// line.
const (
	exitSandbox       = launch.ExitSandbox
	exitNotExecutable = launch.ExitNotExecutable
	exitNotFound      = launch.ExitNotFound
	exitUsage         = 2
	// exitSignalBase + N is the status of a guest killed by signal N.
	exitSignalBase = 128
)

// maxErrno is Linux's MAX_ERRNO: a return value in [-maxErrno, -1] is an
// error number.
const maxErrno = 4095

const usage = `sentry: run Linux programs under a syscall-emulation sandbox.

Usage:
  sentry run [flags] -- COMMAND [ARG...]   run COMMAND in the sandbox
  sentry bench [flags]                      compare syscall loops: native, stock, patched, peers
  sentry diff [flags] -- COMMAND [ARG...]  run COMMAND natively and in the sandbox, compare their syscalls
  sentry help [COMMAND]                     show help

"sentry run -h" lists the flags of run.

Exit status: the guest's own (its exit code, or 128+N when signal N killed
it); 125 when the sandbox itself fails; 126 when COMMAND cannot be executed
and 127 when it is not found, like a shell.
`

func main() {
	if len(os.Args) > 0 && os.Args[0] == launch.InitArg0 {
		launch.InitMain()
	}
	if len(os.Args) > 0 && os.Args[0] == launch.NativeArg0 {
		launch.NativeMain()
	}
	runtime.UnlockOSThread()
	os.Exit(mainWithArgs(os.Args[1:]))
}

func mainWithArgs(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runMain(args[1:])
	case "bench":
		return benchMain(args[1:])
	case "diff":
		return diffMain(args[1:])
	case userNSExecCmd:
		return userNSExecMain(args[1:])
	case "help", "-h", "--help", "-help":
		if len(args) > 1 && args[0] == "help" {
			return mainWithArgs([]string{args[1], "-h"})
		}
		fmt.Print(usage)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "sentry: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
