package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestHostileAndHeavyGuests runs testdata/stress.c's modes natively on a
// kernel tmpfs and in the sandbox, compares what they print, and checks
// that the sandbox's tmpfs is consistent afterwards with every inode and
// byte returned (the guests delete what they make).
func TestHostileAndHeavyGuests(t *testing.T) {
	prog := filepath.Join(testBinDir, "stress")
	if _, err := os.Stat(prog); err != nil {
		if b, err := exec.Command("gcc", "-O2", "-pthread", "-o", prog, "testdata/stress.c").CombinedOutput(); err != nil {
			t.Fatalf("gcc stress.c: %v\n%s", err, b)
		}
	}
	for _, mode := range []string{
		"threads",   // 256 threads doing open/write/fstat/close/unlink at once
		"manyfiles", // 100,000 files in one directory
		"deep",      // a tree as deep as PATH_MAX allows
		"loops",     // symlink loops
		"race",      // a thread rewriting the path buffer while opens are served
		"killed",    // guests SIGKILLed in the middle of served calls
		"forkstorm", // forks until RLIMIT_NPROC (as nobody: root is exempt)
	} {
		t.Run(mode, func(t *testing.T) {
			var wrap []string
			if mode == "forkstorm" {
				for _, tool := range []string{"setpriv", "prlimit"} {
					if _, err := exec.LookPath(tool); err != nil {
						t.Skipf("%s not installed (needs util-linux)", tool)
					}
				}
				wrap = []string{"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--",
					"prlimit", "--nproc=40:40"}
			}
			dir, err := os.MkdirTemp("/dev/shm", "sentry-stress-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			native := runCmd(t, "", append(wrap, prog, mode, dir)...)
			stats := filepath.Join(t.TempDir(), "stats.json")
			sb := sandboxed(t, []string{"--stats-json", stats}, append(wrap, prog, mode, "/tmp")...)
			if native.code != 0 || native != sb {
				t.Fatalf("native and sandbox differ\nnative:  %+v\nsandbox: %+v", native, sb)
			}
			tmpfs := tmpfsAtExit(t, stats)
			for _, m := range tmpfs {
				if m.Check != "ok" || m.Inodes != 1 || m.Bytes != 0 {
					t.Errorf("tmpfs %s after the guest: check %q, %d inodes, %d bytes; want ok, 1 (the root), 0",
						m.Mount, m.Check, m.Inodes, m.Bytes)
				}
			}
		})
	}
}

// TestRandomGuest: a guest issuing random trapped file calls with random
// arguments (bad fds, bad pointers, odd flags) on the tmpfs for a fixed
// time. The sandbox must not crash or hang, the guest must finish, and the
// tmpfs must be consistent afterwards.
func TestRandomGuest(t *testing.T) {
	prog := filepath.Join(testBinDir, "randguest")
	if b, err := exec.Command("gcc", "-O2", "-o", prog, "testdata/randguest.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc randguest.c: %v\n%s", err, b)
	}
	for _, seed := range []string{"1", "0x9e3779b97f4a7c15"} {
		stats := filepath.Join(t.TempDir(), "stats.json")
		r := sandboxed(t, []string{"--stats-json", stats}, prog, "3", seed)
		if r.code != 0 || r.stdout != "calls 1\n" {
			t.Fatalf("seed %s: %+v", seed, r)
		}
		data, err := os.ReadFile(stats)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Counters map[string]uint64 `json:"counters"`
			Tmpfs    []tmpfsReport     `json:"tmpfs"`
		}
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Tmpfs[0].Check != "ok" {
			t.Errorf("seed %s: tmpfs check: %s", seed, rep.Tmpfs[0].Check)
		}
		if rep.Counters["syscall.openat.emulated"] == 0 {
			t.Errorf("seed %s: no openat was served", seed)
		}
	}
}
