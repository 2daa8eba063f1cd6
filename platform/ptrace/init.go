package ptrace

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// InitArg0 is argv[0] of the init stage: the sentry binary re-executed as
// the guest's first process. main must call InitMain when it sees it,
// before doing anything else, from the main goroutine locked to the main
// thread (runtime.LockOSThread in an init function).
const InitArg0 = "[sentry-init]"

// specFD is the init stage's fd carrying the spec; reading it also waits
// until the tracer has attached.
const specFD = 3

// listenerFD is the init stage's end of the socket it tells the sentry its
// notification listener's number on (only with Notify calls).
const listenerFD = 4

// initSpec is what the tracer sends the init stage.
type initSpec struct {
	Path  string
	Argv  []string
	Env   []string
	Traps []uintptr
	// Notify are the calls reported to a user-notification listener
	// instead of stopping for the tracer.
	Notify []uintptr
	// DefaultSignals are set back to SIG_DFL before the exec: the sandbox
	// ignores them for itself, the guest must not inherit that.
	DefaultSignals []int
}

// Exit codes of the init stage when the guest cannot be started, like a
// shell's.
const (
	ExitNotFound      = 127
	ExitNotExecutable = 126
	ExitSandbox       = 125
)

// InitMain runs the init stage and never returns: it waits for the tracer,
// loads the trap filter on this thread and execs the guest.
func InitMain() {
	spec, err := readSpec()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: init: %v\n", err)
		os.Exit(ExitSandbox)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "sentry: init: prctl(PR_SET_NO_NEW_PRIVS): %v\n", err)
		os.Exit(ExitSandbox)
	}
	var handOver *listenerHandOver
	if len(spec.Notify) > 0 {
		handOver = startListenerHandOver()
	}
	listener, err := loadFilter(spec.Traps, spec.Notify)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: init: %v\n", err)
		os.Exit(ExitSandbox)
	}
	if handOver != nil {
		handOver.finish(listener)
	}
	for _, sig := range spec.DefaultSignals {
		setDefaultAction(sig)
	}
	err = unix.Exec(spec.Path, spec.Argv, spec.Env)
	// Only a failed exec gets here: report it as a shell would.
	code := ExitNotExecutable
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		code = ExitNotFound
	}
	fmt.Fprintf(os.Stderr, "sentry: %s: %v\n", spec.Path, err)
	os.Exit(code)
}

// readSpec reads the spec with raw reads (no runtime poller, which would
// open an epoll fd the guest would inherit) and closes its fd.
func readSpec() (*initSpec, error) {
	var data []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(specFD, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read spec: %w", err)
		}
		if n == 0 {
			break
		}
		data = append(data, buf[:n]...)
	}
	unix.Close(specFD)
	var s initSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("decode spec: %w", err)
	}
	return &s, nil
}

// setDefaultAction sets sig's disposition to SIG_DFL with a raw
// rt_sigaction, behind the Go runtime's back: in the init stage the exec
// follows at once; in the tracer, only for SIGCHLD, which the runtime does
// not use (nothing in the sentry calls signal.Notify for it).
func setDefaultAction(sig int) {
	var act [4]uint64 // struct kernel_sigaction: handler, flags, restorer, mask
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act[0])), 0, 8, 0, 0)
}

// listenerHandOver tells the sentry the listener's number and waits until
// it has taken its own copy (pidfd_getfd); then the listener is closed: the
// guest must not hold its own supervisor's listener. Once the filter is
// loaded, the main thread's calls are reported to that listener, which
// nobody serves yet, so the exchange runs on a thread locked before the
// filter was loaded (the filter is loaded without TSYNC, and a thread
// created later by the main thread would inherit it); the main thread only
// waits on a channel (futex, not trapped).
type listenerHandOver struct {
	fd   chan int
	done chan error
}

func startListenerHandOver() *listenerHandOver {
	h := &listenerHandOver{fd: make(chan int), done: make(chan error)}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(ready)
		listener := <-h.fd
		if _, err := unix.Write(listenerFD, []byte(strconv.Itoa(listener))); err != nil {
			h.done <- fmt.Errorf("send listener: %w", err)
			return
		}
		var ack [1]byte
		if n, err := unix.Read(listenerFD, ack[:]); n != 1 {
			h.done <- fmt.Errorf("wait for the sentry to take the listener: %v", err)
			return
		}
		h.done <- nil
	}()
	<-ready
	return h
}

func (h *listenerHandOver) finish(listener int) {
	h.fd <- listener
	if err := <-h.done; err != nil {
		fmt.Fprintf(os.Stderr, "sentry: init: %v\n", err)
		os.Exit(ExitSandbox)
	}
	// Served by the sentry now (host fds: passed through).
	unix.Close(listener)
	unix.Close(listenerFD)
}
