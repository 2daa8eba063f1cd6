package main

import "testing"

// TestFidelityProbe runs testdata/fidelity.py natively on a kernel tmpfs
// and in the sandbox and compares every line (issue #15: readlink("")
// is ENOENT, not EINVAL; truncate(2) growing a file past RLIMIT_FSIZE is
// EFBIG with SIGXFSZ, as inode_newsize_ok; O_NOATIME by a non-owner
// without CAP_FOWNER is EPERM, as may_open).
func TestFidelityProbe(t *testing.T) {
	probe := testdataPath(t, "fidelity.py")
	sameOnBothTmpfs(t, "python3 "+probe+" $1")
}
