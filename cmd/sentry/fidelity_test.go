package main

import "testing"

// TestFidelityProbe runs testdata/fidelity.py natively on a kernel tmpfs
// and in the sandbox and compares every line: the behaviours of issue #15
// that real test suites check (readlink(""), RLIMIT_FSIZE on truncate,
// write, ftruncate and fallocate, O_NOATIME, splice/tee/vmsplice,
// sync_file_range, sendfile's errno order, F_GETLK's conflicting lock and
// F_SETLKW's EDEADLK, ETXTBSY, linkat's and renameat's errors before
// EXDEV, mmap's argument checks, chmod of an O_PATH symlink through
// /proc/self/fd, pread and writev at the edges, shebang interpreters in
// the tmpfs, AF_UNIX sockets of a non-root guest, F_CREATED_QUERY).
func TestFidelityProbe(t *testing.T) {
	probe := testdataPath(t, "fidelity.py")
	sameOnBothTmpfs(t, "python3 "+probe+" $1")
}
