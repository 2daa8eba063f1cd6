// Package launch starts a guest for every platform: the sentry binary
// re-executed as an init stage that waits until it is traced, installs the
// sandbox's seccomp filter on itself, hands the filter's user-notification
// listener to the sentry and execs the guest. Both platforms stop the guest
// with ptrace for fork, exec, exit and signals and receive notifications
// from the same filter; they differ only in which calls notify instead of
// stopping (Spec.Notify).
package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
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
// notification listener's number on.
const listenerFD = 4

// Spec is what the sentry sends the init stage.
type Spec struct {
	Path  string
	Argv  []string
	Env   []string
	Traps []uintptr
	// Notify are the calls reported to the user-notification listener
	// instead of stopping for the tracer (the install call, SysInstallFD,
	// always is).
	Notify []uintptr
	// Filters narrow some of those calls to the ones whose argument
	// has one of the listed values.
	Filters []platform.ArgFilter
	// LastSyscall is the highest number the sandbox has a decision
	// for; the filter fails every number past it (but the install
	// call) with ENOSYS.
	LastSyscall uintptr
	// IgnoredSignals (bit N-1 for signal N) are the signals the sentry's
	// caller left ignored (InitialIgnored): the guest starts with those
	// ignored and every other signal at its default action, as a program
	// the caller exec'd itself would (the sentry ignores or catches
	// others for itself, which the guest must not inherit).
	IgnoredSignals uint64
	// BlockedSignals is the signal mask the guest starts with: the
	// caller's (InitialBlocked), which the init stage's runtime changed.
	BlockedSignals uint64
	// NoFile is the guest's RLIMIT_NOFILE: the sentry's own before it
	// raised it for the host descriptors it keeps (RaiseNoFile).
	NoFile unix.Rlimit
	// Covers are the sentry's mount points: the guest gets a mount
	// namespace of its own with an empty read-only tmpfs over each
	// (namespace.go). None: the guest stays in the sentry's namespace.
	Covers []string
	// SpecialInodes is nr_inodes of the private directory for host
	// special files (0: unlimited): what the sentry's mounts can hold.
	SpecialInodes uint64
	// Cwd is the guest's working directory, entered again once the
	// covers are mounted (the init stage's still references the host's
	// directory under a cover); "" keeps the sentry's.
	Cwd string
	// UserNS starts the init stage in a user namespace of its own that
	// maps every id to itself (userns.go): the guest keeps its ids and
	// its power over the host's files, and loses every capability over
	// what the initial namespace owns (other processes, the sentries
	// among them; devices, modules, the network's privileged ports).
	UserNS bool
	// UserNSOptional lets the init stage start without one when the
	// kernel refuses it (user namespaces disabled), saying so on stderr.
	UserNSOptional bool
}

// RaiseNoFile raises the calling process's RLIMIT_NOFILE to the most the
// kernel allows (fs.nr_open) and returns what it was, for Spec.NoFile: the
// sentry keeps a host descriptor per open file of the guest's, and must
// not run out before the guest's own limit does. A raw prlimit, so that
// Go's syscall package, which restores the limit it found for the
// processes it starts, does not mistake this for the program's choice.
func RaiseNoFile() unix.Rlimit {
	var old unix.Rlimit
	if unix.Prlimit(0, unix.RLIMIT_NOFILE, nil, &old) != nil {
		return unix.Rlimit{Cur: 1024, Max: 4096}
	}
	max := old.Max
	if b, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n > max {
			max = n
		}
	}
	raised := unix.Rlimit{Cur: max, Max: max}
	if unix.Prlimit(0, unix.RLIMIT_NOFILE, &raised, nil) != nil {
		raised = unix.Rlimit{Cur: old.Max, Max: old.Max}
		unix.Prlimit(0, unix.RLIMIT_NOFILE, &raised, nil)
	}
	return old
}

// Exit codes of the sandbox itself, like a shell's: the guest cannot be
// started (not found, not executable) or the sandbox failed.
const (
	ExitNotFound      = 127
	ExitNotExecutable = 126
	ExitSandbox       = 125
)

// InitMain runs the init stage and never returns: it waits for the tracer,
// loads the filter on this thread, hands the listener over and execs the
// guest.
func InitMain() {
	spec, err := readSpec()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: init: %v\n", err)
		os.Exit(ExitSandbox)
	}
	msg := handOverMsg{SpecialDir: -1}
	if err := makeNamespace(spec.Covers, spec.SpecialInodes, &msg); err != nil {
		// Said once, here: the sandbox still isolates its tmpfs for
		// every call the sentry sees (README, Threat model).
		fmt.Fprintf(os.Stderr, "sentry: the guest shares the host's mount namespace (%v): nothing covers the host's %s, where a path that gets past the sentry lands\n",
			err, strings.Join(spec.Covers, ", "))
	}
	if msg.Namespace && spec.Cwd != "" {
		// The working directory still references the host's directory,
		// which a cover may hide now: enter the guest's. Outside the
		// covers it is the same directory, so a failure leaves it be.
		if err := unix.Chdir(spec.Cwd); err != nil {
			fmt.Fprintf(os.Stderr, "sentry: init: chdir %s in the guest's mount namespace: %v\n", spec.Cwd, err)
		}
	}
	if spec.UserNS {
		if err := dropNamespaceAdmin(); err != nil {
			fmt.Fprintf(os.Stderr, "sentry: init: %v\n", err)
			os.Exit(ExitSandbox)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "sentry: init: prctl(PR_SET_NO_NEW_PRIVS): %v\n", err)
		os.Exit(ExitSandbox)
	}
	handOver := startListenerHandOver(&msg)
	listener, err := loadFilter(spec.Traps, spec.Notify, spec.Filters, spec.LastSyscall)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: init: %v\n", err)
		os.Exit(ExitSandbox)
	}
	handOver.finish(listener)
	for sig := 1; sig <= 64; sig++ {
		if sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) {
			continue
		}
		handler := uint64(0) // SIG_DFL
		if spec.IgnoredSignals&(1<<(sig-1)) != 0 {
			handler = 1 // SIG_IGN
		}
		setAction(sig, handler)
	}
	if spec.NoFile.Max != 0 {
		if err := unix.Prlimit(0, unix.RLIMIT_NOFILE, &spec.NoFile, nil); err != nil {
			fmt.Fprintf(os.Stderr, "sentry: init: restore RLIMIT_NOFILE: %v\n", err)
			os.Exit(ExitSandbox)
		}
	}
	// Last: nothing of the init stage runs with the guest's mask but the
	// exec (this goroutine is the locked main thread's).
	mask := spec.BlockedSignals
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&mask)), 0, 8, 0, 0)
	execFailed(spec.Path, unix.Exec(spec.Path, spec.Argv, spec.Env))
}

// execFailed reports a failed exec of path as a shell would, and exits
// with a shell's status for it.
func execFailed(path string, err error) {
	code := ExitNotExecutable
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		code = ExitNotFound
	}
	fmt.Fprintf(os.Stderr, "sentry: %s: %v\n", path, err)
	os.Exit(code)
}

// readSpec reads the spec with raw reads (no runtime poller, which would
// open an epoll fd the guest would inherit) and closes its fd.
func readSpec() (*Spec, error) {
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
	var s Spec
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("decode spec: %w", err)
	}
	return &s, nil
}

// SetDefaultAction sets sig's disposition to SIG_DFL with a raw
// rt_sigaction, behind the Go runtime's back: in the init stage the exec
// follows at once; in the tracer, only for SIGCHLD, which the runtime does
// not use (nothing in the sentry calls signal.Notify for it).
func SetDefaultAction(sig int) { setAction(sig, 0) }

// setAction sets sig's handler to SIG_DFL (0) or SIG_IGN (1), with no
// flags or mask: raw, as struct kernel_sigaction is (handler, flags,
// restorer, mask).
func setAction(sig int, handler uint64) {
	act := [4]uint64{handler}
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act[0])), 0, 8, 0, 0)
}

// listenerHandOver tells the sentry the listener's number (and the
// private directory's, namespace.go) and waits until it has taken its own
// copies (pidfd_getfd); then they are closed: the guest must not hold its
// own supervisor's listener. Once the filter is
// loaded, the main thread's notifying calls wait for a listener nobody
// serves yet, so the exchange runs on a thread locked before the filter
// was loaded (the filter is loaded without TSYNC, and a thread created
// later by the main thread would inherit it); the main thread only waits
// on a channel (futex, never notified).
type listenerHandOver struct {
	fd      chan int
	done    chan error
	special int
}

func startListenerHandOver(msg *handOverMsg) *listenerHandOver {
	h := &listenerHandOver{fd: make(chan int), done: make(chan error), special: msg.SpecialDir}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(ready)
		msg.Listener = <-h.fd
		data, err := json.Marshal(msg)
		if err != nil {
			h.done <- fmt.Errorf("encode hand-over: %w", err)
			return
		}
		if _, err := unix.Write(listenerFD, append(data, '\n')); err != nil {
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
	unix.Close(listener)
	if h.special >= 0 {
		unix.Close(h.special)
	}
	unix.Close(listenerFD)
}

// Guest is an init stage started by Start.
type Guest struct {
	// Pid is the init stage's (and then the guest's first) process id.
	Pid  int
	sock int
}

// Start forks the init stage from the calling thread (so it inherits the
// thread's CPU pinning), calls attach with its pid while it waits, then
// sends it spec. The caller must serve the guest's ptrace stops from then
// on, and take the listener with TakeListener from another goroutine: the
// init stage hands it over while it is already traced.
func Start(spec *Spec, attach func(pid int) error) (*Guest, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("spec pipe: %w", err)
	}
	sock, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("listener socket: %w", err)
	}
	// The init stage waits on the spec pipe until it is attached.
	attr := &syscall.ProcAttr{
		Env:   spec.Env,
		Files: []uintptr{0, 1, 2, r.Fd(), uintptr(sock[1])},
		Sys:   userNSAttr(spec.UserNS),
	}
	pid, err := syscall.ForkExec("/proc/self/exe", []string{InitArg0}, attr)
	if err != nil && spec.UserNS && spec.UserNSOptional {
		// Said once, here, as for the mount namespace.
		fmt.Fprintf(os.Stderr, "sentry: no user namespace for the guest (%v): a root guest is the host's root, with every capability of the host's\n", err)
		spec.UserNS = false
		attr.Sys = nil
		pid, err = syscall.ForkExec("/proc/self/exe", []string{InitArg0}, attr)
	}
	r.Close()
	unix.Close(sock[1])
	if err != nil {
		w.Close()
		unix.Close(sock[0])
		if spec.UserNS {
			return nil, fmt.Errorf("start init stage in a user namespace of its own (--userns=on; --userns=off runs without one): %w", err)
		}
		return nil, fmt.Errorf("start init stage: %w", err)
	}
	g := &Guest{Pid: pid, sock: sock[0]}
	if err := attach(pid); err != nil {
		w.Close()
		g.kill()
		return nil, err
	}
	_, werr := w.Write(data)
	w.Close()
	if werr != nil {
		g.kill()
		return nil, fmt.Errorf("send spec to init stage: %w", werr)
	}
	return g, nil
}

func (g *Guest) kill() {
	unix.Kill(g.Pid, unix.SIGKILL)
	unix.Close(g.sock)
}

// maxHandOver bounds the init stage's hand-over message.
const maxHandOver = 64 << 10

// TakeListener takes the sentry's copy of the init stage's notification
// listener (pidfd_getfd); Release then lets the init stage go on to exec
// the guest. When the init stage made the guest a mount namespace,
// onNamespace is given what the sentry needs of it (and owns its
// descriptor; it is closed when onNamespace is nil), and mountNS is a
// descriptor of the namespace itself (-1 without one). On failure the
// init stage is killed: its calls would wait for a listener nobody
// serves. ok is false without an error when the init stage failed before
// loading its filter (it said why itself).
func (g *Guest) TakeListener(onNamespace func(Namespace)) (listener, mountNS int, ok bool, err error) {
	listener, mountNS = -1, -1
	fail := func(err error) (int, int, bool, error) {
		g.kill()
		if listener >= 0 {
			unix.Close(listener)
		}
		if mountNS >= 0 {
			unix.Close(mountNS)
		}
		return -1, -1, false, err
	}
	var data []byte
	buf := make([]byte, 4096)
	for len(data) == 0 || data[len(data)-1] != '\n' {
		n, err := unix.Read(g.sock, buf)
		if err == unix.EINTR {
			continue
		}
		if n <= 0 {
			if err != nil {
				return fail(fmt.Errorf("read the init stage's hand-over: %w", err))
			}
			if len(data) > 0 {
				return fail(fmt.Errorf("short hand-over %q", data))
			}
			unix.Close(g.sock)
			return -1, -1, false, nil
		}
		if data = append(data, buf[:n]...); len(data) > maxHandOver {
			return fail(fmt.Errorf("hand-over longer than %d bytes", maxHandOver))
		}
	}
	var msg handOverMsg
	if err := json.Unmarshal(data, &msg); err != nil {
		return fail(fmt.Errorf("bad hand-over %q: %w", data, err))
	}
	listener, err = platform.GetFD(int32(g.Pid), int32(msg.Listener))
	if err != nil {
		listener = -1
		return fail(fmt.Errorf("pidfd_getfd(%d, %d): %w", g.Pid, msg.Listener, err))
	}
	if msg.Namespace {
		// The init stage is still alive (it waits for the release
		// below), so its namespace is the guest's.
		ns := "/proc/" + strconv.Itoa(g.Pid) + "/ns/mnt"
		if mountNS, err = unix.Open(ns, unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			mountNS = -1
			return fail(fmt.Errorf("open %s: %w", ns, err))
		}
	}
	if msg.SpecialDir >= 0 {
		dir, err := platform.GetFD(int32(g.Pid), int32(msg.SpecialDir))
		if err != nil {
			return fail(fmt.Errorf("pidfd_getfd(%d, %d): %w", g.Pid, msg.SpecialDir, err))
		}
		if onNamespace == nil {
			unix.Close(dir)
		} else {
			onNamespace(Namespace{SpecialDir: dir, SpecialPath: msg.SpecialPath, Hidden: msg.Hidden})
		}
	}
	return listener, mountNS, true, nil
}

// Release lets the init stage exec the guest, once the listener it took
// is served: the guest's first calls may need the server (its injector).
// On failure the init stage is killed.
func (g *Guest) Release() error {
	defer unix.Close(g.sock)
	if _, err := unix.Write(g.sock, []byte{1}); err != nil {
		unix.Kill(g.Pid, unix.SIGKILL)
		return fmt.Errorf("release init stage: %w", err)
	}
	return nil
}
