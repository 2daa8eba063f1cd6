package main

import (
	"os"
	"strings"
	"testing"
)

// TestInotifySameAsNative runs testdata/inotify.py natively on a kernel
// tmpfs and in the sandbox on /tmp, and compares every line: the events
// inotify watches on files and directories read for each change (names,
// cookies, IN_ISDIR, IN_IGNORED, one-shot and merged events), their watch
// descriptors, and inotify_add_watch's errors in Linux's order, as root
// and as nobody. knownInotify are the cases where the sandbox differs,
// with the reason; the test fails if one starts to match.
func TestInotifySameAsNative(t *testing.T) {
	knownInotify := map[string]string{
		// A subdirectory's placeholder is an open of its own backing,
		// not of its entry in the watched parent's mirror: the parent's
		// watch sees its reads (FS_ACCESS, raised by the sentry) but
		// not its open and close (fs/tmpfs/dnotify.go).
		"dir subdir list": "a subdirectory's open and close are not reported to its parent's watch",
		// A FIFO's or device's I/O is on the host node the sentry made
		// for it, which no stand-in would see: inotify_add_watch on
		// one is EOPNOTSUPP (vfs.InotifyTarget).
		"fifo": "no watch on a FIFO or device",
		// The sentry frees the file (its backing's last names go) at
		// its own close, before the kernel closes the guest's
		// placeholder (the synchronous close path): a watch of an open
		// file unlinked in a watched directory sees IN_DELETE_SELF
		// before IN_CLOSE_NOWRITE, and one IN_ATTRIB more.
		"open file unlink in watched dir": "IN_DELETE_SELF before the last close's IN_CLOSE_NOWRITE",
	}
	probe := testdataPath(t, "inotify.py")
	dir, err := os.MkdirTemp("/dev/shm", "sentry-inotify-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	native := runCmd(t, "", "python3", probe, dir)
	if native.code != 0 || strings.Count(native.stdout, "\n") < 45 ||
		!strings.Contains(native.stdout, "dir rename within ok W:MOVED_FROM:f:c1 W:MOVED_TO:g:c1\n") {
		t.Fatalf("native run: %+v", native)
	}
	sb := sandboxed(t, nil, "python3", probe, "/tmp")
	compareProbeLines(t, native, sb, knownInotify, " ok ")
}

// TestInotifyRaceFreesTheFile: a watched regular file's backing has a
// second name in the store, renamed with the file and removed with it,
// and a watched directory's backing is renamed with the directory
// (fs/tmpfs/dnotify.go). A guest racing watches of a 4 MiB file against
// renames of it, then removing it, must get its space back: a second name
// left behind would keep the bytes in the store for good. A guest racing
// renames of a watched directory against opens, listings and files made in
// it must find it by one name or the other, and its watch must go on
// (testdata/inotifyrace.py).
func TestInotifyRaceFreesTheFile(t *testing.T) {
	res := sandboxed(t, nil, "python3", testdataPath(t, "inotifyrace.py"), "/tmp", "2")
	if want := "with file True after 0\ndir errors [] last seen True\n"; res.code != 0 || res.stdout != want {
		t.Fatalf("got %+v, want %q: the file's 4 MiB counted, then none; the directory always found", res, want)
	}
}
