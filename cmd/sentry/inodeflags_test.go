package main

import "testing"

// TestInodeFlagsAsLinux runs testdata/inodeflags.py natively on a kernel
// tmpfs and in the sandbox and compares every line (issue #15):
// FS_IOC_GETFLAGS/SETFLAGS and FS_IOC_FSGETXATTR/FSSETXATTR on files and
// directories (which flags tmpfs keeps, who may set them, EOPNOTSUPP and
// EINVAL), the statx attributes, inheritance, noatime, and what immutable
// and append-only refuse, through trapped calls (open, truncate, unlink,
// rename, link, chmod, chown, utimes, xattrs, creating in a directory)
// and untrapped ones on descriptors opened before (ftruncate, fallocate,
// shared mappings, F_SETFL), which the host refuses on the backing the
// flags were mirrored to; ioctl of an O_PATH descriptor is EBADF.
// The immutable and append-only flags need CAP_LINUX_IMMUTABLE of the
// host's namespace: the guest is the host's root.
func TestInodeFlagsAsLinux(t *testing.T) {
	probe := testdataPath(t, "inodeflags.py")
	sameOnBothTmpfsWith(t, hostRootFlags, "python3 "+probe+" $1")
}

// TestFileAttrAsLinux runs testdata/fileattr.py natively on a kernel
// tmpfs and in the sandbox and compares every line (issue #15):
// file_getattr and file_setattr, the system calls of FS_IOC_FSGETXATTR
// and FS_IOC_FSSETXATTR, on files, directories, symlinks and FIFOs, with
// their size, flag and struct checks and who may set what.
func TestFileAttrAsLinux(t *testing.T) {
	probe := testdataPath(t, "fileattr.py")
	for _, m := range rootModes {
		t.Run(m.name, func(t *testing.T) {
			sameOnBothTmpfsWith(t, m.flags, "python3 "+probe+" $1")
		})
	}
}
