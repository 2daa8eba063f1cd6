package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name   string
		argv   []string
		code   int
		stderr string
	}{
		{"true", []string{"/bin/true"}, 0, ""},
		{"exit 7", []string{"sh", "-c", "exit 7"}, 7, ""},
		{"killed by SIGTERM", []string{"sh", "-c", "kill -TERM $$"}, 143, ""},
		{"killed by SIGKILL", []string{"sh", "-c", "kill -KILL $$"}, 137, ""},
		{"not found", []string{"no-such-cmd"}, 127, "no-such-cmd"},
		{"not found by path", []string{"/no/such/cmd"}, 127, "/no/such/cmd"},
		{"not executable", []string{"/etc/passwd"}, 126, "/etc/passwd"},
		{"directory", []string{"/usr"}, 126, "/usr"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := sandboxed(t, nil, tc.argv...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", r.code, tc.code, r.stderr)
			}
			if tc.stderr != "" && !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr %q does not name %q", r.stderr, tc.stderr)
			}
		})
	}
}

// TestSameAsNative runs programs natively and in the sandbox and compares
// their output and exit status.
func TestSameAsNative(t *testing.T) {
	busybox, _ := exec.LookPath("busybox")
	tests := []struct {
		name string
		argv func(t *testing.T) []string
	}{
		{"ls -la /usr/bin", func(*testing.T) []string { return []string{"ls", "-la", "/usr/bin"} }},
		{"pipeline", func(*testing.T) []string { return []string{"sh", "-c", "for i in 3 1 2; do echo $i; done | sort"} }},
		{"fork and wait", func(t *testing.T) []string { return []string{buildC(t, "forkwait")} }},
		{"SIGSTOP and SIGCONT of a child", func(t *testing.T) []string { return []string{buildC(t, "stopcont")} }},
		{"SIGUSR1 from another guest", func(t *testing.T) []string { return []string{buildC(t, "sigusr")} }},
		{"multi-threaded Go", func(t *testing.T) []string { return []string{buildGo(t, "gothreads")} }},
		{"python threads and subprocess", func(*testing.T) []string {
			return []string{"python3", "-c", `
import threading, subprocess
out = []
def work(i):
    out.append(subprocess.run(["sh", "-c", "echo $0", str(i)], capture_output=True, text=True).stdout.strip())
ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
for t in ts: t.start()
for t in ts: t.join()
print(sorted(out))
`}
		}},
		{"busybox", func(t *testing.T) []string {
			if busybox == "" {
				t.Skip("busybox not installed (needs busybox-static; .ci/run installs it)")
			}
			return []string{busybox, "sh", "-c", "echo hi | busybox tr a-z A-Z; busybox ls /usr | busybox head -3; exit 3"}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			argv := tc.argv(t)
			native := runCmd(t, "", argv...)
			sb := sandboxed(t, nil, argv...)
			if native != sb {
				t.Fatalf("native and sandbox differ\nnative:  %+v\nsandbox: %+v", native, sb)
			}
		})
	}
}

// TestSIGKILLLeavesNoGuest kills the sandbox with SIGKILL and checks that
// no guest process survives it (PTRACE_O_EXITKILL).
func TestSIGKILLLeavesNoGuest(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	// The pid file lives in the host's /tmp: no tmpfs is mounted over it.
	cmd := exec.Command(sentryBin, "run", "--tmpfs", "none", "--", "sh", "-c",
		"sleep 1000 & echo $! >> "+pidFile+"; (sleep 1000; true) & echo $! >> "+pidFile+"; echo $$ >> "+pidFile+"; wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	deadline := time.Now().Add(10 * time.Second)
	for len(pids) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		data, _ := os.ReadFile(pidFile)
		pids = pids[:0]
		for _, f := range strings.Fields(string(data)) {
			n, _ := strconv.Atoi(f)
			pids = append(pids, n)
		}
	}
	if len(pids) < 3 {
		t.Fatalf("guest did not start: pids %v", pids)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitGone(t, pids)
}

// TestStatsJSON checks the per-syscall counters for ls /.
func TestStatsJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "stats.json")
	r := sandboxed(t, []string{"--stats-json", out}, "sh", "-c", "ls / > /dev/null; cat /tmp/missing 2>/dev/null; true")
	if r.code != 0 {
		t.Fatalf("exited %d: %s", r.code, r.stderr)
	}
	var rep struct {
		Counters map[string]uint64 `json:"counters"`
		Waits    []waitReport      `json:"waits"`
		Share    float64           `json:"wait_share"`
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"syscall.openat.passthrough", "syscall.close.passthrough"} {
		if rep.Counters[name] == 0 {
			t.Errorf("%s = 0, want > 0 (counters %v)", name, rep.Counters)
		}
	}
	if _, ok := rep.Counters["syscall.getpid.passthrough"]; ok {
		t.Errorf("getpid is counted: it must not be trapped")
	}
	// What the guest waited for the sentry, per syscall (strace -c -w):
	// the failed open of /tmp/missing is an error of openat's.
	byName := map[string]waitReport{}
	for _, w := range rep.Waits {
		byName[w.Syscall] = w
	}
	if o := byName["openat"]; o.Calls == 0 || o.Errors == 0 || o.TotalNS <= 0 || o.MeanNS <= 0 {
		t.Errorf("openat waits %+v", o)
	}
	// A host file's close is the host's: the sentry lets it run and never
	// sees its result, which is counted unseen, not as a success.
	if c := byName["close"]; c.Unseen == 0 || c.Unseen > c.Calls {
		t.Errorf("close waits %+v: want some unseen, at most its calls", c)
	}
	if rep.Share <= 0 || rep.Share >= 1 {
		t.Errorf("wait share %v", rep.Share)
	}
}

// TestStrace checks that --strace logs decoded calls with results.
func TestStrace(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	r := sandboxed(t, []string{"--strace", "--log", log, "--log-format", "json"}, "cat", "/nonexistent-file")
	if r.code != 1 {
		t.Fatalf("cat exited %d", r.code)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("bad log line %q: %v", line, err)
		}
		if e["syscall"] == "openat" && strings.Contains(e["args"].(string), `"/nonexistent-file"`) {
			found = true
			// The unotify platform passes a host call through without
			// seeing its result: it logs "?".
			okRet := e["errno"] == "ENOENT"
			if testPlatform() == "unotify" {
				okRet = e["ret"] == "?"
			}
			if !okRet || e["path"] != "passthrough" || !strings.Contains(e["args"].(string), "O_RDONLY") {
				t.Errorf("openat line: %v", e)
			}
		}
	}
	if !found {
		t.Errorf("no openat of /nonexistent-file in the log:\n%s", data)
	}
}
