package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"sentry/fs/tmpfs"
	"sentry/platform"
	"sentry/platform/launch"
	"sentry/platform/ptrace"
	"sentry/sentry"
	"sentry/syscalls"
)

// runFlags are the flags of "sentry run".
type runFlags struct {
	strace    bool
	logFile   string
	logFormat string
	stats     bool
	statsJSON string
	cpu       int
	tmpfs     tmpfsFlag
	closePath string
	shortcut  string
	fault     string
	platform  string
	mountMax  int
	userns    string
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.strace, "strace", false, "log every trapped syscall: tid, name, decoded arguments, result or errno, emulated or passthrough")
	fs.StringVar(&f.logFile, "log", "", "write the log (and --strace lines) to `FILE` instead of stderr")
	fs.StringVar(&f.logFormat, "log-format", "console", "log format: console or json")
	fs.BoolVar(&f.stats, "stats", false, "print the counters as a table on stderr when the guest exits, and per trapped syscall (as strace -c -w) the calls, the errors the sentry gave or saw, the calls it let the host run unseen, and the time the guest waited for it")
	fs.StringVar(&f.statsJSON, "stats-json", "", "write the counters as JSON to `FILE` when the guest exits")
	f.tmpfs = tmpfsFlag{specs: []string{"/tmp"}}
	fs.Var(&f.tmpfs, "tmpfs", "serve `PATH[:size=N][,nr_inodes=N][,mode=M][,uid=U][,gid=G]` from an in-memory tmpfs, the options as mount -t tmpfs takes them (size in bytes with k, m, g, ... or % of RAM; repeatable; default /tmp; \"none\" mounts nothing). The guest sees an empty directory there, whatever the host has")
	fs.StringVar(&f.closePath, "close-path", "sync", "how close(2) releases a file: sync (released inside close, the __fput_sync patch) or deferred (queued as task work, the stock kernel)")
	fs.StringVar(&f.shortcut, "fstatat-shortcut", "on", "on: newfstatat(fd, \"\", buf, AT_EMPTY_PATH) is served as fstat(fd) without copying the path (the vfs_fstatat patch); off: it is walked like any path")
	fs.StringVar(&f.fault, "inject-fault", "", "for testing the tests: `SYSCALL:ERRNO` makes every SYSCALL the sentry serves itself fail with ERRNO (e.g. fstat:EIO)")
	fs.StringVar(&f.platform, "platform", defaultPlatform(), "how calls are trapped: ptrace (every trapped call stops the guest for the tracer) or unotify (the hot calls -- open, close, dup, stat, getdents, access, readlink, unlink, mkdir, utimensat, fcntl but its dups, ioctl, the fd xattr calls -- are served by seccomp user notification without a ptrace stop; fork, exec and the rest still stop). Default from $SENTRY_PLATFORM, else ptrace")
	fs.IntVar(&f.mountMax, "mount-max", 0, "the most mounts the guest's mount namespace holds, the guest's tmpfs mounts in the sandbox's directories included (as the fs.mount-max sysctl; 0: the host's)")
	fs.StringVar(&f.userns, "userns", "auto", "on: the guest runs in a user namespace of its own that maps every id to itself: a root guest keeps uid 0 and its power over the host's files, and has no capability over other processes (the sentries of other sandboxes among them), devices, modules or privileged ports, and no CAP_SYS_ADMIN to unmount the sandbox's covers; off: a root guest is the host's root, who can reach other sandboxes; auto (default): on when the sentry runs as root, off with a warning where the kernel refuses user namespaces")
	fs.IntVar(&f.cpu, "cpu", 0, "pin the tracer and the guest to this CPU (a trap then stays on one CPU, several times faster on a VM); -1 leaves them unpinned")
}

func runMain(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var f runFlags
	f.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: sentry run [flags] -- COMMAND [ARG...]\n\n"+
			"Runs COMMAND (looked up in PATH) as the guest under the ptrace + seccomp\n"+
			"supervisor. Exit status is the guest's (128+N if killed by signal N);\n"+
			"125 if the sandbox fails, 126 if COMMAND is not executable, 127 if not found.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "sentry run: no command given (usage: sentry run [flags] -- COMMAND [ARG...])")
		return 2
	}
	return run(&f, argv)
}

func run(f *runFlags, argv []string) int {
	logger, closeLog, err := newLogger(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: %v\n", err)
		return exitSandbox
	}
	defer closeLog()

	env := os.Environ()
	path, code, err := lookPath(argv[0], env)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: %v\n", err)
		return code
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: getwd: %v\n", err)
		return exitSandbox
	}
	umask := unix.Umask(0)
	unix.Umask(umask)

	specs, err := parseTmpfs(f.tmpfs.specs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: %v\n", err)
		return exitUsage
	}
	cwd = startCwd(cwd, specs)
	creds, err := sentry.HostCredentials()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: reading its own credentials: %v\n", err)
		return exitSandbox
	}
	sweepStores()
	mounter := tmpfs.NewMounter(tmpfs.CurrentHost())
	mounts, err := mounter.Mounts(specs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: %v\n", err)
		return exitSandbox
	}
	scratch, err := tmpfs.NewScratchMount()
	if err != nil {
		releaseMounts(mounts)
		fmt.Fprintf(os.Stderr, "sentry: %v\n", err)
		return exitSandbox
	}
	defer releaseMounts(append(mounts, scratch))
	opts := sentry.Options{
		Cwd:     cwd,
		Umask:   uint32(umask),
		Mounts:  mounts,
		Scratch: scratch,
		Creds:   creds,
		Mounter: mounter,
		// fs.mount-max, the kernel's default if unreadable.
		MountMax: cmp.Or(f.mountMax, readIntFile("/proc/sys/fs/mount-max", 100000)),
	}
	switch f.platform {
	case "ptrace", "unotify":
	default:
		fmt.Fprintf(os.Stderr, "sentry: --platform %q: want ptrace or unotify\n", f.platform)
		return exitUsage
	}
	userNS, err := wantUserNS(f.userns)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: %v\n", err)
		return exitUsage
	}
	switch f.closePath {
	case "sync":
		opts.ClosePath = sentry.CloseSync
	case "deferred":
		opts.ClosePath = sentry.CloseDeferred
	default:
		fmt.Fprintf(os.Stderr, "sentry: --close-path %q: want sync or deferred\n", f.closePath)
		return exitUsage
	}
	switch f.shortcut {
	case "on":
		opts.FstatatShortcut = true
	case "off":
	default:
		fmt.Fprintf(os.Stderr, "sentry: --fstatat-shortcut %q: want on or off\n", f.shortcut)
		return exitUsage
	}
	if groups, err := os.Getgroups(); err == nil {
		for _, g := range groups {
			opts.Creds.Groups = append(opts.Creds.Groups, uint32(g))
		}
	}
	table := syscalls.NewTable()
	if f.fault != "" {
		name, errName, _ := strings.Cut(f.fault, ":")
		nr := -1
		for i := range table {
			if table[i].Fn != nil && table[i].Name == name {
				nr = i
			}
		}
		var e unix.Errno
		for i := unix.Errno(1); i <= maxErrno; i++ {
			if unix.ErrnoName(i) == errName {
				e = i
				break
			}
		}
		if nr < 0 || e == 0 {
			fmt.Fprintf(os.Stderr, "sentry: --inject-fault %q: want SYSCALL:ERRNO with a trapped syscall and an errno name\n", f.fault)
			return exitUsage
		}
		opts.FaultSysno, opts.FaultErrno = uintptr(nr), e
	}
	if f.strace {
		opts.Strace = logger
	}
	opts.Notifying = f.platform == "unotify"
	k := sentry.NewKernel(opts, table)

	// Signals meant for the sandbox go to the guest, as they would to the
	// program run natively. SIGINT and SIGQUIT from a terminal already
	// reach the guest (it is in our process group), so they are only
	// kept from killing the sandbox. A signal the caller left ignored
	// (nohup's SIGHUP, a shell's SIGINT for a background job) stays
	// ignored, by the sentry and by the guest (Spec.IgnoredSignals).
	ignored := launch.InitialIgnored()
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT)
	sigs := make(chan os.Signal, 8)
	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2} {
		if ignored&(1<<(s-1)) != 0 {
			signal.Ignore(s)
		} else {
			signal.Notify(sigs, s)
		}
	}
	defer signal.Stop(sigs)
	started := make(chan int, 1)
	go func() {
		pid := <-started
		for s := range sigs {
			unix.Kill(pid, s.(syscall.Signal))
		}
	}()

	var waits *platform.Stats
	if f.stats || f.statsJSON != "" {
		waits = &platform.Stats{}
	}
	begin := time.Now()
	cfg := ptrace.Config{
		Spec: launch.Spec{
			Path:           path,
			Argv:           argv,
			Env:            env,
			Traps:          table.Traps(),
			Filters:        table.ArgFilters(),
			LastSyscall:    syscalls.LastSyscall,
			IgnoredSignals: ignored,
			BlockedSignals: launch.InitialBlocked(),
			NoFile:         launch.RaiseNoFile(),
			Covers:         mountPoints(specs),
			SpecialInodes:  specialInodes(specs),
			Cwd:            cwd,
			UserNS:         userNS,
			UserNSOptional: f.userns == "auto",
		},
		CPU:     f.cpu,
		Started: func(pid int) { started <- pid },
		Stats:   waits,
		Namespace: func(ns launch.Namespace) {
			k.SetGuestNamespace(sentry.GuestNamespace{SpecialDir: ns.SpecialDir, SpecialPath: ns.SpecialPath, Hidden: ns.Hidden})
		},
	}
	if f.platform == "unotify" {
		// The hot calls notify instead of stopping.
		cfg.Traps, cfg.Notify = table.Split()
	}
	ws, err := ptrace.Run(cfg, k)
	elapsed := time.Since(begin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentry: %v\n", err)
		return exitSandbox
	}
	k.Shutdown()
	status := exitStatus(ws)
	if err := writeStats(f, k, waits, status, elapsed); err != nil {
		fmt.Fprintf(os.Stderr, "sentry: %v\n", err)
		return exitSandbox
	}
	return status
}

// exitStatus is what a shell reports for the guest: its exit code, or
// 128+N when signal N killed it.
func exitStatus(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// lookPath finds the guest executable as a shell would (execvp): a name
// with a slash is used as is, others are searched in PATH. It returns the
// shell's exit code for a failure: 127 not found, 126 not executable.
func lookPath(name string, env []string) (string, int, error) {
	if strings.Contains(name, "/") {
		if err := checkExecutable(name); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				return "", exitNotFound, fmt.Errorf("%s: %w", name, err)
			}
			return "", exitNotExecutable, fmt.Errorf("%s: %w", name, err)
		}
		return name, 0, nil
	}
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	var denied error
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		err := checkExecutable(p)
		if err == nil {
			return p, 0, nil
		}
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) && denied == nil {
			denied = fmt.Errorf("%s: %w", p, err)
		}
	}
	if denied != nil {
		return "", exitNotExecutable, denied
	}
	return "", exitNotFound, fmt.Errorf("%s: command not found", name)
}

func checkExecutable(p string) error {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.EISDIR
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return unix.EACCES
	}
	return unix.Access(p, unix.X_OK)
}

func newLogger(f *runFlags) (*zap.Logger, func(), error) {
	var out io.Writer = os.Stderr
	closeFn := func() {}
	if f.logFile != "" {
		file, err := os.Create(f.logFile)
		if err != nil {
			return nil, nil, fmt.Errorf("open log: %w", err)
		}
		out = file
		closeFn = func() { file.Close() }
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch f.logFormat {
	case "json":
		enc = zapcore.NewJSONEncoder(encCfg)
	case "console":
		enc = zapcore.NewConsoleEncoder(encCfg)
	default:
		closeFn()
		return nil, nil, fmt.Errorf("--log-format %q: want console or json", f.logFormat)
	}
	ws := zapcore.Lock(zapcore.AddSync(out))
	logger := zap.New(zapcore.NewCore(enc, ws, zap.InfoLevel))
	return logger, func() { logger.Sync(); closeFn() }, nil
}

// statsReport is the --stats-json document.
type statsReport struct {
	Counters   map[string]uint64 `json:"counters"`
	Tmpfs      []tmpfsReport     `json:"tmpfs"`
	ExitStatus int               `json:"exit_status"`
	ElapsedNS  int64             `json:"elapsed_ns"`
	// Waits is, per trapped syscall, what the guest waited for the
	// sentry (strace -c -w from the sentry's side), most first;
	// WaitShare their total over the elapsed wall time.
	Waits     []waitReport `json:"waits"`
	WaitShare float64      `json:"wait_share"`
}

// waitReport is one syscall's calls and the time the guest waited for the
// sentry to serve them.
type waitReport struct {
	Syscall string `json:"syscall"`
	Calls   uint64 `json:"calls"`
	Errors  uint64 `json:"errors"`
	// Unseen calls ran on the host after the sentry let them go: their
	// results, errors among them, never reached it.
	Unseen  uint64  `json:"unseen"`
	TotalNS int64   `json:"total_ns"`
	MeanNS  float64 `json:"mean_ns"`
}

// tmpfsReport is one mount's usage at exit.
type tmpfsReport struct {
	Mount  string `json:"mount"`
	Inodes int64  `json:"inodes"`
	Bytes  int64  `json:"bytes"`
	// Check is the tmpfs consistency check after the guest is gone: "ok"
	// or what is wrong (link counts, sizes, usage, leaked inodes).
	Check string `json:"check"`
}

func writeStats(f *runFlags, k *sentry.Kernel, waits *platform.Stats, status int, elapsed time.Duration) error {
	if !f.stats && f.statsJSON == "" {
		return nil
	}
	rep := statsReport{Counters: k.Counters.Snapshot(k.Table()), ExitStatus: status, ElapsedNS: elapsed.Nanoseconds()}
	var total time.Duration
	for _, e := range waits.Entries() {
		name := "install (placeholder)"
		if e.Sysno < uintptr(len(k.Table())) && k.Table()[e.Sysno].Name != "" {
			name = k.Table()[e.Sysno].Name
		} else if e.Sysno != platform.SysInstallFD {
			name = "syscall_" + strconv.Itoa(int(e.Sysno))
		}
		rep.Waits = append(rep.Waits, waitReport{Syscall: name, Calls: e.Calls, Errors: e.Errors, Unseen: e.Unseen,
			TotalNS: e.Time.Nanoseconds(), MeanNS: float64(e.Time.Nanoseconds()) / float64(e.Calls)})
		total += e.Time
	}
	sort.Slice(rep.Waits, func(i, j int) bool { return rep.Waits[i].TotalNS > rep.Waits[j].TotalNS })
	if elapsed > 0 {
		rep.WaitShare = float64(total) / float64(elapsed)
	}
	for _, m := range k.VFS.Mounts() {
		inodes, bytes := m.FS.Usage()
		check := "ok"
		if err := m.FS.Check(); err != nil {
			check = err.Error()
		}
		rep.Tmpfs = append(rep.Tmpfs, tmpfsReport{Mount: m.Point, Inodes: inodes, Bytes: bytes, Check: check})
	}
	if f.statsJSON != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.statsJSON, append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("--stats-json: %w", err)
		}
	}
	if f.stats {
		names := make([]string, 0, len(rep.Counters))
		for n, v := range rep.Counters {
			if v != 0 {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "%-44s %12s\n", "counter", "count")
		for _, n := range names {
			fmt.Fprintf(os.Stderr, "%-44s %12d\n", n, rep.Counters[n])
		}
		for _, m := range rep.Tmpfs {
			fmt.Fprintf(os.Stderr, "tmpfs %-20s %8d inodes %12d bytes\n", m.Mount, m.Inodes, m.Bytes)
		}
		// As strace -c -w: where the guest waited for the sentry.
		// errors counts the results the sentry gave or saw; unseen, the
		// calls the host ran after it let them go, whose results it
		// never sees (strace, at every exit, would count their errors).
		fmt.Fprintf(os.Stderr, "\n%6s %11s %11s %9s %9s %9s %s\n", "% time", "seconds", "usecs/call", "calls", "errors", "unseen", "syscall")
		for _, w := range rep.Waits {
			pct := 0.0
			if total > 0 {
				pct = 100 * float64(w.TotalNS) / float64(total)
			}
			fmt.Fprintf(os.Stderr, "%6.2f %11.6f %11.0f %9d %9d %9d %s\n", pct, float64(w.TotalNS)/1e9, w.MeanNS/1e3, w.Calls, w.Errors, w.Unseen, w.Syscall)
		}
		fmt.Fprintf(os.Stderr, "%6s %11.6f %11s %9s %9s %9s %s\n", "100.00", total.Seconds(), "", "", "", "", "total")
		fmt.Fprintf(os.Stderr, "the guest waited for the sentry %.1f%% of the %.3fs it ran\n", 100*rep.WaitShare, elapsed.Seconds())
	}
	return nil
}

// wantUserNS resolves --userns: auto is on for a sentry that runs as root,
// which alone may map every id (a user namespace made by another user maps
// only that user's ids, and its guest had no capability to take away).
func wantUserNS(v string) (bool, error) {
	switch v {
	case "on":
		return true, nil
	case "off":
		return false, nil
	case "auto":
		return unix.Geteuid() == 0, nil
	}
	return false, fmt.Errorf("--userns %q: want auto, on or off", v)
}

// defaultPlatform is --platform's default: $SENTRY_PLATFORM (so that a whole
// test suite or script can switch platforms), else ptrace.
func defaultPlatform() string {
	if p := os.Getenv("SENTRY_PLATFORM"); p != "" {
		return p
	}
	return "ptrace"
}
