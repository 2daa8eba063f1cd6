package main

import (
	"strings"
	"testing"
)

// TestDeepPathSameAsNative: getcwd and readlink of /proc/self/cwd and
// /proc/self/fd/N in and around Linux's limit (testdata/deeppath.c):
// the kernel builds the path into one PATH_MAX page and fails with
// ENAMETOOLONG when it does not fit (getcwd before ERANGE; readlink of a
// deleted file counts its " (deleted)"), then 2,000 levels deeper. The
// sentry built the whole path, copying it at every level (quadratic: one
// getcwd at depth 20,000 stalled the sandbox for 9 s), gave it from
// getcwd however long, and truncated it to readlink's buffer; now the
// results and errnos are the native ones on a kernel tmpfs.
func TestDeepPathSameAsNative(t *testing.T) {
	bin := buildC(t, "deeppath")
	native := runCmd(t, "", bin, tempDirIn(t, "/dev/shm", "sentry-deeppath-"), "2000")
	if native.code != 0 || !strings.HasSuffix(native.stdout, "done\n") {
		t.Fatalf("native: %+v", native)
	}
	// The reference reaches the limit: else the comparison shows nothing.
	for _, line := range []string{
		"getcwd(4096) at 4095: 4096, the path\n",
		"getcwd(10) at 4096: ENAMETOOLONG\n",
		"readlink(/proc/self/cwd, 100) at 4096: ENAMETOOLONG\n",
	} {
		if !strings.Contains(native.stdout, line) {
			t.Fatalf("native output lacks %q:\n%s", line, native.stdout)
		}
	}
	r := sandboxed(t, nil, bin, "/tmp", "2000")
	if r.code != 0 || r.stdout != native.stdout {
		t.Errorf("sandbox: exit %d\n%s\n%s", r.code, diffLines(native.stdout, r.stdout), r.stderr)
	}
}

// diffLines is the lines of got that differ from want's at the same
// place, each after want's.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("native:  " + wl + "\nsandbox: " + gl + "\n")
		}
	}
	return b.String()
}
