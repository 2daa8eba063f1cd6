package main

import (
	"os"
	"strings"
	"testing"
)

// TestDnotifySameAsNative runs testdata/dnotify.py natively on a kernel
// tmpfs and in the sandbox on /tmp, and compares every line: the signals a
// dnotify watch (fcntl F_NOTIFY) delivers for each change in, out of and
// into the watched directory, for each mask, one shot or DN_MULTISHOT,
// F_SETSIG or SIGIO, another process's change, and F_NOTIFY's errors
// (issue #15). knownDnotify are the lines where the sandbox differs, with
// the reason; the test fails if one starts to match.
func TestDnotifySameAsNative(t *testing.T) {
	knownDnotify := map[string]string{
		// The guest's descriptor opened before any watch of its
		// directory is an open of the file's backing in the store's
		// root, whose writes no watch sees (fs/tmpfs/dnotify.go).
		"fd write, opened before the first watch": "descriptor opened before the first watch",
	}
	probe := testdataPath(t, "dnotify.py")
	dir, err := os.MkdirTemp("/dev/shm", "sentry-dnotify-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	native := runCmd(t, "", "python3", probe, dir)
	if native.code != 0 || strings.Count(native.stdout, "\n") < 150 || !strings.Contains(native.stdout, "create mask=0x8000003f ok ['RT+1/3/0x441']") {
		t.Fatalf("native run: %+v", native)
	}
	sb := sandboxed(t, nil, "python3", probe, "/tmp")
	compareProbeLines(t, native, sb, knownDnotify, " ")
}

// compareProbeLines compares a probe's lines in the sandbox with its
// native ones, each case a line starting with its name and then sep:
// every line must match, but those of the cases in known, which must
// differ (with the reason; a case that starts to match is reported, to be
// dropped from known).
func compareProbeLines(t *testing.T, native, sb result, known map[string]string, sep string) {
	t.Helper()
	nl, sl := strings.Split(native.stdout, "\n"), strings.Split(sb.stdout, "\n")
	if len(nl) != len(sl) {
		t.Fatalf("native %d lines, sandbox %d\nsandbox:\n%s\nstderr:\n%s", len(nl), len(sl), sb.stdout, sb.stderr)
	}
	for i := range nl {
		why := ""
		for prefix, w := range known {
			if strings.HasPrefix(nl[i], prefix+sep) {
				why = w
			}
		}
		switch {
		case why == "" && nl[i] != sl[i]:
			t.Errorf("line %d differs\nnative:  %s\nsandbox: %s", i+1, nl[i], sl[i])
		case why != "" && nl[i] == sl[i]:
			t.Errorf("line %d now matches Linux (%s): drop it from the known differences\n%s", i+1, why, nl[i])
		}
	}
	if sb.code != 0 {
		t.Errorf("sandbox exit %d, stderr:\n%s", sb.code, sb.stderr)
	}
}
