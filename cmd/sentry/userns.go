package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"sentry/platform/launch"
)

// userNSExecCmd is the hidden subcommand that runs a program natively in a
// user namespace like the one "sentry run" gives its guest (--userns):
// the reference a root guest is compared with (the tests' native runs).
// Its status is the program's, 128+N when signal N killed it, as run's.
const userNSExecCmd = "__userns-exec"

func userNSExecMain(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintf(os.Stderr, "usage: sentry %s -- COMMAND [ARG...]\n", userNSExecCmd)
		return exitUsage
	}
	path, code, err := lookPath(args[0], os.Environ())
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: %v\n", err)
		return code
	}
	pid, err := launch.StartNative(append([]string{path}, args[1:]...))
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: start %s in a user namespace: %v\n", path, err)
		return exitSandbox
	}
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return exitSignalBase + int(ws.Signal())
	}
	return exitSandbox
}
