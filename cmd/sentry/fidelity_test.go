package main

import (
	"os/exec"
	"testing"
)

// TestFidelityProbe runs testdata/fidelity.py natively on a kernel tmpfs
// and in the sandbox and compares every line: the behaviours of issue #15
// that real test suites check (readlink(""), RLIMIT_FSIZE on truncate,
// write, ftruncate and fallocate, O_NOATIME, splice/tee/vmsplice,
// sync_file_range, sendfile's errno order, F_GETLK's conflicting lock and
// F_SETLKW's EDEADLK, ETXTBSY, linkat's and renameat's errors before
// EXDEV, mmap's argument checks, chmod of an O_PATH symlink through
// /proc/self/fd, pread and writev at the edges, shebang interpreters in
// the tmpfs, AF_UNIX sockets and sendmmsg, F_CREATED_QUERY), as root and
// as nobody (setpriv), in a directory nobody may write.
//
// The sandbox's /tmp gets an explicit size: a default one is what the
// host's ledger has left (fs/tmpfs/ledger.go), a page when other
// sandboxes hold the rest, and the probe would meet ENOSPC.
func TestFidelityProbe(t *testing.T) {
	probe := testdataCopy(t, "fidelity.py")
	flags := []string{"--tmpfs", "/tmp:size=64m"}
	t.Run("root", func(t *testing.T) {
		sameOnBothTmpfsWith(t, flags, "/usr/bin/python3 "+probe+" $1")
	})
	t.Run("nobody", func(t *testing.T) {
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Skip("needs setpriv (util-linux)")
		}
		sameOnBothTmpfsWith(t, flags, `chmod 755 "$1" && mkdir -m 777 "$1/w" &&
exec setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 `+probe+` "$1/w"`)
	})
}
