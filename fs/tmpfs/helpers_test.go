package tmpfs

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

var (
	rootCreds = vfs.RootCredentials()
	userCreds = &vfs.Credentials{UID: 1000, GID: 1000}
	// otherCreds is another user, also in group 1000.
	otherCreds = &vfs.Credentials{UID: 1001, GID: 1001, Groups: []uint32{1000}}
	// strangerCreds shares nothing with the others.
	strangerCreds = &vfs.Credentials{UID: 1002, GID: 1002}
)

// newTestFS returns a tmpfs with a world-writable sticky root, as /tmp.
func newTestFS(t testing.TB, opts Options) *Filesystem {
	t.Helper()
	if opts.RootMode == 0 {
		opts.RootMode = 01777
	}
	if opts.Dev == 0 {
		opts.Dev = unix.Mkdev(0, 999)
	}
	fs, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fs.Check(); err != nil {
			t.Errorf("Check after test: %v", err)
		}
		fs.Release()
	})
	return fs
}

// walk resolves a slash-separated relative path without following
// symlinks; "" is the root.
func walk(fs *Filesystem, p string) (vfs.Dentry, error) {
	d := fs.Root()
	if p == "" || p == "." {
		return d, nil
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" {
			continue
		}
		nd, err := d.Lookup(c)
		if err != nil {
			return nil, err
		}
		d = nd
	}
	return d, nil
}

// walkParent resolves the directory holding p and p's last component.
func walkParent(fs *Filesystem, p string) (vfs.Dentry, string, error) {
	dir, name := "", p
	if k := strings.LastIndexByte(p, '/'); k >= 0 {
		dir, name = p[:k], p[k+1:]
	}
	d, err := walk(fs, dir)
	return d, name, err
}

func mustWalk(t testing.TB, fs *Filesystem, p string) vfs.Dentry {
	t.Helper()
	d, err := walk(fs, p)
	if err != nil {
		t.Fatalf("walk %q: %v", p, err)
	}
	return d
}

func mustCreate(t testing.TB, fs *Filesystem, p string, mode uint32, c *vfs.Credentials) vfs.Dentry {
	t.Helper()
	d, name, err := walkParent(fs, p)
	if err != nil {
		t.Fatalf("walk parent of %q: %v", p, err)
	}
	nd, err := d.Create(name, mode, c)
	if err != nil {
		t.Fatalf("Create %q: %v", p, err)
	}
	return nd
}

func mustMkdir(t testing.TB, fs *Filesystem, p string, mode uint32, c *vfs.Credentials) vfs.Dentry {
	t.Helper()
	d, name, err := walkParent(fs, p)
	if err != nil {
		t.Fatalf("walk parent of %q: %v", p, err)
	}
	nd, err := d.Mkdir(name, mode, c)
	if err != nil {
		t.Fatalf("Mkdir %q: %v", p, err)
	}
	return nd
}

func mustWrite(t testing.TB, fs *Filesystem, p string, off int64, data []byte) {
	t.Helper()
	n, err := mustWalk(t, fs, p).Inode().WriteAt(data, off, rootCreds)
	if err != nil || n != len(data) {
		t.Fatalf("WriteAt %q: %d, %v", p, n, err)
	}
}

func stat(t testing.TB, d vfs.Dentry) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	d.Inode().Stat(&st)
	return st
}

// setAttr is the test hook for chmod/chown, which vfs.Inode lacks: it sets
// the permission bits and owner and, as notify_change, the ctime.
func setAttr(d vfs.Dentry, mode uint32, uid, gid uint32) {
	i := d.(*dentry).inode
	i.mu.Lock()
	i.mode = i.ftype | mode&07777
	i.uid, i.gid = uid, gid
	i.ctime = nowNanos()
	i.mu.Unlock()
	if i.isRegular() {
		i.fs.store.chownFile(i.ino, int(uid), int(gid))
		i.fs.store.chmodFile(i.ino, mode)
	}
}

// setTimes is a test hook to move an inode's times. A regular file's are
// its backing's, whose ctime only the host's clock sets: it gets atime
// and mtime, and ctime becomes now.
func setTimes(d vfs.Dentry, atime, mtime, ctime int64) {
	i := d.(*dentry).inode
	if i.isRegular() {
		ts := [2]unix.Timespec{unix.NsecToTimespec(atime), unix.NsecToTimespec(mtime)}
		if err := i.fs.store.utimesFile(i.ino, &ts); err != nil {
			panic(err)
		}
		return
	}
	i.mu.Lock()
	i.atime, i.mtime, i.ctime = atime, mtime, ctime
	i.mu.Unlock()
}

// errnoOf returns err as an Errno (0 for nil) and fails if it is another
// type.
func errnoOf(t testing.TB, err error) unix.Errno {
	t.Helper()
	if err == nil {
		return 0
	}
	var e unix.Errno
	if !errors.As(err, &e) || error(e) != err {
		t.Fatalf("error %v (%T) is not a bare unix.Errno", err, err)
	}
	return e
}

// listDir returns the names IterDirents yields from off 0, "." and ".."
// included.
func listDir(t testing.TB, d vfs.Dentry) []string {
	t.Helper()
	var names []string
	err := d.IterDirents(0, func(ino uint64, next int64, typ uint8, name string) bool {
		names = append(names, name)
		return true
	})
	if err != nil {
		t.Fatalf("IterDirents: %v", err)
	}
	return names
}
