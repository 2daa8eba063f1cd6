package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// statsRun runs argv in the sandbox with --stats-json and returns the
// result and the counters.
func statsRun(t *testing.T, flags []string, argv ...string) (result, map[string]uint64) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "stats.json")
	r := sandboxed(t, append([]string{"--stats-json", out}, flags...), argv...)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("%v: no stats (exit %d, stderr %q): %v", argv, r.code, r.stderr, err)
	}
	var rep struct {
		Counters map[string]uint64 `json:"counters"`
		Tmpfs    []struct {
			Mount  string `json:"mount"`
			Inodes int64  `json:"inodes"`
		} `json:"tmpfs"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return r, rep.Counters
}

// TestTmpfsOptionErrors: a bad --tmpfs option is a usage error worded as
// the kernel logs it.
func TestTmpfsOptionErrors(t *testing.T) {
	for _, tc := range []struct{ spec, msg string }{
		{"/tmp:size=1x", "tmpfs: Bad value for 'size'"},
		{"/tmp:nr_inodes=1%", "tmpfs: Bad value for 'nr_inodes'"},
		{"/tmp:mode=8", "tmpfs: Bad value for 'mode'"},
		{"/tmp:huge=always", "tmpfs: Unsupported parameter 'huge'"},
		{"/tmp:uid=-1", "tmpfs: Bad value for 'uid'"},
		{"/tmp:sise=1m", "tmpfs: Unknown parameter 'sise'"},
	} {
		r := runCmd(t, "", sentryBin, "run", "--tmpfs", tc.spec, "--", "true")
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("--tmpfs %s: exit %d, stderr %q; want %d and %q", tc.spec, r.code, r.stderr, exitUsage, tc.msg)
		}
	}
}

func TestTmpfsHello(t *testing.T) {
	name := "sentry-hello-" + filepath.Base(t.TempDir())
	r := sandboxed(t, nil, "sh", "-c", "echo hello > /tmp/"+name+" && cat /tmp/"+name+` && stat -c "%s %a %h %F" /tmp/`+name)
	if r.code != 0 || r.stdout != "hello\n6 644 1 regular file\n" {
		t.Fatalf("got %+v", r)
	}
	if _, err := os.Stat("/tmp/" + name); !os.IsNotExist(err) {
		t.Fatalf("the guest's file reached the host's /tmp: %v", err)
	}
}

// TestClosePathsAndShortcut is the check of the two seeded paths:
// the same guest in the patched and the stock configuration sees the same
// results, and each path is counted where it was taken.
func TestClosePathsAndShortcut(t *testing.T) {
	prog := buildC(t, "openfstat")
	patched, pc := statsRun(t, nil, prog)
	stock, sc := statsRun(t, []string{"--close-path", "deferred", "--fstatat-shortcut", "off"}, prog)
	if patched.code != 0 || stock.code != 0 {
		t.Fatalf("guest failed: patched %+v stock %+v", patched, stock)
	}
	if patched.stdout != stock.stdout {
		t.Fatalf("the guest saw different results:\npatched: %s\nstock:   %s", patched.stdout, stock.stdout)
	}
	nativePath := "/dev/shm/" + filepath.Base(t.TempDir())
	t.Cleanup(func() { os.Remove(nativePath) })
	native := runCmd(t, "", prog, nativePath)
	if native.stdout != patched.stdout {
		t.Errorf("native %q, sandbox %q", native.stdout, patched.stdout)
	}
	const n = 10000
	atLeast := func(c map[string]uint64, name string, min uint64) {
		t.Helper()
		if c[name] < min {
			t.Errorf("%s = %d, want >= %d", name, c[name], min)
		}
	}
	zero := func(c map[string]uint64, name string) {
		t.Helper()
		if c[name] != 0 {
			t.Errorf("%s = %d, want 0", name, c[name])
		}
	}
	atLeast(pc, "close.sync", n)
	atLeast(pc, "newfstatat.empty_path_shortcut", n)
	zero(pc, "close.deferred")
	zero(pc, "taskwork.run")
	atLeast(sc, "close.deferred", n)
	atLeast(sc, "newfstatat.lookup", n)
	zero(sc, "close.sync")
	zero(sc, "newfstatat.empty_path_shortcut")
	if sc["close.deferred"] != sc["taskwork.run"] {
		t.Errorf("close.deferred = %d but taskwork.run = %d", sc["close.deferred"], sc["taskwork.run"])
	}
	// On unotify the loops' opens, closes and fstats are notified, not
	// stopped at: 3 x 10,000 calls at least in each mode.
	if testPlatform() == "unotify" {
		atLeast(pc, "unotify.notified", 3*n)
		atLeast(sc, "unotify.notified", 3*n)
	} else {
		zero(pc, "unotify.notified")
	}
}

// TestHostFilesPassThrough checks that host files still work and are
// counted as passthrough.
func TestHostFilesPassThrough(t *testing.T) {
	r, c := statsRun(t, nil, "sh", "-c", "cat /etc/passwd > /dev/null && stat -c %F /usr/bin && ls /usr/bin > /dev/null")
	if r.code != 0 || r.stdout != "directory\n" {
		t.Fatalf("got %+v", r)
	}
	for _, name := range []string{"syscall.openat.passthrough", "syscall.newfstatat.passthrough", "syscall.close.passthrough"} {
		if c[name] == 0 {
			t.Errorf("%s = 0", name)
		}
	}
	if c["syscall.openat.emulated"] != 0 {
		t.Errorf("host opens were emulated: %d", c["syscall.openat.emulated"])
	}
	// Data calls are never trapped: a placeholder is the file's data.
	if c["syscall.read.passthrough"] != 0 || c["syscall.read.emulated"] != 0 {
		t.Errorf("read was trapped: %d, %d", c["syscall.read.passthrough"], c["syscall.read.emulated"])
	}
}

// TestUnlinkedFreedOnSyncClose: an unlinked file lives until its last
// close; with the sync close path it is freed inside that close, so the
// mount holds only its root at exit.
func TestUnlinkedFreedOnSyncClose(t *testing.T) {
	out := filepath.Join(t.TempDir(), "stats.json")
	r := sandboxed(t, []string{"--stats-json", out}, "python3", "-c", `
import os
fd = os.open("/tmp/u", os.O_CREAT | os.O_RDWR, 0o600)
os.write(fd, b"x" * 10000)
os.unlink("/tmp/u")
assert os.fstat(fd).st_nlink == 0
os.lseek(fd, 0, 0)
assert os.read(fd, 20000) == b"x" * 10000
os.close(fd)
print("ok")
`)
	if r.code != 0 || r.stdout != "ok\n" {
		t.Fatalf("guest: %+v", r)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Tmpfs []struct {
			Inodes int64 `json:"inodes"`
			Bytes  int64 `json:"bytes"`
		} `json:"tmpfs"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Tmpfs) != 1 || rep.Tmpfs[0].Inodes != 1 || rep.Tmpfs[0].Bytes != 0 {
		t.Fatalf("tmpfs after the last close: %+v, want only the root and no data", rep.Tmpfs)
	}
}
