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
		// No host inode stands for a symlink or a special file of the
		// sandbox: inotify_add_watch on one is EOPNOTSUPP
		// (vfs.InotifyTarget).
		"symlink itself": "no watch on a symlink",
		"fifo":           "no watch on a special file",
		// A directory's backing has no second name to rename (a
		// regular file's does): the rename of a watched directory raises
		// no IN_MOVE_SELF.
		"dir rename self": "no IN_MOVE_SELF for a directory",
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
// second name in the store, renamed with the file and removed with it
// (fs/tmpfs/dnotify.go). A guest racing watches of a 4 MiB file against
// renames of it, then removing it, must get its space back: a second name
// left behind would keep the bytes in the store for good
// (testdata/inotifyrace.py).
func TestInotifyRaceFreesTheFile(t *testing.T) {
	res := sandboxed(t, nil, "python3", testdataPath(t, "inotifyrace.py"), "/tmp", "2")
	if res.code != 0 || res.stdout != "with file True after 0\n" {
		t.Fatalf("got %+v, want the file's 4 MiB counted, then none", res)
	}
}
