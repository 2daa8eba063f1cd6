package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// smallfilesScript is the 10k-small-file shell workload of issue #16: a
// tree of small files made by the shell itself (a redirect is an
// open/write/close, no fork), then the tools a build or a backup runs on
// such a tree. $1 is the number of files, $2 the directory to work in.
// Everything on stdout depends only on what the file system did, with
// relative paths, so a run in the sandbox must print exactly what the
// native one prints. Each phase's end goes to stderr as "smallfiles-phase
// NAME NS" (date +%s%N: two forks per phase, the same everywhere).
const smallfilesScript = `set -eu
n=$1
cd "$2"
mark() { echo "smallfiles-phase $1 $(date +%s%N)" >&2; }
mark start
mkdir src
i=0
while [ $i -lt $n ]; do
	d=src/d$((i / 1000))/e$((i / 100 % 10))
	if [ $((i % 100)) -eq 0 ]; then mkdir -p $d; fi
	echo "file $i of $n" >$d/f$i
	i=$((i + 1))
done
mark create
find src -type f | sort | xargs cat | cksum
find src -type f -name 'f*7' | xargs wc -c | sort -n | tail -n 2
mark find-xargs-sort
cp -a src copy
mark cp-a
mv copy moved
mark mv
find moved -printf '%P %y %s %n %m\n' | sort | cksum
find moved -type f | sort | xargs cat | cksum
diff -r src moved && echo same
mark compare
rm -rf src moved
ls -A
echo done
mark rm-rf
`

// benchShellWorkloads are the workloads that are shell scripts, run once
// per repeat and timed as a whole: they are run only when named (not by
// --workload all), being long.
var benchShellWorkloads = []struct{ name, what, script string }{
	{"smallfiles", "--files small files in a tree: create, find | sort | xargs, cp -a, mv, rm -rf", smallfilesScript},
}

// benchShellResult is everything measured for one shell workload.
type benchShellResult struct {
	Workload string `json:"workload"`
	Files    int    `json:"files"`
	// Output is what every run printed: the native run's, which each
	// other run's matched byte for byte.
	Output string                      `json:"output"`
	Modes  map[string]*benchTimeResult `json:"modes"`
	// Order is the modes in report order: native, the platforms, peers.
	Order []string `json:"order"`
}

// benchTimeResult is one mode's runs of a shell workload.
type benchTimeResult struct {
	Command  []string `json:"command"`
	RunsNS   []int64  `json:"runs_ns"`
	MedianNS int64    `json:"median_ns"`
	// PhasesNS are the median time of each phase of the script, by name.
	PhasesNS map[string]int64 `json:"phases_ns"`
	// PerNative is the median time over native's: 2 is twice as slow.
	PerNative float64 `json:"per_native"`
	// Counters are the sandbox's per-path counters of the last run.
	Counters map[string]uint64 `json:"counters,omitempty"`
	// OutputSHA256 is the hash of every run's stdout, in run order.
	OutputSHA256 []string `json:"output_sha256"`
	// Differs is, for a peer (runsc), the first line where a run's
	// output was not native's: another sandbox's file system is its own
	// (gVisor's tmpfs sizes a directory by its entries, not as Linux's),
	// which the report says; the sentry's own must match, or the run fails.
	Differs string `json:"differs,omitempty"`
}

// shellModes picks the modes a shell workload runs in: native, the
// sentry's default (patched) on each platform, and runsc, floating, when
// present. The C floor cannot run it (it traces one process) and strace
// and proot measure trapping, which the loops show.
func shellModes(modes []benchMode) []benchMode {
	var out []benchMode
	for _, m := range modes {
		if m.name == "native" || m.name == "patched" || (m.name == "runsc" && m.variant == "unpinned") {
			out = append(out, m)
		}
	}
	return out
}

func shellModeName(m benchMode) string {
	if m.name == "patched" {
		return m.variant
	}
	return m.name
}

// benchShell runs shell workload w (script) in each mode, repeats times,
// interleaved, and checks that every run printed what the first native run
// did.
func benchShell(f *benchFlags, w, script string, modes []benchMode, tmp string, progress *progress) (*benchShellResult, error) {
	res := &benchShellResult{Workload: w, Files: f.files, Modes: map[string]*benchTimeResult{}}
	phases := map[string]map[string][]int64{}
	for r := 0; r < f.repeats; r++ {
		for _, m := range modes {
			name := shellModeName(m)
			progress.show("%-14s %-16s %d/%d", w, name, r+1, f.repeats)
			out, ns, ph, counters, argv, err := shellOnce(m, script, tmp, f)
			if err != nil {
				return nil, fmt.Errorf("%s (%s): %w", w, name, err)
			}
			differs := ""
			if res.Output == "" {
				res.Output = out // the first run is native's
			} else if out != res.Output {
				if m.sandbox || m.name == "native" {
					return nil, fmt.Errorf("%s (%s): output differs from native's:\n%s", w, name, firstDifference(res.Output, out))
				}
				differs = firstDifference(res.Output, out)
			}
			tr := res.Modes[name]
			if tr == nil {
				tr = &benchTimeResult{Command: argv, PhasesNS: map[string]int64{}}
				res.Modes[name] = tr
				res.Order = append(res.Order, name)
				phases[name] = map[string][]int64{}
			}
			if differs != "" && tr.Differs == "" {
				tr.Differs = differs
			}
			tr.RunsNS = append(tr.RunsNS, ns)
			sum := sha256.Sum256([]byte(out))
			tr.OutputSHA256 = append(tr.OutputSHA256, hex.EncodeToString(sum[:]))
			for p, d := range ph {
				phases[name][p] = append(phases[name][p], d)
			}
			if counters != nil {
				tr.Counters = counters
			}
		}
	}
	for name, tr := range res.Modes {
		tr.MedianNS = medianNS(tr.RunsNS)
		for p, ds := range phases[name] {
			tr.PhasesNS[p] = medianNS(ds)
		}
	}
	native := res.Modes["native"].MedianNS
	for _, tr := range res.Modes {
		tr.PerNative = ratio(float64(tr.MedianNS), float64(native))
	}
	return res, nil
}

// shellOnce runs script once in mode m: its stdout, the time from its
// first mark to its last, each phase's time, the sandbox's counters and
// the command line.
func shellOnce(m benchMode, script, tmp string, f *benchFlags) (string, int64, map[string]int64, map[string]uint64, []string, error) {
	dir := benchGuestDir
	if !m.sandbox && !m.ownTmp {
		d, err := os.MkdirTemp(benchHostTmpfs, "sentry-bench-")
		if err != nil {
			return "", 0, nil, nil, nil, fmt.Errorf("work dir on the kernel tmpfs: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	stats := filepath.Join(tmp, "stats.json")
	os.Remove(stats)
	// The sandboxed shell makes its directory: /tmp/bench is not there yet.
	guest := []string{"/bin/sh", "-c", "mkdir -p \"$2\" && " + script, "sh", strconv.Itoa(f.files), dir}
	argv := m.argv(stats, guest)
	limit := time.Duration(f.files)*10*time.Millisecond + time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	shown := append([]string(nil), argv...)
	shown[len(argv)-len(guest)+2] = "SCRIPT"
	cmdline := strings.Join(shown, " ")
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %v", limit)
		}
		return "", 0, nil, nil, argv, fmt.Errorf("%s: %w\n%s", cmdline, err, lastLines(stderr.String(), 20))
	}
	var marks []string
	var times []int64
	for _, line := range strings.Split(stderr.String(), "\n") {
		var name string
		var t int64
		if _, err := fmt.Sscanf(line, "smallfiles-phase %s %d", &name, &t); err == nil {
			marks, times = append(marks, name), append(times, t)
		}
	}
	if len(marks) < 2 || marks[0] != "start" {
		return "", 0, nil, nil, argv, fmt.Errorf("%s: no phase marks on stderr:\n%s", cmdline, lastLines(stderr.String(), 20))
	}
	ph := map[string]int64{}
	for i := 1; i < len(marks); i++ {
		ph[marks[i]] = times[i] - times[i-1]
	}
	total := times[len(times)-1] - times[0]
	if !m.sandbox {
		return stdout.String(), total, ph, nil, argv, nil
	}
	counters, err := readBenchCounters(stats)
	if err != nil {
		return "", 0, nil, nil, argv, err
	}
	return stdout.String(), total, ph, counters, argv, nil
}

func medianNS(v []int64) int64 {
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// firstDifference shows the first line where got differs from want.
func firstDifference(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d: native %q, here %q", i+1, w, g)
		}
	}
	return "(same lines, different bytes)"
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// printShellReport writes each shell workload's times and ratios to
// native, then the phases.
func printShellReport(w io.Writer, rep *benchReport) {
	for _, sr := range rep.Shell {
		same := "output identical in every mode"
		for _, name := range sr.Order {
			if sr.Modes[name].Differs != "" {
				same = "the sandbox's output identical to native's"
			}
		}
		fmt.Fprintf(w, "\n%s (%d files; %s; median of %d):\n\n", sr.Workload, sr.Files, same, rep.Repeats)
		var phaseNames []string
		for _, p := range []string{"create", "find-xargs-sort", "cp-a", "mv", "compare", "rm-rf"} {
			if _, ok := sr.Modes["native"].PhasesNS[p]; ok {
				phaseNames = append(phaseNames, p)
			}
		}
		hdr := []string{"mode", "time", "/native"}
		for _, p := range phaseNames {
			hdr = append(hdr, p, p+"/native")
		}
		rows := [][]string{hdr}
		native := sr.Modes["native"]
		for _, name := range sr.Order {
			tr := sr.Modes[name]
			row := []string{name, fmtDuration(tr.MedianNS), fmt.Sprintf("%.2fx", tr.PerNative)}
			for _, p := range phaseNames {
				row = append(row, fmtDuration(tr.PhasesNS[p]), fmt.Sprintf("%.2fx", ratio(float64(tr.PhasesNS[p]), float64(native.PhasesNS[p]))))
			}
			rows = append(rows, row)
		}
		printTable(w, rows)
		for _, name := range sr.Order {
			if d := sr.Modes[name].Differs; d != "" {
				fmt.Fprintf(w, "\n%s's output differs from native's (its own file system): %s\n", name, d)
			}
		}
	}
}

func fmtDuration(ns int64) string {
	return time.Duration(ns).Round(time.Millisecond).String()
}
