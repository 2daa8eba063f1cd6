package main

import "testing"

// TestSCMRightsAsLinux runs testdata/scmrights.py natively on a kernel
// tmpfs and in the sandbox and compares every line (issue #15): a
// descriptor of a tmpfs file, directory or O_PATH passed to another
// process with SCM_RIGHTS (sendmsg, sendmmsg; recvmsg, recvmmsg) is the
// same open file there: stat, name, flags, shared offset, data, an
// unlinked file, fchdir and *at calls through a received directory,
// MSG_CMSG_CLOEXEC, the sender closing first, a failed send.
func TestSCMRightsAsLinux(t *testing.T) {
	probe := testdataPath(t, "scmrights.py")
	sameOnBothTmpfs(t, "python3 "+probe+" $1")
}
