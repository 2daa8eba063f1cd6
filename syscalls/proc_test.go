package syscalls

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriteShown: the mount lists less the guest namespace's own mounts
// (by id in mountinfo; in mounts, by source, point and type of the hidden
// mountinfo lines), and nothing at all when mountinfo cannot be read.
func TestWriteShown(t *testing.T) {
	dir := t.TempDir()
	info := filepath.Join(dir, "mountinfo")
	mountinfo := "22 1 0:21 / / rw - ext4 /dev/vda rw\n" +
		"40 22 0:40 / /tmp ro - tmpfs sentry-cover ro\n" +
		"41 22 0:41 / /work rw - ext4 /dev/vdb rw\n"
	if err := os.WriteFile(info, []byte(mountinfo), 0o600); err != nil {
		t.Fatal(err)
	}
	mounts := "/dev/vda / ext4 rw 0 0\nsentry-cover /tmp tmpfs ro 0 0\n/dev/vdb /work ext4 rw 0 0\n"
	for _, tc := range []struct {
		name      string
		data      string
		mountinfo bool
		infoPath  string
		want      string
		err       bool
	}{
		{"mountinfo", mountinfo, true, info, "22 1 0:21 / / rw - ext4 /dev/vda rw\n41 22 0:41 / /work rw - ext4 /dev/vdb rw\n", false},
		{"mounts", mounts, false, info, "/dev/vda / ext4 rw 0 0\n/dev/vdb /work ext4 rw 0 0\n", false},
		{"mounts without mountinfo", mounts, false, filepath.Join(dir, "gone"), "", true},
	} {
		var b strings.Builder
		err := writeShown(&b, []byte(tc.data), []uint64{40}, tc.mountinfo, tc.infoPath)
		if (err != nil) != tc.err || b.String() != tc.want {
			t.Errorf("%s: %q, %v; want %q (error %v)", tc.name, b.String(), err, tc.want, tc.err)
		}
	}
}

// TestReadErr: the sentry's own want of descriptors or memory is the
// guest's to see; anything else of the kernel's file is the caller's
// errno.
func TestReadErr(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want unix.Errno
	}{
		{&os.PathError{Op: "open", Path: "/proc/1/mounts", Err: unix.EMFILE}, unix.EMFILE},
		{&os.PathError{Op: "open", Path: "/proc/1/mounts", Err: unix.ENFILE}, unix.ENFILE},
		{&os.PathError{Op: "read", Path: "/proc/1/mounts", Err: unix.ENOMEM}, unix.ENOMEM},
		{&os.PathError{Op: "open", Path: "/proc/1/mounts", Err: unix.ENOENT}, unix.EIO},
		{errors.New("short read"), unix.EIO},
	} {
		if got := readErr(tc.err, unix.EIO); got != tc.want {
			t.Errorf("readErr(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
