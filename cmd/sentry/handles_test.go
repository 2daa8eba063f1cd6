package main

import "testing"

// TestFileHandlesAsLinux runs testdata/handles.py natively on a kernel
// tmpfs and in the sandbox and compares every line (issue #15):
// name_to_handle_at's sizes, flags, type, mount id and errno order;
// open_by_handle_at of files, directories and symlinks, its errnos (EPERM
// without CAP_DAC_READ_SEARCH, EINVAL, ESTALE for a freed inode or a wrong
// generation); and a hostile guest's forged handles, which reach no host
// file through a sentry mount fd and no sentry file through a host one.
func TestFileHandlesAsLinux(t *testing.T) {
	probe := testdataPath(t, "handles.py")
	for _, m := range rootModes {
		t.Run(m.name, func(t *testing.T) {
			sameOnBothTmpfsWith(t, m.flags, "python3 "+probe+" $1")
		})
	}
}
