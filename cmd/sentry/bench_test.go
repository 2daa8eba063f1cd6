package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBench runs a short "sentry bench" and checks that every mode measured
// something and that each sandbox mode took the paths it claims to measure.
// It asserts nothing about speed: this machine is too noisy for that.
func TestBench(t *testing.T) {
	r := runCmd(t, "", sentryBin, "bench", "--workload", "open1,fstat,fstatat_empty",
		"--duration", "100ms", "--repeats", "1", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("parsing --json output: %v\n%s", err, r.stdout)
	}
	if rep.Repeats != 1 || rep.Threads != 1 || rep.CPU != 0 || rep.DurationNS != 100e6 {
		t.Errorf("settings: repeats %d threads %d cpu %d duration %dns, want 1, 1, 0, 100ms",
			rep.Repeats, rep.Threads, rep.CPU, rep.DurationNS)
	}
	byName := map[string]*benchWorkloadResult{}
	for _, w := range rep.Workloads {
		byName[w.Workload] = w
	}
	for _, name := range []string{"open1", "fstat", "fstatat_empty"} {
		w := byName[name]
		if w == nil {
			t.Fatalf("no result for workload %s", name)
		}
		modes := map[string]*benchModeResult{"native": w.Native, "stock": w.Stock, "patched": w.Patched}
		for peer, p := range w.Peers {
			for v, res := range p.Variants {
				modes[peer+" "+v] = res
			}
			if p.Variants[p.Best] == nil {
				t.Errorf("%s: %s: best variant %q was not measured", name, peer, p.Best)
			}
		}
		for mode, res := range modes {
			if res == nil {
				t.Errorf("%s: no %s result", name, mode)
				continue
			}
			if len(res.Runs) != 1 {
				t.Errorf("%s %s: %d runs, want 1", name, mode, len(res.Runs))
			}
			for _, run := range res.Runs {
				if run.Ops <= 0 || run.NS <= 0 || run.OpsPerSec <= 0 {
					t.Errorf("%s %s: run %+v, want positive ops, ns and ops/s", name, mode, run)
				}
			}
			if res.MedianOpsPerSec <= 0 {
				t.Errorf("%s %s: median %v ops/s", name, mode, res.MedianOpsPerSec)
			}
		}
		if w.PatchedPerStock <= 0 || w.PatchedPerNative <= 0 {
			t.Errorf("%s: ratios patched/stock %v, patched/native %v, want positive", name, w.PatchedPerStock, w.PatchedPerNative)
		}
		if w.Native != nil && w.Native.Counters != nil {
			t.Errorf("%s: native run has counters %v", name, w.Native.Counters)
		}
	}

	// The yardsticks: the C floor of each platform (gcc is here: the
	// workloads need it too) with its ratio, and runsc exactly when it is
	// on PATH, else a reason.
	for _, p := range rep.Platforms {
		if !contains(rep.Peers, "floor-"+p) {
			t.Errorf("no floor-%s column (omitted: %q)", p, rep.Omitted["floor"])
		}
		for _, w := range rep.Workloads {
			if pr := w.Platforms[p]; pr.PatchedPerFloor <= 0 || pr.FloorVariant != "pinned" {
				t.Errorf("%s %s: patched/floor %v against the %q floor, want > 0 against the pinned one",
					w.Workload, p, pr.PatchedPerFloor, pr.FloorVariant)
			}
		}
	}
	if _, err := exec.LookPath("runsc"); err != nil {
		if contains(rep.Peers, "runsc") || rep.Omitted["runsc"] == "" {
			t.Errorf("runsc is not on PATH, but peers %v, omitted %v", rep.Peers, rep.Omitted)
		}
		if !strings.Contains(r.stderr, "no runsc column") {
			t.Errorf("stderr does not say why runsc is left out:\n%s", r.stderr)
		}
	} else if !contains(rep.Peers, "runsc") {
		t.Errorf("runsc is on PATH but not measured: omitted %v", rep.Omitted)
	}

	counters := func(w, mode string) map[string]uint64 {
		t.Helper()
		res := map[string]*benchModeResult{"stock": byName[w].Stock, "patched": byName[w].Patched}[mode]
		if res == nil || res.Counters == nil {
			t.Fatalf("%s %s: no counters", w, mode)
		}
		return res.Counters
	}
	// open1: the patched close releases in the handler, the stock one
	// through task work, one task-work run per deferred close.
	if c := counters("open1", "patched"); c["close.sync"] == 0 || c["close.deferred"] != 0 {
		t.Errorf("open1 patched: close.sync %d close.deferred %d, want >0 and 0", c["close.sync"], c["close.deferred"])
	}
	if c := counters("open1", "stock"); c["close.deferred"] == 0 || c["close.sync"] != 0 || c["taskwork.run"] != c["close.deferred"] {
		t.Errorf("open1 stock: close.deferred %d close.sync %d taskwork.run %d, want >0, 0 and equal to close.deferred",
			c["close.deferred"], c["close.sync"], c["taskwork.run"])
	}
	// fstat is served directly in both modes.
	for _, mode := range []string{"stock", "patched"} {
		if c := counters("fstat", mode); c["fstat"] == 0 {
			t.Errorf("fstat %s: fstat counter 0", mode)
		}
	}
	// fstatat_empty: the shortcut in patched, a path walk in stock.
	if c := counters("fstatat_empty", "patched"); c["newfstatat.empty_path_shortcut"] == 0 {
		t.Errorf("fstatat_empty patched: newfstatat.empty_path_shortcut 0")
	}
	if c := counters("fstatat_empty", "stock"); c["newfstatat.lookup"] == 0 || c["newfstatat.empty_path_shortcut"] != 0 {
		t.Errorf("fstatat_empty stock: newfstatat.lookup %d empty_path_shortcut %d, want >0 and 0",
			c["newfstatat.lookup"], c["newfstatat.empty_path_shortcut"])
	}
}

// TestBenchErrors checks the exit codes of a bad command line (2) and of a
// failing run (125, naming the workload, the mode and the run's error).
func TestBenchErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--workload", "nosuch"},
		{"--repeats", "0"},
		{"--threads", "0"},
		{"--duration", "0s"},
		{"--cpu", "-2"},
		{"--files", "0"},
		{"--workload", "fstat,nosuch"},
		{"extra"},
	} {
		r := runCmd(t, "", append([]string{sentryBin, "bench"}, args...)...)
		if r.code != exitUsage {
			t.Errorf("bench %v: exit %d, want %d (stderr %q)", args, r.code, exitUsage, r.stderr)
		}
	}
	// No machine has CPU 4095, so "sentry run --cpu 4095" fails to pin;
	// native runs first and succeeds, so the failure is the stock run's.
	r := runCmd(t, "", sentryBin, "bench", "--workload", "fstat", "--duration", "10ms", "--repeats", "1", "--cpu", "4095")
	if r.code != exitSandbox {
		t.Fatalf("bench --cpu 4095: exit %d, want %d (stderr %q)", r.code, exitSandbox, r.stderr)
	}
	if !strings.Contains(r.stderr, "fstat (stock ptrace)") || !strings.Contains(r.stderr, "4095") {
		t.Errorf("bench --cpu 4095: stderr %q does not name the workload, mode and error", r.stderr)
	}
}

// TestBenchPlot draws the report into an SVG file.
func TestBenchPlot(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.svg")
	r := runCmd(t, "", sentryBin, "bench", "--workload", "getppid", "--duration", "50ms", "--repeats", "1", "--plot", out)
	if r.code != 0 {
		t.Fatalf("bench --plot exited %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "<svg") || !strings.Contains(string(data), "getppid") {
		t.Fatalf("not an SVG of the report: %.200s", data)
	}
}

// TestBenchYardsticks checks the runsc and floor columns appear when their
// tools are there and are left out, with a reason, when not: a stand-in
// runsc on PATH (it runs the program as "runsc ... do" would, without a
// sandbox) gets a column with its ratios; --threads 2 leaves out the
// floor, which traces a single process.
func TestBenchYardsticks(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\nwhile [ \"$1\" != do ]; do shift; done\nshift\nexec \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "runsc"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	r := runCmd(t, "", sentryBin, "bench", "--workload", "fstat", "--platform", "unotify",
		"--duration", "50ms", "--repeats", "1", "--threads", "2")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"runsc pinned / floating", "runsc/native", "unotify/runsc floating"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q column with a runsc on PATH:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "floor unotify") || !strings.Contains(r.stderr, "no floor column") {
		t.Errorf("--threads 2: the floor must be left out with a reason\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "no runsc column") {
		t.Errorf("runsc on PATH, yet stderr says it is left out:\n%s", r.stderr)
	}
}

// BenchmarkLoops is "sentry bench" for "go test -bench": each loop natively,
// under the sentry on each platform (patched, pinned to CPU 0) and under the
// C floor of each platform (pinned), one 200ms run per iteration. ns/op is
// the guest's time per loop operation and ops/s its rate, averaged over
// the iterations (the wall time of an iteration is the run's set duration,
// so the default ns/op would say nothing).
func BenchmarkLoops(b *testing.B) {
	prog, err := buildWorkload()
	if err != nil {
		b.Skip(err)
	}
	modes, _, _ := benchModes(sentryBin, 0, 0, []string{"ptrace", "unotify"}, 1)
	f := &benchFlags{duration: 200 * time.Millisecond, threads: 1}
	for _, w := range []string{"open1", "fstat", "fstatat_empty", "stat", "getppid"} {
		for _, m := range modes {
			name := m.name
			switch {
			case m.name == "native":
			case m.name == "patched", strings.HasPrefix(m.name, "floor-") && m.variant == "pinned":
				name += "-" + m.variant
			default:
				continue
			}
			b.Run(w+"/"+name, func(b *testing.B) {
				var ops, ns int64
				for i := 0; i < b.N; i++ {
					res, _, _, err := benchOnce(m, prog, w, b.TempDir(), f)
					if err != nil {
						b.Fatal(err)
					}
					ops += res.Ops
					ns += res.NS
				}
				b.ReportMetric(float64(ns)/float64(ops), "ns/op")
				b.ReportMetric(float64(ops)*1e9/float64(ns), "ops/s")
			})
		}
	}
}

// TestBenchSmallfiles runs the small-file shell workload with few files
// natively and on both platforms and checks every run printed the same
// bytes (each run's hash, not only bench's own check) and that the script
// got to its end with the trees equal.
func TestBenchSmallfiles(t *testing.T) {
	r := runCmd(t, "", sentryBin, "bench", "--workload", "smallfiles", "--files", "250", "--repeats", "2", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("parsing --json output: %v\n%s", err, r.stdout)
	}
	if len(rep.Shell) != 1 || rep.Shell[0].Workload != "smallfiles" || rep.Shell[0].Files != 250 {
		t.Fatalf("shell results %+v, want smallfiles with 250 files", rep.Shell)
	}
	sr := rep.Shell[0]
	for _, want := range []string{"\nsame\n", "\ndone\n"} {
		if !strings.Contains(sr.Output, want) {
			t.Errorf("output lacks %q:\n%s", want, sr.Output)
		}
	}
	sum := sha256.Sum256([]byte(sr.Output))
	want := hex.EncodeToString(sum[:])
	for _, mode := range []string{"native", "ptrace", "unotify"} {
		tr := sr.Modes[mode]
		if tr == nil {
			t.Errorf("no %s runs", mode)
			continue
		}
		if len(tr.RunsNS) != 2 || len(tr.OutputSHA256) != 2 || tr.MedianNS <= 0 || tr.PerNative <= 0 {
			t.Errorf("%s: runs %v, hashes %v, median %d, per native %v", mode, tr.RunsNS, tr.OutputSHA256, tr.MedianNS, tr.PerNative)
		}
		for i, h := range tr.OutputSHA256 {
			if h != want {
				t.Errorf("%s run %d printed other bytes than native (sha256 %s, native %s)", mode, i, h, want)
			}
		}
		for _, p := range []string{"create", "find-xargs-sort", "cp-a", "mv", "compare", "rm-rf"} {
			if tr.PhasesNS[p] <= 0 {
				t.Errorf("%s: phase %s took %dns", mode, p, tr.PhasesNS[p])
			}
		}
	}
}

// TestBenchSmallfilesPeerDiffers: a peer (runsc) whose output is not
// native's is reported with its first differing line and timed, not the
// end of the whole bench: gVisor's tmpfs gives directories other sizes,
// which the workload prints. The fake runsc runs the script natively, on a
// /tmp of its own, and changes its first line.
func TestBenchSmallfilesPeerDiffers(t *testing.T) {
	bin := t.TempDir()
	fake := `#!/bin/sh
while [ "$1" != do ]; do shift; done
shift
unshare -m sh -c 'mount -t tmpfs none /tmp && exec "$@"' sh "$@" > "$0.out" || exit $?
sed '1s/^/other /' "$0.out"
`
	if err := os.WriteFile(filepath.Join(bin, "runsc"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	args := []string{"bench", "--workload", "smallfiles", "--files", "30", "--repeats", "1", "--platform", "unotify"}
	r := runCmd(t, "", append([]string{sentryBin}, append(args, "--json")...)...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("parsing --json output: %v\n%s", err, r.stdout)
	}
	sr := rep.Shell[0]
	rs, un := sr.Modes["runsc"], sr.Modes["unotify"]
	if rs == nil || un == nil {
		t.Fatalf("modes %v, want runsc and unotify", sr.Order)
	}
	if !strings.HasPrefix(rs.Differs, "line 1:") || !strings.Contains(rs.Differs, "other ") || len(rs.RunsNS) != 1 || rs.MedianNS <= 0 {
		t.Errorf("runsc: differs %q, runs %v", rs.Differs, rs.RunsNS)
	}
	if un.Differs != "" {
		t.Errorf("the sandbox's output is native's, yet differs %q", un.Differs)
	}
	r = runCmd(t, "", append([]string{sentryBin}, args...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "runsc's output differs from native's") || !strings.Contains(r.stdout, "the sandbox's output identical to native's") {
		t.Errorf("exit %d; the table must say runsc's output differs:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
