package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sentry/syscalls"
)

// workloadSrc holds every loop of the benchmark; it is compiled on first use
// so that "sentry bench" needs nothing but the binary and a C compiler.
//
//go:embed testdata/bench/workload.c
var workloadSrc []byte

// floorSrc is the C floor supervisor (issue #16): the least a supervisor
// can do per trapped call (one stop or one notification; fstat from a
// cache; open and close observed and let run). Its columns say how far
// each platform is from what its mechanism allows.
//
//go:embed testdata/bench/floor.c
var floorSrc []byte

// benchCFlags are part of the cache key: a binary built with other flags is
// another binary.
var benchCFlags = []string{"-O2", "-Wall"}

// benchWorkloads are the loops workload.c knows, in report order.
var benchWorkloads = []struct{ name, what string }{
	{"open1", "open+close of one file"},
	{"fstat", "fstat(fd)"},
	{"fstatat_empty", `newfstatat(fd, "", AT_EMPTY_PATH)`},
	{"stat", "newfstatat(AT_FDCWD, path, 0)"},
	{"read4k", "pread 4096 bytes at offset 0"},
	{"write4k", "pwrite 4096 bytes at offset 0"},
	{"getppid", "getppid (never trapped)"},
	{"hoststat", "newfstatat(AT_FDCWD, " + benchHostFile + ", 0): a host path"},
	{"hostopen1", "open+close of " + benchHostFile + ": a host path"},
	{"hostlinkstat", "newfstatat of a host symlink in /dev/shm to " + benchHostFile},
}

// benchHostFile is the host file the host-path workloads name: the C
// compiler that builds them has it.
const benchHostFile = "/usr/include/stdio.h"

// benchCounters are the per-path counters the report shows for the sandbox
// modes: the two paths the kernel patches change, and what each replaces.
var benchCounters = []string{
	"close.sync", "close.deferred", "taskwork.run",
	"fstat", "newfstatat.empty_path_shortcut", "newfstatat.lookup",
}

// benchGuestDir is where the sandboxed workload works: under the sentry's
// tmpfs, which is the file system being measured.
const benchGuestDir = "/tmp/bench"

// benchHostTmpfs is where native runs and peers work: a kernel tmpfs, the
// reference the sentry's tmpfs is compared with.
const benchHostTmpfs = "/dev/shm"

// benchRunOverhead is a guess at what one run costs beyond its duration
// (starting the sandbox, loading the program, writing stats), used only for
// the estimate printed before starting.
const benchRunOverhead = 60 * time.Millisecond

const benchUsage = `Usage: sentry bench [flags]

Runs will-it-scale-style loops natively on a kernel tmpfs (` + benchHostTmpfs + `), under
"sentry run" as the stock kernel behaves (--close-path deferred
--fstatat-shortcut off) and as patched (the defaults), and under strace and
proot when they are installed, and prints each one's median ops/s. Runs
interleave (native, stock, patched, peers; then the next repeat) so drift
over time does not bias the ratios.

Workloads: %s (all of these: --workload all, the default);
%s (shell scripts, timed as a whole, run only when named; their output
in the sandbox must be the native one byte for byte).

Exit status: 0 ok, 2 usage error, 125 when a run fails.

Flags:
`

// benchFlags are the flags of "sentry bench".
type benchFlags struct {
	workloads string
	duration  time.Duration
	repeats   int
	threads   int
	json      bool
	cpu       int
	plot      string
	platforms string
	files     int
}

// benchMode is one way of running a workload.
type benchMode struct {
	name    string // native, stock, patched, strace, proot
	variant string // peers: pinned or unpinned; sandbox: the platform
	sandbox bool   // under "sentry run": works in benchGuestDir, has counters
	// ownTmp: another sandbox (runsc), whose /tmp is its own file system
	// in memory: it works in benchGuestDir too, but has no counters.
	ownTmp bool
	// argv is the command line that runs guest (the workload program and
	// its arguments); stats is the --stats-json file of a sandbox run.
	argv func(stats string, guest []string) []string
}

func (m benchMode) String() string {
	if m.variant != "" {
		return m.name + " " + m.variant
	}
	return m.name
}

// benchRun is one measured run.
type benchRun struct {
	Ops       int64   `json:"ops"`
	NS        int64   `json:"ns"`
	OpsPerSec float64 `json:"ops_per_sec"`
}

// benchModeResult is one mode's runs of one workload.
type benchModeResult struct {
	Command         []string   `json:"command"`
	MedianOpsPerSec float64    `json:"median_ops_per_sec"`
	Runs            []benchRun `json:"runs"`
	// Counters are the sandbox's per-path counters from the last run.
	Counters map[string]uint64 `json:"counters,omitempty"`
}

// benchPeerResult is a peer tool's runs, pinned and unpinned; Best names
// the one with the higher median, which is the one reported.
type benchPeerResult struct {
	Best            string                      `json:"best"`
	MedianOpsPerSec float64                     `json:"median_ops_per_sec"`
	Variants        map[string]*benchModeResult `json:"variants"`
}

// benchWorkloadResult is everything measured for one workload.
type benchWorkloadResult struct {
	Workload         string                      `json:"workload"`
	Native           *benchModeResult            `json:"native"`
	Stock            *benchModeResult            `json:"stock"`
	Patched          *benchModeResult            `json:"patched"`
	PatchedPerStock  float64                     `json:"patched_per_stock"`
	PatchedPerNative float64                     `json:"patched_per_native"`
	Peers            map[string]*benchPeerResult `json:"peers,omitempty"`
	// Stock and Patched are the first platform's runs; Platforms has
	// every platform's, by name.
	Platforms map[string]*benchPlatformResult `json:"platforms"`
}

// benchPlatformResult is the sandbox's runs of one workload on one
// platform.
type benchPlatformResult struct {
	Stock            *benchModeResult `json:"stock"`
	Patched          *benchModeResult `json:"patched"`
	PatchedPerStock  float64          `json:"patched_per_stock"`
	PatchedPerNative float64          `json:"patched_per_native"`
	// PatchedPerFloor is patched over the C floor of this platform, in
	// the floor's variant that matches the sentry's pinning (pinned with
	// --cpu >= 0, unpinned with -1); 0 when the floor was not measured.
	PatchedPerFloor float64 `json:"patched_per_floor,omitempty"`
	FloorVariant    string  `json:"floor_variant,omitempty"`
	// PatchedPerRunsc is patched over gVisor's runsc (systrap) floating
	// (unpinned), its best case on more than one CPU; 0 without runsc.
	PatchedPerRunsc float64 `json:"patched_per_runsc,omitempty"`
}

// benchReport is the --json document.
type benchReport struct {
	CPU        int      `json:"cpu"`
	PeerCPU    int      `json:"peer_cpu"`
	Threads    int      `json:"threads"`
	DurationNS int64    `json:"duration_ns"`
	Repeats    int      `json:"repeats"`
	Kernel     string   `json:"kernel"`
	NumCPU     int      `json:"num_cpu"`
	Peers      []string `json:"peers"`
	// Omitted says why a yardstick has no column (no gcc, no runsc on
	// PATH, more than one thread for the floor), by peer name.
	Omitted   map[string]string      `json:"omitted,omitempty"`
	Platforms []string               `json:"platforms"`
	Workloads []*benchWorkloadResult `json:"workloads"`
	Shell     []*benchShellResult    `json:"shell,omitempty"`
}

func benchMain(args []string) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var f benchFlags
	names := make([]string, len(benchWorkloads))
	for i, w := range benchWorkloads {
		names[i] = w.name
	}
	var shellNames []string
	for _, w := range benchShellWorkloads {
		shellNames = append(shellNames, w.name)
	}
	fs.StringVar(&f.workloads, "workload", "all", "comma-separated `LIST` of workloads to run, or all")
	fs.DurationVar(&f.duration, "duration", 500*time.Millisecond, "how long each run loops (the default keeps all workloads, both platforms and both peers under 2 minutes)")
	fs.IntVar(&f.repeats, "repeats", 3, "runs of each workload in each mode; the report shows medians")
	fs.IntVar(&f.threads, "threads", 1, "copies of the workload run in parallel, each on its own file (will-it-scale -t); ops are summed")
	fs.BoolVar(&f.json, "json", false, "print one JSON document with every number instead of tables")
	fs.StringVar(&f.plot, "plot", "", "also draw ops/s per workload and mode into `FILE` (.svg, .png or .pdf)")
	fs.StringVar(&f.platforms, "platform", "ptrace,unotify", "comma-separated `LIST` of sandbox platforms to measure (ptrace, unotify); the first fills the stock and patched columns, the others get columns of their own")
	fs.IntVar(&f.files, "files", 10000, "how many files the smallfiles workload makes")
	fs.IntVar(&f.cpu, "cpu", 0, "passed to \"sentry run --cpu\": the CPU the tracer and guest are pinned to; -1 leaves them unpinned. Peers' pinned runs use it too (CPU 0 when -1)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), benchUsage, strings.Join(names, ", "), strings.Join(shellNames, ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "sentry bench: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	workloads, err := parseWorkloads(f.workloads, names, shellNames)
	if err != nil {
		return usageErr("%v", err)
	}
	platforms, err := parsePlatforms(f.platforms)
	if err != nil {
		return usageErr("%v", err)
	}
	switch {
	case f.duration < time.Millisecond:
		return usageErr("--duration %v: want at least 1ms", f.duration)
	case f.repeats < 1:
		return usageErr("--repeats %d: want at least 1", f.repeats)
	case f.threads < 1 || f.threads > 1024:
		return usageErr("--threads %d: want 1 to 1024", f.threads)
	case f.cpu < -1:
		return usageErr("--cpu %d: want a CPU number or -1", f.cpu)
	case f.files < 1 || f.files > 1000000:
		return usageErr("--files %d: want 1 to 1000000", f.files)
	}
	if err := bench(&f, workloads, platforms); err != nil {
		fmt.Fprintf(os.Stderr, "sentry bench: %v\n", err)
		return exitSandbox
	}
	return 0
}

// parsePlatforms checks the --platform list.
func parsePlatforms(list string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if p != "ptrace" && p != "unotify" {
			return nil, fmt.Errorf("--platform: unknown platform %q (have ptrace, unotify)", p)
		}
		if !contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// parseWorkloads turns the --workload list into names, in report order;
// "all" is every loop, the shell workloads run only when named.
func parseWorkloads(list string, known, shell []string) ([]string, error) {
	if list == "all" {
		return known, nil
	}
	all := append(append([]string(nil), known...), shell...)
	want := map[string]bool{}
	for _, w := range strings.Split(list, ",") {
		w = strings.TrimSpace(w)
		if !contains(all, w) {
			return nil, fmt.Errorf("--workload: unknown workload %q (have %s)", w, strings.Join(all, ", "))
		}
		want[w] = true
	}
	var out []string
	for _, w := range all {
		if want[w] {
			out = append(out, w)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func bench(f *benchFlags, workloads, platforms []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the sentry binary: %w", err)
	}
	prog, err := buildWorkload()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "sentry-bench-")
	if err != nil {
		return fmt.Errorf("stats dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	peerCPU := f.cpu
	if peerCPU < 0 {
		peerCPU = 0
	}
	modes, peers, omitted := benchModes(self, f.cpu, peerCPU, platforms, f.threads)
	for _, name := range sortedKeys(omitted) {
		fmt.Fprintf(os.Stderr, "sentry bench: no %s column: %s\n", name, omitted[name])
	}
	rep := &benchReport{
		CPU:        f.cpu,
		PeerCPU:    peerCPU,
		Threads:    f.threads,
		DurationNS: f.duration.Nanoseconds(),
		Repeats:    f.repeats,
		Kernel:     kernelRelease(),
		NumCPU:     runtime.NumCPU(),
		Peers:      peers,
		Omitted:    omitted,
		Platforms:  platforms,
	}

	var loops, shells []string
	for _, w := range workloads {
		if contains(names(benchWorkloads), w) {
			loops = append(loops, w)
		} else {
			shells = append(shells, w)
		}
	}
	total := len(loops) * len(modes) * f.repeats
	est := time.Duration(total) * (f.duration + benchRunOverhead)
	if len(loops) > 0 {
		fmt.Fprintf(os.Stderr, "sentry bench: %d workloads x %d modes x %d repeats of %v: about %v\n",
			len(loops), len(modes), f.repeats, f.duration, est.Round(100*time.Millisecond))
	}
	progress := newProgress(os.Stderr)
	defer progress.done()

	for _, w := range loops {
		results := make([]*benchModeResult, len(modes))
		for r := 0; r < f.repeats; r++ {
			for i, m := range modes {
				progress.show("%-14s %-16s %d/%d", w, m, r+1, f.repeats)
				res, counters, argv, err := benchOnce(m, prog, w, tmp, f)
				if err != nil {
					return fmt.Errorf("%s (%s): %w", w, m, err)
				}
				if results[i] == nil {
					results[i] = &benchModeResult{Command: argv}
				}
				results[i].Runs = append(results[i].Runs, res)
				if counters != nil {
					results[i].Counters = counters
				}
			}
		}
		wr := &benchWorkloadResult{Workload: w, Platforms: map[string]*benchPlatformResult{}}
		for i, m := range modes {
			res := results[i]
			res.MedianOpsPerSec = medianRate(res.Runs)
			switch m.name {
			case "native":
				wr.Native = res
			case "stock", "patched":
				pr := wr.Platforms[m.variant]
				if pr == nil {
					pr = &benchPlatformResult{}
					wr.Platforms[m.variant] = pr
				}
				if m.name == "stock" {
					pr.Stock = res
				} else {
					pr.Patched = res
				}
			default:
				if wr.Peers == nil {
					wr.Peers = map[string]*benchPeerResult{}
				}
				p := wr.Peers[m.name]
				if p == nil {
					p = &benchPeerResult{Variants: map[string]*benchModeResult{}}
					wr.Peers[m.name] = p
				}
				p.Variants[m.variant] = res
				if res.MedianOpsPerSec > p.MedianOpsPerSec {
					p.Best, p.MedianOpsPerSec = m.variant, res.MedianOpsPerSec
				}
			}
		}
		for p, pr := range wr.Platforms {
			pr.PatchedPerStock = ratio(pr.Patched.MedianOpsPerSec, pr.Stock.MedianOpsPerSec)
			pr.PatchedPerNative = ratio(pr.Patched.MedianOpsPerSec, wr.Native.MedianOpsPerSec)
			if v, res := matchingVariant(wr.Peers["floor-"+p], f.cpu >= 0); res != nil {
				pr.FloorVariant = v
				pr.PatchedPerFloor = ratio(pr.Patched.MedianOpsPerSec, res.MedianOpsPerSec)
			}
			if _, res := matchingVariant(wr.Peers["runsc"], false); res != nil {
				pr.PatchedPerRunsc = ratio(pr.Patched.MedianOpsPerSec, res.MedianOpsPerSec)
			}
		}
		first := wr.Platforms[platforms[0]]
		wr.Stock, wr.Patched = first.Stock, first.Patched
		wr.PatchedPerStock, wr.PatchedPerNative = first.PatchedPerStock, first.PatchedPerNative
		rep.Workloads = append(rep.Workloads, wr)
	}
	for _, sw := range benchShellWorkloads {
		if !contains(shells, sw.name) {
			continue
		}
		sr, err := benchShell(f, sw.name, sw.script, shellModes(modes), tmp, progress)
		if err != nil {
			return err
		}
		rep.Shell = append(rep.Shell, sr)
	}
	progress.done()

	if f.plot != "" && len(rep.Workloads) > 0 {
		if err := plotBenchReport(rep, f.plot); err != nil {
			return err
		}
	}
	if f.json {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding the report: %w", err)
		}
		_, err = os.Stdout.Write(append(data, '\n'))
		return err
	}
	if len(rep.Workloads) > 0 {
		printBenchReport(os.Stdout, rep)
	}
	printShellReport(os.Stdout, rep)
	return nil
}

// names lists the names of workloads.
func names(ws []struct{ name, what string }) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.name
	}
	return out
}

// matchingVariant picks a peer's pinned or unpinned result, falling back to
// the other when only one was measured (no taskset).
func matchingVariant(p *benchPeerResult, pinned bool) (string, *benchModeResult) {
	if p == nil {
		return "", nil
	}
	want, other := "unpinned", "pinned"
	if pinned {
		want, other = other, want
	}
	if r := p.Variants[want]; r != nil {
		return want, r
	}
	return other, p.Variants[other]
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// benchModes lists the modes in the order each repeat runs them, the peer
// tools found, and why the yardsticks not measured are not.
func benchModes(self string, cpu, peerCPU int, platforms []string, threads int) ([]benchMode, []string, map[string]string) {
	sentryRun := func(platform string, extra ...string) func(string, []string) []string {
		return func(stats string, guest []string) []string {
			argv := []string{self, "run", "--platform", platform, "--cpu", strconv.Itoa(cpu), "--stats-json", stats}
			argv = append(argv, extra...)
			return append(append(argv, "--"), guest...)
		}
	}
	modes := []benchMode{
		{name: "native", argv: func(_ string, guest []string) []string { return guest }},
	}
	for _, p := range platforms {
		modes = append(modes,
			benchMode{name: "stock", variant: p, sandbox: true, argv: sentryRun(p, "--close-path", "deferred", "--fstatat-shortcut", "off")},
			benchMode{name: "patched", variant: p, sandbox: true, argv: sentryRun(p)})
	}

	var peers []string
	omitted := map[string]string{}
	taskset, _ := exec.LookPath("taskset")
	addPeer := func(name string, ownTmp bool, cmd []string) {
		peers = append(peers, name)
		if taskset != "" {
			pinned := append([]string{taskset, "-c", strconv.Itoa(peerCPU)}, cmd...)
			modes = append(modes, benchMode{name: name, variant: "pinned", ownTmp: ownTmp, argv: func(_ string, guest []string) []string {
				return append(append([]string(nil), pinned...), guest...)
			}})
		}
		modes = append(modes, benchMode{name: name, variant: "unpinned", ownTmp: ownTmp, argv: func(_ string, guest []string) []string {
			return append(append([]string(nil), cmd...), guest...)
		}})
	}
	// The C floor of each platform measured: the floor traces the
	// first process only, so it cannot run the forked copies of
	// --threads > 1.
	if threads > 1 {
		omitted["floor"] = fmt.Sprintf("the C floor traces one process, --threads %d forks %d", threads, threads)
	} else if floor, err := buildBenchC("floor", floorSrc); err != nil {
		omitted["floor"] = err.Error()
	} else {
		for _, p := range platforms {
			addPeer("floor-"+p, false, []string{floor, p})
		}
	}
	// gVisor's runsc as issue #16 measures it. Its /tmp is its own
	// (an overlay in the sandbox's memory), so it works there, as the
	// sentry does in its tmpfs.
	if runsc, err := exec.LookPath("runsc"); err == nil {
		addPeer("runsc", true, []string{runsc, "--network=none", "--platform=systrap", "do"})
	} else {
		omitted["runsc"] = "runsc is not on PATH"
	}
	if strace, err := exec.LookPath("strace"); err == nil {
		// strace traps what the sentry traps, so both pay for the same
		// stops and differ only in what a stop costs. "?name" lets an
		// strace older than a syscall (fchmodat2 in strace 6.1) skip it
		// instead of refusing to start; the loops never make such calls.
		names := trappedSyscallNames()
		for i, n := range names {
			names[i] = "?" + n
		}
		addPeer("strace", false, []string{strace, "-f", "--seccomp-bpf", "-qq", "-o", "/dev/null",
			"-e", "trace=" + strings.Join(names, ","), "--"})
	}
	if proot, err := exec.LookPath("proot"); err == nil {
		addPeer("proot", false, []string{proot}) // proot has no "--"; its options end at the program
	}
	return modes, peers, omitted
}

// trappedSyscallNames lists the syscalls the sentry's seccomp filter traps:
// those with a handler in the table.
func trappedSyscallNames() []string {
	var names []string
	for _, sc := range syscalls.NewTable() {
		if sc.Fn != nil {
			names = append(names, sc.Name)
		}
	}
	return names
}

// benchOnce runs workload w once in mode m, returning the measurement, the
// sandbox's counters (nil outside the sandbox) and the command line.
func benchOnce(m benchMode, prog, w, tmp string, f *benchFlags) (benchRun, map[string]uint64, []string, error) {
	dir := benchGuestDir
	if !m.sandbox && !m.ownTmp {
		// A fresh directory per run, so no run sees another's files.
		d, err := os.MkdirTemp(benchHostTmpfs, "sentry-bench-")
		if err != nil {
			return benchRun{}, nil, nil, fmt.Errorf("work dir on the kernel tmpfs: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	stats := filepath.Join(tmp, "stats.json")
	os.Remove(stats)
	guest := []string{prog, w, dir, strconv.FormatInt(f.duration.Nanoseconds(), 10), strconv.Itoa(f.threads)}
	argv := m.argv(stats, guest)

	// A hung run must not hang the benchmark: allow for the slowest
	// tracer's start-up, then kill it (the sentry's EXITKILL takes the
	// guest with it).
	ctx, cancel := context.WithTimeout(context.Background(), 10*f.duration+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %v", 10*f.duration+30*time.Second)
		}
		return benchRun{}, nil, argv, fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	var res benchRun
	out := strings.TrimSpace(stdout.String())
	if _, err := fmt.Sscanf(lastLine(out), "ops %d ns %d", &res.Ops, &res.NS); err != nil || res.NS <= 0 {
		return benchRun{}, nil, argv, fmt.Errorf("%s: output %q is not \"ops N ns M\"\n%s", strings.Join(argv, " "), out, strings.TrimSpace(stderr.String()))
	}
	res.OpsPerSec = float64(res.Ops) * 1e9 / float64(res.NS)
	if !m.sandbox {
		return res, nil, argv, nil
	}
	counters, err := readBenchCounters(stats)
	if err != nil {
		return benchRun{}, nil, argv, err
	}
	return res, counters, argv, nil
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// readBenchCounters picks the per-path counters out of a --stats-json file;
// a counter the sentry did not report is 0.
func readBenchCounters(path string) (map[string]uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --stats-json: %w", err)
	}
	var st statsReport
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("parsing --stats-json %s: %w", path, err)
	}
	out := make(map[string]uint64, len(benchCounters))
	for _, c := range benchCounters {
		out[c] = st.Counters[c]
	}
	return out, nil
}

func medianRate(runs []benchRun) float64 {
	rates := make([]float64, len(runs))
	for i, r := range runs {
		rates[i] = r.OpsPerSec
	}
	sort.Float64s(rates)
	n := len(rates)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return rates[n/2]
	}
	return (rates[n/2-1] + rates[n/2]) / 2
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// buildWorkload compiles the embedded workload.c into the cache, once per
// version of the source and flags, and returns the binary's path.
func buildWorkload() (string, error) {
	bin, err := buildBenchC("workload", workloadSrc)
	if err != nil {
		return "", fmt.Errorf("the workloads are C: %w", err)
	}
	return bin, nil
}

// buildBenchC compiles the C program src (named name in the cache) with
// benchCFlags, once per version of the source and flags, and returns the
// binary's path.
func buildBenchC(name string, src []byte) (string, error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("%s needs gcc: %w", name, err)
	}
	h := sha256.New()
	h.Write(src)
	for _, fl := range benchCFlags {
		h.Write([]byte{0})
		h.Write([]byte(fl))
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]
	dir, err := benchCacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name+"-"+key)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	srcFile := bin + ".c"
	if err := os.WriteFile(srcFile, src, 0o644); err != nil {
		return "", fmt.Errorf("writing the %s source: %w", name, err)
	}
	// Build under a private name and rename, so a concurrent bench never
	// runs a half-written binary.
	tmpBin := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	args := append(append([]string(nil), benchCFlags...), "-o", tmpBin, srcFile)
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		os.Remove(tmpBin)
		return "", fmt.Errorf("gcc %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	if err := os.Rename(tmpBin, bin); err != nil {
		os.Remove(tmpBin)
		return "", fmt.Errorf("installing the %s binary: %w", name, err)
	}
	return bin, nil
}

// benchCacheDir finds a writable cache directory the guest can execute
// from. A directory under /tmp will not do: in the sandbox /tmp is the
// sentry's empty tmpfs, so the guest would not find the program there.
func benchCacheDir() (string, error) {
	var candidates []string
	if d, err := os.UserCacheDir(); err == nil {
		candidates = append(candidates, filepath.Join(d, "sentry-bench"))
	}
	candidates = append(candidates, "/var/cache/sentry-bench",
		filepath.Join(benchHostTmpfs, fmt.Sprintf("sentry-bench-cache-%d", os.Getuid())))
	var errs []error
	for _, d := range candidates {
		if d == "/tmp" || strings.HasPrefix(d, "/tmp/") {
			errs = append(errs, fmt.Errorf("%s: under /tmp, hidden from the guest by the sandbox's tmpfs", d))
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := unix.Access(d, unix.W_OK|unix.X_OK); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
			continue
		}
		return d, nil
	}
	return "", fmt.Errorf("no usable cache directory for the workload binary: %w", errors.Join(errs...))
}

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// progress is the one-line status on stderr: rewritten in place on a
// terminal, a line per step otherwise (a log then shows where a run hung).
type progress struct {
	w     io.Writer
	tty   bool
	shown bool
}

func newProgress(f *os.File) *progress {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return &progress{w: f, tty: err == nil}
}

func (p *progress) show(format string, a ...any) {
	line := "sentry bench: " + fmt.Sprintf(format, a...)
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.shown = true
}

func (p *progress) done() {
	if p.tty && p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	p.shown = false
}

// printBenchReport writes the tables: rates and ratios, then the sandbox's
// per-path counters, which show the rates came from the paths they claim.
func printBenchReport(w io.Writer, rep *benchReport) {
	pin := fmt.Sprintf("sentry run --cpu %d", rep.CPU)
	if rep.CPU < 0 {
		pin = "sentry run --cpu -1 (unpinned)"
	}
	fmt.Fprintf(w, "sentry bench: %s; peers pinned with taskset -c %d; %d thread(s); %v per run; median of %d; kernel %s, %d CPUs\n\n",
		pin, rep.PeerCPU, rep.Threads, time.Duration(rep.DurationNS), rep.Repeats, rep.Kernel, rep.NumCPU)

	hdr := []string{"workload", "native ops/s", "stock ops/s", "patched ops/s", "patched/stock", "patched/native"}
	primary := "ptrace"
	if len(rep.Platforms) > 0 {
		primary = rep.Platforms[0]
		hdr[2], hdr[3] = primary+" stock", primary+" patched"
		for _, p := range rep.Platforms[1:] {
			hdr = append(hdr, p+" stock", p+" patched", p+" patched/stock", p+" patched/native", p+"/"+primary+" patched")
		}
	}
	hdr = append(hdr, "strace ops/s", "proot ops/s")
	rows := [][]string{hdr}
	for _, wr := range rep.Workloads {
		row := []string{wr.Workload,
			fmtRate(wr.Native.MedianOpsPerSec), fmtRate(wr.Stock.MedianOpsPerSec), fmtRate(wr.Patched.MedianOpsPerSec),
			fmt.Sprintf("%.2fx", wr.PatchedPerStock), fmt.Sprintf("%.3fx", wr.PatchedPerNative)}
		if len(rep.Platforms) > 1 {
			for _, p := range rep.Platforms[1:] {
				pr := wr.Platforms[p]
				row = append(row, fmtRate(pr.Stock.MedianOpsPerSec), fmtRate(pr.Patched.MedianOpsPerSec),
					fmt.Sprintf("%.2fx", pr.PatchedPerStock), fmt.Sprintf("%.3fx", pr.PatchedPerNative),
					fmt.Sprintf("%.2fx", ratio(pr.Patched.MedianOpsPerSec, wr.Patched.MedianOpsPerSec)))
			}
		}
		for _, peer := range []string{"strace", "proot"} {
			if p := wr.Peers[peer]; p != nil {
				row = append(row, fmt.Sprintf("%s (%s)", fmtRate(p.MedianOpsPerSec), p.Best))
			} else {
				row = append(row, "not installed")
			}
		}
		rows = append(rows, row)
	}
	printTable(w, rows)
	printYardsticks(w, rep)

	fmt.Fprintf(w, "\ncounters of the last run (%d thread(s) x %v):\n\n", rep.Threads, time.Duration(rep.DurationNS))
	rows = [][]string{append([]string{"workload", "mode"}, benchCounters...)}
	for _, wr := range rep.Workloads {
		plats := rep.Platforms
		if len(plats) == 0 {
			plats = []string{primary}
		}
		for _, p := range plats {
			pr := wr.Platforms[p]
			if pr == nil {
				pr = &benchPlatformResult{Stock: wr.Stock, Patched: wr.Patched}
			}
			for _, m := range []struct {
				name string
				res  *benchModeResult
			}{{p + " stock", pr.Stock}, {p + " patched", pr.Patched}} {
				row := []string{wr.Workload, m.name}
				for _, c := range benchCounters {
					row = append(row, strconv.FormatUint(m.res.Counters[c], 10))
				}
				rows = append(rows, row)
			}
		}
	}
	printTable(w, rows)
}

// printYardsticks writes the table of issue #16: each platform against its
// C floor and against gVisor's runsc, pinned / floating, ratios to native.
// A yardstick not measured is left out, as the notes above the tables say.
func printYardsticks(w io.Writer, rep *benchReport) {
	have := func(name string) bool { return contains(rep.Peers, name) }
	hdr := []string{"workload", "native ops/s"}
	for _, p := range rep.Platforms {
		hdr = append(hdr, p+" ops/s", p+"/native")
		if have("floor-" + p) {
			hdr = append(hdr, "floor "+p+" pinned / floating", "floor "+p+"/native", p+"/floor")
		}
	}
	if have("runsc") {
		hdr = append(hdr, "runsc pinned / floating", "runsc/native")
		for _, p := range rep.Platforms {
			hdr = append(hdr, p+"/runsc floating")
		}
	}
	if len(hdr) == 2+2*len(rep.Platforms) {
		return // neither floor nor runsc: the table above says it all
	}
	variants := func(p *benchPeerResult) string {
		cell := func(v string) string {
			if r := p.Variants[v]; r != nil {
				return fmtRate(r.MedianOpsPerSec)
			}
			return "-"
		}
		return cell("pinned") + " / " + cell("unpinned")
	}
	rows := [][]string{hdr}
	for _, wr := range rep.Workloads {
		native := wr.Native.MedianOpsPerSec
		row := []string{wr.Workload, fmtRate(native)}
		for _, p := range rep.Platforms {
			pr := wr.Platforms[p]
			row = append(row, fmtRate(pr.Patched.MedianOpsPerSec), fmt.Sprintf("%.3fx", pr.PatchedPerNative))
			if fl := wr.Peers["floor-"+p]; fl != nil {
				_, res := matchingVariant(fl, rep.CPU >= 0)
				row = append(row, variants(fl), fmt.Sprintf("%.3fx", ratio(res.MedianOpsPerSec, native)),
					fmt.Sprintf("%.2fx", pr.PatchedPerFloor))
			}
		}
		if rs := wr.Peers["runsc"]; rs != nil {
			_, res := matchingVariant(rs, false)
			row = append(row, variants(rs), fmt.Sprintf("%.3fx", ratio(res.MedianOpsPerSec, native)))
			for _, p := range rep.Platforms {
				row = append(row, fmt.Sprintf("%.2fx", wr.Platforms[p].PatchedPerRunsc))
			}
		}
		rows = append(rows, row)
	}
	fmt.Fprintf(w, "\nagainst the yardsticks (sentry patched; p/floor: the floor %s, as the sentry runs; runsc floating: unpinned):\n\n",
		map[bool]string{true: "pinned", false: "unpinned"}[rep.CPU >= 0])
	printTable(w, rows)
}

// printTable writes rows as a Markdown table, columns padded to line up;
// the first row is the header.
func printTable(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range cells {
			if i == 0 {
				fmt.Fprintf(&b, " %-*s |", widths[i], c)
			} else {
				fmt.Fprintf(&b, " %*s |", widths[i], c)
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	sep := make([]string, len(widths))
	for i, wd := range widths {
		sep[i] = strings.Repeat("-", wd)
		if i > 0 {
			sep[i] = sep[i][:wd-1] + ":"
		}
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
}

// fmtRate prints ops/s with three significant digits and a k or M suffix.
func fmtRate(r float64) string {
	switch {
	case r >= 1e6:
		return strconv.FormatFloat(r/1e6, 'f', digitsAfter(r/1e6), 64) + " M"
	case r >= 1e3:
		return strconv.FormatFloat(r/1e3, 'f', digitsAfter(r/1e3), 64) + " k"
	default:
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
}

func digitsAfter(v float64) int {
	switch {
	case v >= 100:
		return 0
	case v >= 10:
		return 1
	default:
		return 2
	}
}
