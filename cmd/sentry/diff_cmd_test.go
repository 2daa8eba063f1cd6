package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sentry/cmd/sentry/internal/tracediff"
)

// diffScript writes, stats and removes a file on the guest's /tmp: a few
// emulated calls in two child processes.
const diffScript = "echo a > /tmp/x; stat -c %s /tmp/x; rm /tmp/x"

// sentryDiff runs "sentry diff ARGS", skipping the test where the native
// run cannot have its mount namespace (not root, or a container that
// forbids it): that is the one thing diff cannot do without.
func sentryDiff(t *testing.T, args ...string) result {
	t.Helper()
	r := runCmd(t, "", append([]string{sentryBin, "diff"}, args...)...)
	if r.code == exitSandbox && strings.Contains(r.stderr, "unshare(CLONE_NEWNS)") &&
		strings.Contains(r.stderr, "operation not permitted") {
		t.Skipf("no mount namespace for the native run (unshare(CLONE_NEWNS) got EPERM): %s", strings.TrimSpace(r.stderr))
	}
	return r
}

func TestDiffCmdSame(t *testing.T) {
	r := sentryDiff(t, "--", "sh", "-c", diffScript)
	if r.code != 0 {
		t.Fatalf("sentry diff exited %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "same calls, exit status and output") {
		t.Errorf("report does not say the runs agree:\n%s", r.stdout)
	}
}

// statSyscall finds which call stat(1) uses on a path here (statx with a
// recent coreutils, newfstatat before), so the fault lands on it.
func statSyscall(t *testing.T) string {
	t.Helper()
	log := filepath.Join(t.TempDir(), "log")
	r := sandboxed(t, []string{"--strace", "--log", log, "--log-format", "json"}, "stat", "-c", "%s", "/tmp")
	if r.code != 0 {
		t.Fatalf("stat /tmp in the sandbox exited %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		var e struct{ Syscall, Args string }
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		switch e.Syscall {
		case "statx", "newfstatat", "stat", "lstat":
			if strings.Contains(e.Args, `"/tmp"`) {
				return e.Syscall
			}
		}
	}
	t.Fatalf("stat(1) made no stat call on /tmp:\n%s", data)
	return ""
}

func TestDiffCmdInjectedFault(t *testing.T) {
	sc := statSyscall(t)
	r := sentryDiff(t, "--inject-fault", sc+":EIO", "--", "sh", "-c", diffScript)
	if r.code != 1 {
		t.Fatalf("sentry diff exited %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, sc) || !strings.Contains(r.stdout, "-1 EIO") {
		t.Errorf("report does not name %s failing with EIO:\n%s", sc, r.stdout)
	}

	// The JSON report's first divergence is the faulted call itself,
	// which succeeded natively.
	r = sentryDiff(t, "--json", "--max", "1", "--inject-fault", sc+":EIO", "--", "sh", "-c", diffScript)
	if r.code != 1 {
		t.Fatalf("sentry diff --json exited %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var rep tracediff.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json report: %v\n%s", err, r.stdout)
	}
	if rep.Equal || rep.Diverge == 0 || len(rep.Calls) != 1 {
		t.Fatalf("report: equal %v, %d divergences, %d listed; want a difference, 1 listed", rep.Equal, rep.Diverge, len(rep.Calls))
	}
	d := rep.Calls[0]
	if d.Native == nil || d.Sandbox == nil || d.Native.Syscall != sc || d.Sandbox.Syscall != sc ||
		d.Native.Result != "0" || d.Sandbox.Result != "-1 EIO" || !strings.Contains(d.Native.Args, `"/tmp/x"`) {
		t.Errorf("first divergence %+v (native %+v, sandbox %+v), want %s(\"/tmp/x\") 0 vs -1 EIO", d, d.Native, d.Sandbox, sc)
	}
	if rep.Sandbox.Stderr == rep.Native.Stderr {
		t.Errorf("stat's error message is not in the sandbox run's stderr: %q", rep.Sandbox.Stderr)
	}
}

func TestDiffCmdUsage(t *testing.T) {
	for _, args := range [][]string{
		{},                                   // no command
		{"--"},                               // no command after --
		{"--max", "-1", "--", "true"},        // negative --max
		{"--no-such-flag", "--", "true"},     // unknown flag
		{"--log", "/dev/null", "--", "true"}, // diff owns the logs
		{"--tmpfs", "relative", "--", "true"},
		{"--tmpfs", "/tmp:size=1x", "--", "true"},
	} {
		r := runCmd(t, "", append([]string{sentryBin, "diff"}, args...)...)
		if r.code != exitUsage {
			t.Errorf("sentry diff %q exited %d, want %d\nstderr:\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
	r := runCmd(t, "", sentryBin, "diff", "-h")
	if r.code != 0 || !strings.Contains(r.stderr, "native") || !strings.Contains(r.stderr, "inject-fault") {
		t.Errorf("sentry diff -h exited %d; it should explain the runs and list the run flags:\n%s", r.code, r.stderr)
	}
}

// TestDiffCmdTmpfsOptions: a kernel tmpfs mounted with the options'
// mount(2) form (the native run) and the sentry's tmpfs given them (the
// sandbox run) have the same limits, mode and out-of-space behaviour.
// The size is 16 pages and a byte, rounded up to 17.
func TestDiffCmdTmpfsOptions(t *testing.T) {
	r := sentryDiff(t, "--tmpfs", "/tmp:size=0x10001,nr_inodes=5,mode=0750", "--", "sh", "-c",
		`stat -f -c "%b %f %c %d" /tmp; stat -c %a /tmp; head -c 100000 /dev/zero > /tmp/f; ls -l /tmp/f | cut -d" " -f5; stat -f -c "%b %f %c %d" /tmp`)
	if r.code != 0 {
		t.Fatalf("sentry diff exited %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
