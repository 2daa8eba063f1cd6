package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"sentry/cmd/sentry/internal/tracediff"
	"sentry/fs/tmpfs"
	"sentry/syscalls"
)

// diffNativeCmd is the hidden subcommand that sets up the native run's
// mount namespace and then becomes "sentry run --tmpfs none". It is an
// argv word, not a flag, so that "sentry diff" cannot be talked into it.
const diffNativeCmd = "__diff-native"

const diffUsage = `Usage: sentry diff [flags] [run flags] -- COMMAND [ARG...]

Runs COMMAND twice and compares what it did:

  native   every call executed by the host kernel, with a fresh kernel
           tmpfs mounted at each --tmpfs path (default /tmp) in a private
           mount namespace, so the host's own directories are untouched
           (this needs root: unshare(CLONE_NEWNS) and mount(2));
  sandbox  "sentry run" with the given run flags.

Both runs are traced with --strace (the native one with --tmpfs none, so
every trapped call passes through to the host and is still logged); their
stdout and stderr are captured, not shown, and stdin is /dev/null.

The call logs are compared task by task. A task is a process or thread,
named by where it came from rather than by its tid, so that the two runs'
different pids match: "1" is the task that ran COMMAND, "1.2" the second
task that 1 created with clone, fork or vfork, and so on. Within a task the
sequence of (syscall, arguments, result) must be equal. At a divergence
the comparison looks up to 16 calls ahead for the two to agree again, so a
call only one run made is reported alone rather than shifting every later
call. The first --max divergences are printed side by side, then both exit
statuses, and both runs' stdout/stderr when they differ.

What is normalised because it must differ between two runs: pointer
arguments (buffers, stacks, the clone TLS) print as PTR and addresses that
mmap returns as ADDR (ASLR); the child tid returned by clone, fork and vfork
prints as the child's task name; calls the sentry's own init stage makes
before it execs COMMAND are dropped. File descriptor numbers and paths are
compared as they are, since both runs use the same ones.

Limitations: the comparison is sequential per task, so a program whose
call sequence depends on timing or chance (threads racing, polling loops,
retries, Python's randomised hashing moving an mmap: set PYTHONHASHSEED)
can differ without a bug; output that holds times, pids or inode numbers
differs between any two runs. Calls are matched by position, and the
interleaving of tasks is not compared. Only trapped calls (the file system
family, mmap, execve, clone, ...) are logged and compared.

Exit status: 0 when the calls, the exit statuses and the outputs agree; 1
when they diverge; 125 when a run could not be made (setting up the native
namespace failed, or the sentry failed or never started COMMAND); 2 for
usage errors.

Flags of diff:
  --max N    print at most N divergences (default 10; 0 prints none)
  --json     print the report as JSON instead

Run flags (passed to the sandbox run; --cpu to both; --log, --log-format
and --strace are set by diff; --stats is refused, as its table would land in
the stderr that is compared: use --stats-json):
`

// diffFlags are the flags of "sentry diff" besides the run flags.
type diffFlags struct {
	max  int
	json bool
}

// diffMain is "sentry diff" and, with diffNativeCmd first, the native
// run's namespace stage.
func diffMain(args []string) int {
	if len(args) > 0 && args[0] == diffNativeCmd {
		return diffNativeMain(args[1:])
	}
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	var df diffFlags
	var rf runFlags
	fs.IntVar(&df.max, "max", 10, "print at most `N` divergences")
	fs.BoolVar(&df.json, "json", false, "print the report as JSON")
	rf.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), diffUsage)
		runOnly := flag.NewFlagSet("run", flag.ContinueOnError)
		runOnly.SetOutput(fs.Output())
		(&runFlags{}).register(runOnly)
		runOnly.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "sentry diff: no command given (usage: sentry diff [flags] -- COMMAND [ARG...])")
		return exitUsage
	}
	if df.max < 0 {
		fmt.Fprintf(os.Stderr, "sentry diff: --max %d: want 0 or more\n", df.max)
		return exitUsage
	}
	// The runs' run flags are rebuilt from what was set rather than passed
	// on verbatim: the diff flags are mixed in, and --tmpfs must be split
	// (its String joins the specs with commas, which a spec may contain).
	var sandboxFlags, nativeFlags []string
	var usageErr error
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "max", "json", "tmpfs":
		case "log", "log-format":
			usageErr = fmt.Errorf("--%s: diff writes the logs itself", fl.Name)
		case "stats":
			usageErr = errors.New("--stats: the table would be compared as the guest's stderr; use --stats-json")
		case "strace":
			// Always on; accepted so a run command line can be reused.
		case "cpu":
			nativeFlags = append(nativeFlags, "--cpu="+fl.Value.String())
			sandboxFlags = append(sandboxFlags, "--cpu="+fl.Value.String())
		default:
			sandboxFlags = append(sandboxFlags, "--"+fl.Name+"="+fl.Value.String())
		}
	})
	if usageErr != nil {
		fmt.Fprintf(os.Stderr, "sentry diff: %v\n", usageErr)
		return exitUsage
	}
	for _, s := range rf.tmpfs.specs {
		sandboxFlags = append(sandboxFlags, "--tmpfs="+s)
	}
	specs, err := parseTmpfs(rf.tmpfs.specs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry diff: %v\n", err)
		return exitUsage
	}
	rep, code := diff(&df, specs, nativeFlags, sandboxFlags, argv)
	if rep == nil {
		return code
	}
	if df.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(os.Stderr, "sentry diff: writing the report: %v\n", err)
			return exitSandbox
		}
	} else {
		rep.Print(os.Stdout)
	}
	return code
}

// diff makes both runs and compares them. A nil report comes with the
// exit status of a failure already reported on stderr.
func diff(df *diffFlags, specs []tmpfs.MountSpec, nativeFlags, sandboxFlags, argv []string) (*tracediff.Report, int) {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry diff: finding the sentry binary: %v\n", err)
		return nil, exitSandbox
	}
	dir, err := diffTempDir(specs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry diff: %v\n", err)
		return nil, exitSandbox
	}
	defer os.RemoveAll(dir)

	// The native stage gets its mounts as one JSON argument: paths may
	// hold any character but NUL.
	setup := nativeSetup{ErrFile: filepath.Join(dir, "native.err")}
	for _, m := range specs {
		setup.Mounts = append(setup.Mounts, nativeMount{Point: m.Point, Opts: m.Options.Data()})
	}
	setupArg, err := json.Marshal(setup)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry diff: encoding the native setup: %v\n", err)
		return nil, exitSandbox
	}
	nativeLog := filepath.Join(dir, "native.log")
	sandboxLog := filepath.Join(dir, "sandbox.log")
	traceFlags := func(log string) []string {
		return []string{"--strace", "--log-format=json", "--log=" + log}
	}

	rep := &tracediff.Report{Command: argv}
	// One after the other, not in parallel: the runs share the host
	// outside the tmpfs paths, and --cpu pins both to the same CPU.
	// The native run is traced on the ptrace platform, which sees every
	// call's result.
	nativeArgs := append([]string{"diff", diffNativeCmd, string(setupArg), "--", "--tmpfs=none", "--platform=ptrace"}, nativeFlags...)
	nativeArgs = append(append(append(nativeArgs, traceFlags(nativeLog)...), "--"), argv...)
	rep.Native, err = diffRun(self, nativeArgs)
	if err != nil {
		return diffFailed(rep, df, fmt.Errorf("native run: %w", err), exitSandbox)
	}
	if b, _ := os.ReadFile(setup.ErrFile); len(b) > 0 {
		return diffFailed(rep, df, fmt.Errorf("native run: %s", bytes.TrimSpace(b)), exitSandbox)
	}
	sandboxArgs := append(append([]string{"run"}, sandboxFlags...), traceFlags(sandboxLog)...)
	sandboxArgs = append(append(sandboxArgs, "--"), argv...)
	rep.Sandbox, err = diffRun(self, sandboxArgs)
	if err != nil {
		return diffFailed(rep, df, fmt.Errorf("sandbox run: %w", err), exitSandbox)
	}

	kinds := tracediff.KindsOf(syscalls.NewTable())
	native, err := tracediff.ReadLogFile(nativeLog, kinds)
	if err != nil {
		return diffFailed(rep, df, fmt.Errorf("native run: %w", err), exitSandbox)
	}
	sandbox, err := tracediff.ReadLogFile(sandboxLog, kinds)
	if err != nil {
		return diffFailed(rep, df, fmt.Errorf("sandbox run: %w", err), exitSandbox)
	}
	// A run that logged no execve never started COMMAND: the sentry
	// failed, or COMMAND was not found. Comparing two such runs says
	// nothing about the sandbox, so that is a run not made.
	for _, r := range []struct {
		name string
		log  *tracediff.Log
		side tracediff.Side
	}{{"native", native, rep.Native}, {"sandbox", sandbox, rep.Sandbox}} {
		if r.log.Started() {
			continue
		}
		code := exitSandbox
		if r.side.ExitStatus == exitUsage && r.name == "sandbox" {
			// The sentry rejected a run flag only it parses (such as
			// --inject-fault): the user's mistake.
			code = exitUsage
		}
		return diffFailed(rep, df, fmt.Errorf("%s run: exited %d without starting %s: %s",
			r.name, r.side.ExitStatus, argv[0], diffLastLine(r.side.Stderr)), code)
	}
	// The sentry failing mid-run exits 125 with its own message last; the
	// guest may exit 125 too, so only the message tells them apart.
	for _, r := range []struct {
		name string
		side tracediff.Side
	}{{"native", rep.Native}, {"sandbox", rep.Sandbox}} {
		if last := diffLastLine(r.side.Stderr); r.side.ExitStatus == exitSandbox && strings.HasPrefix(last, "sentry: ") {
			return diffFailed(rep, df, fmt.Errorf("%s run: the sentry failed: %s", r.name, last), exitSandbox)
		}
	}
	rep.Compare(native, sandbox, df.max)
	if rep.Equal {
		return rep, 0
	}
	return rep, 1
}

// diffFailed reports a run that could not be made: on stderr, and in the
// report too with --json so a script reading stdout sees it.
func diffFailed(rep *tracediff.Report, df *diffFlags, err error, code int) (*tracediff.Report, int) {
	fmt.Fprintf(os.Stderr, "sentry diff: %v\n", err)
	if !df.json {
		return nil, code
	}
	rep.Error = err.Error()
	return rep, code
}

// diffRun runs the sentry binary with args, capturing its output. An
// error means it could not be run at all; its exit status is not one.
func diffRun(self string, args []string) (tracediff.Side, error) {
	cmd := exec.Command(self, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	side := tracediff.Side{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		// The sentry reports a guest killed by a signal as 128+N itself;
		// the sentry killed by one is reported the same way.
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			side.ExitStatus = exitSignalBase + int(ws.Signal())
		} else {
			side.ExitStatus = ee.ExitCode()
		}
	case err != nil:
		return side, fmt.Errorf("running %s: %w", self, err)
	}
	return side, nil
}

// diffTempDir makes the directory for the logs. It must not be under a
// tmpfs path: the native sentry writes its log from inside the namespace,
// where a fresh tmpfs hides what is below.
func diffTempDir(specs []tmpfs.MountSpec) (string, error) {
	var errs []error
	for _, base := range []string{os.TempDir(), "/var/tmp", "/dev/shm", "/run"} {
		hidden := false
		for _, m := range specs {
			if base == m.Point || strings.HasPrefix(base, m.Point+"/") {
				hidden = true
			}
		}
		if hidden {
			continue
		}
		dir, err := os.MkdirTemp(base, "sentry-diff-")
		if err == nil {
			return dir, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("no directory for the logs outside the tmpfs paths: %w", errors.Join(errs...))
}

// nativeSetup is what the native stage needs besides the run arguments.
type nativeSetup struct {
	ErrFile string        `json:"err_file"`
	Mounts  []nativeMount `json:"mounts"`
}

type nativeMount struct {
	Point string `json:"point"`
	Opts  string `json:"opts"`
}

// diffNativeMain is the native run's first stage: "__diff-native SETUP --
// RUN ARGS". It makes a private mount namespace with a kernel tmpfs at each
// path and execs "sentry run RUN ARGS" in it. Failures go to the setup's
// error file so diff can tell them from the guest's exit status.
func diffNativeMain(args []string) int {
	if len(args) < 2 || args[1] != "--" {
		fmt.Fprintf(os.Stderr, "sentry diff %s: internal: want SETUP -- RUN ARGS\n", diffNativeCmd)
		return exitUsage
	}
	var setup nativeSetup
	if err := json.Unmarshal([]byte(args[0]), &setup); err != nil {
		fmt.Fprintf(os.Stderr, "sentry diff %s: internal: decoding the setup: %v\n", diffNativeCmd, err)
		return exitUsage
	}
	err := diffNativeExec(&setup, args[2:])
	// Only reached on failure: diffNativeExec execs.
	msg := []byte(err.Error() + "\n")
	if werr := os.WriteFile(setup.ErrFile, msg, 0o644); werr != nil {
		fmt.Fprintf(os.Stderr, "sentry diff %s: %v (and writing %s: %v)\n", diffNativeCmd, err, setup.ErrFile, werr)
	}
	return exitSandbox
}

func diffNativeExec(setup *nativeSetup, runArgs []string) error {
	// A mount namespace belongs to a thread until exec, which then
	// carries it into the new image: all of it must happen on one thread.
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWNS): %w (diff needs root for the native run's mounts)", err)
	}
	// Mounts made in the new namespace must not propagate back to the
	// host's (a shared / would carry them).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private in the new mount namespace: %w", err)
	}
	for _, m := range setup.Mounts {
		if err := unix.Mount("tmpfs", m.Point, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, m.Opts); err != nil {
			return fmt.Errorf("mount tmpfs on %s (%s): %w", m.Point, m.Opts, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the sentry binary: %w", err)
	}
	argv := append([]string{self, "run"}, runArgs...)
	// Through /proc/self/exe: the binary may live under a path the new
	// tmpfs mounts just hid.
	if err := syscall.Exec("/proc/self/exe", argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s run: %w", self, err)
	}
	return nil
}

// diffLastLine is the last non-empty line of a run's stderr: where the
// sentry puts its own error.
func diffLastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
