package platform

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPendingInterrupt: a signal pending for a stopped process interrupts
// a blocked call when the process catches it, not when
// its default action would end the wait itself (sleep, SIGUSR1 fatal) or
// when it is blocked or ignored.
func TestPendingInterrupt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   bool
	}{
		// Python sleeps with nothing blocked (a shell blocks every
		// signal while it forks).
		{"caught", `exec /usr/bin/python3 -c "import signal, time; signal.signal(signal.SIGUSR1, lambda *a: None); print('ready', flush=True); time.sleep(100)"`, true},
		{"ignored", `exec /usr/bin/python3 -c "import signal, time; signal.signal(signal.SIGUSR1, signal.SIG_IGN); print('ready', flush=True); time.sleep(100)"`, false},
		{"default fatal", `echo ready; exec sleep 100`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", tc.script)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			pid := int32(cmd.Process.Pid)
			// The shell has set its trap when it says so.
			if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			if tc.name == "default fatal" {
				time.Sleep(100 * time.Millisecond) // the exec of sleep
			}
			if got, _ := PendingInterrupt(pid); got {
				t.Fatal("interrupt before any signal")
			}
			unix.Kill(int(pid), unix.SIGSTOP)
			waitFor(t, func() bool { return procField(pid, "State:") == "T" })
			unix.Kill(int(pid), unix.SIGUSR1)
			if tc.want {
				// Pending while the process is stopped (an ignored
				// signal is dropped when sent; a fatal one kills).
				waitFor(t, func() bool { return procField(pid, "ShdPnd:") != "0000000000000000" })
			}
			got, shared := PendingInterrupt(pid)
			if got != tc.want {
				status, _ := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/status")
				t.Errorf("interrupt %v, want %v\n%s", got, tc.want, status)
			}
			if got && shared {
				t.Error("a single-threaded process's pending signal counted as shared")
			}
		})
	}
	if got, _ := PendingInterrupt(1 << 30); got {
		t.Error("a thread that does not exist is interrupted")
	}
}

// procField is the first word of a /proc/PID/status field's value.
func procField(pid int32, name string) string {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/status")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			if f := strings.Fields(v); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

// waitFor polls cond, failing the test if it is not true within a minute
// (a deadline against a hang, not a timing assertion).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in a minute")
		}
	}
}
