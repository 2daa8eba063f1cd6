package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Differential tests: each probe in testdata/probes runs a list of cases in
// a directory DIR and prints one line per case ("name: fields"). It runs
// natively with DIR on a kernel tmpfs (/dev/shm) and in the sandbox with DIR
// on the sentry's tmpfs (/tmp), and the two outputs must agree line by line.
// The probes print nothing that legitimately differs between the two (fd
// numbers are relative, st_dev, st_ino, times and mount ids only appear as
// relations), so any difference is a divergence from Linux.

// knownDivergences are cases where the sandbox is believed wrong today. Such
// a case is logged, not failed, as long as it still differs; once it
// matches, the test fails until it is removed from this list.
var knownDivergences = map[string]string{
	"opath.lseek": "an O_PATH descriptor's placeholder is the store's empty file in access mode 3 " +
		"(seccomp's ADDFD cannot install O_PATH files), which lseek does not refuse (EBADF natively)",
	"opath.ftruncate": "as opath.lseek: ftruncate refuses it with EINVAL (not open for writing), not EBADF",
	"opath.getown": "as opath.lseek: fcntl's locks, owners, leases and seals run on the placeholder untrapped " +
		"(trapping them costs every lock a round trip), so check_fcntl_cmd's EBADF for O_PATH is not given",
	"opath.dir_read": "as opath.lseek, for a directory: the placeholder is the directory's backing, " +
		"read gives EISDIR instead of EBADF",
}

// probes are the programs in testdata/probes.
var probes = []string{"fdstat"}

// sandboxConfigs are the sentry configurations each probe runs under.
var sandboxConfigs = []struct {
	name  string
	flags []string
}{
	{"default", nil},
	{"fstatat-shortcut=off", []string{"--fstatat-shortcut=off"}},
	{"close-path=deferred", []string{"--close-path=deferred"}},
}

var buildProbeMu sync.Mutex

// buildProbe compiles testdata/probes/name.c once per test binary.
func buildProbe(t *testing.T, name string) string {
	t.Helper()
	buildProbeMu.Lock()
	defer buildProbeMu.Unlock()
	out := filepath.Join(testBinDir, "probe-"+name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	src := filepath.Join("testdata", "probes", name+".c")
	if b, err := exec.Command("gcc", "-O2", "-Wall", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", src, err, b)
	}
	return out
}

// kernelTmpfsDir is where native runs put DIR: it must be a kernel tmpfs
// with the default relatime, which the sentry's tmpfs models.
const kernelTmpfsDir = "/dev/shm"

func requireKernelTmpfs(t *testing.T) {
	t.Helper()
	var sfs unix.Statfs_t
	if err := unix.Statfs(kernelTmpfsDir, &sfs); err != nil || sfs.Type != unix.TMPFS_MAGIC {
		t.Skipf("%s is not a tmpfs (statfs: %v): no native reference", kernelTmpfsDir, err)
	}
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Skipf("reading mounts: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[1] != kernelTmpfsDir {
			continue
		}
		for _, o := range strings.Split(f[3], ",") {
			if o == "noatime" || o == "strictatime" || o == "lazytime" {
				t.Skipf("%s is mounted %s; the probes expect relatime", kernelTmpfsDir, o)
			}
		}
	}
}

// probeLine is one case's output.
type probeLine struct {
	name, text string
}

func parseProbe(out string) []probeLine {
	var lines []probeLine
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		name, _, _ := strings.Cut(l, ":")
		lines = append(lines, probeLine{name, l})
	}
	return lines
}

func TestDiffProbes(t *testing.T) {
	requireKernelTmpfs(t)
	for _, probe := range probes {
		t.Run(probe, func(t *testing.T) {
			bin := buildProbe(t, probe)
			parent, err := os.MkdirTemp(kernelTmpfsDir, "sentry-diff-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(parent)
			native := runCmd(t, "", bin, filepath.Join(parent, "probe"))
			want := parseProbe(native.stdout)
			checkNativeProbe(t, native, want)
			for _, cfg := range sandboxConfigs {
				t.Run(cfg.name, func(t *testing.T) {
					got := sandboxed(t, cfg.flags, bin, "/tmp/probe")
					compareProbe(t, want, native, got)
				})
			}
		})
	}
}

// checkNativeProbe makes sure the reference run is sound: it finished, and
// every case name is unique (the comparison is by position and name).
func checkNativeProbe(t *testing.T, native result, lines []probeLine) {
	t.Helper()
	if native.code != 0 || len(lines) == 0 || lines[len(lines)-1].name != "END" {
		t.Fatalf("native run failed: exit %d, stderr %q, output:\n%s", native.code, native.stderr, native.stdout)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l.name] {
			t.Fatalf("probe prints case %q twice", l.name)
		}
		seen[l.name] = true
	}
	for name := range knownDivergences {
		if !seen[name] {
			t.Errorf("knownDivergences lists %q, which no probe prints", name)
		}
	}
}

// compareProbe compares the sandbox run with the native one, line by line.
func compareProbe(t *testing.T, want []probeLine, native, sb result) {
	t.Helper()
	got := parseProbe(sb.stdout)
	if sb.code != native.code {
		t.Errorf("exit code: native %d, sandbox %d (sandbox stderr %q)", native.code, sb.code, sb.stderr)
	}
	// Cases line up one for one; a missing or extra line means the probe
	// went another way (or died), and nothing after it can be compared.
	n := min(len(want), len(got))
	for i := 0; i < n; i++ {
		if want[i].name != got[i].name {
			t.Errorf("line %d: native case %q, sandbox case %q: the outputs no longer line up\n"+
				"native:  %s\nsandbox: %s\nsandbox stderr: %s", i+1, want[i].name, got[i].name, want[i].text, got[i].text, sb.stderr)
			n = i
			break
		}
	}
	if len(want) != len(got) && n == min(len(want), len(got)) {
		t.Errorf("native printed %d lines, sandbox %d (sandbox exit %d, stderr %q); first unmatched: %s",
			len(want), len(got), sb.code, sb.stderr, firstExtra(want, got, n))
	}
	var diffs []string
	diverged := map[string]bool{}
	for i := 0; i < n; i++ {
		if want[i].text == got[i].text {
			continue
		}
		name := want[i].name
		if reason, ok := knownDivergences[name]; ok {
			diverged[name] = true
			t.Logf("known divergence %s (%s)\n  native:  %s\n  sandbox: %s", name, reason, want[i].text, got[i].text)
			continue
		}
		diffs = append(diffs, fmt.Sprintf("case %s (line %d)\n  native:  %s\n  sandbox: %s", name, i+1, want[i].text, got[i].text))
	}
	const show = 15
	if total := len(diffs); total > 0 {
		more := ""
		if total > show {
			more = fmt.Sprintf("\n... and %d more", total-show)
			diffs = diffs[:show]
		}
		t.Errorf("%d case(s) differ from native:\n%s%s", total, strings.Join(diffs, "\n"), more)
	}
	// The list stays honest: a listed case that now matches must go.
	compared := map[string]bool{}
	for _, l := range want[:n] {
		compared[l.name] = true
	}
	var fixed []string
	for name := range knownDivergences {
		if compared[name] && !diverged[name] {
			fixed = append(fixed, name)
		}
	}
	sort.Strings(fixed)
	for _, name := range fixed {
		t.Errorf("case %s is in knownDivergences but now matches native: remove it from the list", name)
	}
	t.Logf("compared %d lines (%d known divergences)", n, len(diverged))
}

func firstExtra(want, got []probeLine, n int) string {
	if n < len(want) {
		return "native " + want[n].text
	}
	return "sandbox " + got[n].text
}
