package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sentryBin is the sentry binary built once for the end-to-end tests.
var sentryBin string

// testBinDir holds the binaries built from testdata.
var testBinDir string

func TestMain(m *testing.M) {
	// Not under /tmp: the guest sees its own empty tmpfs there.
	dir, err := os.MkdirTemp("/var/tmp", "sentry-test-")
	if err != nil {
		panic(err)
	}
	// Readable by all: some tests run their guest as nobody.
	os.Chmod(dir, 0o755)
	testBinDir = dir
	sentryBin = filepath.Join(dir, "sentry")
	args := []string{"build", "-o", sentryBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		panic("building sentry: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what a command did.
type result struct {
	stdout, stderr string
	code           int
}

func runCmd(t *testing.T, stdin string, argv ...string) result {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	// Run from "/": the checkout may live under /tmp, which the sandbox
	// hides behind its tmpfs (as a real tmpfs mounted there would).
	cmd.Dir = "/"
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%v: %v", argv, err)
		}
		code = ee.ExitCode()
		if code < 0 {
			code = -1
		}
	}
	return result{so.String(), se.String(), code}
}

// nativeArgv is argv as the native reference of a sandbox run with flags
// runs it: in a test run as root, in a user namespace like the guest's
// (sentry __userns-exec; --userns is on for a root sentry), unless flags
// turn that off.
func nativeArgv(flags []string, argv ...string) []string {
	if os.Geteuid() != 0 || slices.Contains(flags, "--userns=off") {
		return argv
	}
	return append([]string{sentryBin, userNSExecCmd, "--"}, argv...)
}

// runNative runs argv as the native reference of a sandbox run with flags.
func runNative(t *testing.T, flags []string, argv ...string) result {
	t.Helper()
	return runCmd(t, "", nativeArgv(flags, argv...)...)
}

// sandboxed runs argv under "sentry run" with flags.
func sandboxed(t *testing.T, flags []string, argv ...string) result {
	t.Helper()
	full := append([]string{sentryBin, "run"}, flags...)
	full = append(full, "--")
	full = append(full, argv...)
	return runCmd(t, "", full...)
}

// buildC compiles testdata/name.c once per test binary.
func buildC(t *testing.T, name string) string {
	t.Helper()
	out := filepath.Join(testBinDir, name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if b, err := exec.Command("gcc", "-O2", "-Wall", "-o", out, filepath.Join("testdata", name+".c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, b)
	}
	return out
}

// buildCThreads compiles testdata/name.c with -pthread once per test
// binary.
func buildCThreads(t *testing.T, name string) string {
	t.Helper()
	out := filepath.Join(testBinDir, name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if b, err := exec.Command("gcc", "-O2", "-Wall", "-pthread", "-o", out, filepath.Join("testdata", name+".c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, b)
	}
	return out
}

// buildGo builds testdata/name (a Go main package) once.
func buildGo(t *testing.T, name string) string {
	t.Helper()
	out := filepath.Join(testBinDir, name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if b, err := exec.Command("go", "build", "-o", out, "./testdata/"+name).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, b)
	}
	return out
}

// testPlatform is the platform the sandbox runs on in this test run:
// $SENTRY_PLATFORM, which the sentry also reads, else ptrace.
func testPlatform() string {
	if p := os.Getenv("SENTRY_PLATFORM"); p != "" {
		return p
	}
	return "ptrace"
}

// tmpfsAtExit is the tmpfs part of a --stats-json report: each mount's
// usage and consistency check at exit.
func tmpfsAtExit(t *testing.T, statsPath string) []tmpfsReport {
	t.Helper()
	return statsAtExit(t, statsPath).Tmpfs
}

// countersAtExit is the counters of a --stats-json file.
func countersAtExit(t *testing.T, statsPath string) map[string]uint64 {
	t.Helper()
	return statsAtExit(t, statsPath).Counters
}

// statsAtExit reads a --stats-json file.
func statsAtExit(t *testing.T, statsPath string) statsReport {
	t.Helper()
	data, err := os.ReadFile(statsPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep statsReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}
