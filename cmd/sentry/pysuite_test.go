package main

import (
	"os/exec"
	"strings"
	"testing"
)

// pythonSuiteModules are modules of CPython's own regression suite that
// exercise files, directories, descriptors, mappings, archives and
// terminals: thousands of small probes written by others, each compared by
// outcome with the same suite run natively (a real program's view of
// Linux, where testdata's probes are ours).
var pythonSuiteModules = []string{
	"test_os", "test_posix", "test_shutil", "test_tempfile", "test_pathlib",
	"test_glob", "test_stat", "test_fileio", "test_fcntl", "test_mmap",
	"test_mailbox", "test_tarfile", "test_fileinput", "test_filecmp",
	"test_posixpath", "test_shelve", "test_dbm_dumb", "test_py_compile",
	"test_zipimport", "test_pty",
}

// TestPythonSuiteSameAsNative runs pythonSuiteModules with their work
// directory and TMPDIR on /dev/shm natively and on /tmp in the sandbox,
// and compares every test's outcome (ok, skipped and why, FAIL, ERROR):
// a test that passes on a kernel tmpfs and fails, errs or skips in the
// sandbox is a divergence from Linux. A test that fails natively too is
// compared like any other.
func TestPythonSuiteSameAsNative(t *testing.T) {
	if err := exec.Command("python3", "-c", "import test.libregrtest").Run(); err != nil {
		t.Skip("python3's own test suite is not installed (Debian's libpython3-testsuite): nothing to compare")
	}
	for _, m := range rootModes {
		t.Run(m.name, func(t *testing.T) {
			out := sameOnBothTmpfsWith(t, m.flags, `cd "$1" && mkdir work && cd work
TMPDIR="$1" python3 -m test -v `+strings.Join(pythonSuiteModules, " ")+` > "$1/log" 2>&1
echo "exit $?"
grep -E '^test[^ ]* \(.*\) \.\.\. (ok|FAIL|ERROR|expected failure|unexpected success|skipped .*)$' "$1/log" | LC_ALL=C sort
grep -E '^Total tests:' "$1/log"`)
			if n := strings.Count(out, " ... ok\n"); n < 1000 {
				t.Fatalf("only %d tests passed: the suite did not run\n%s", n, out)
			}
		})
	}
}
