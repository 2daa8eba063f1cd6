package tmpfs

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

func TestNewRoot(t *testing.T) {
	fs := newTestFS(t, Options{Dev: 42, RootMode: 0755 | unix.S_IFREG, RootUID: 5, RootGID: 6})
	root := fs.Root()
	if root.Parent() != nil {
		t.Errorf("root Parent = %v, want nil", root.Parent())
	}
	if root.Name() != "/" {
		t.Errorf("root Name = %q", root.Name())
	}
	st := stat(t, root)
	want := unix.Stat_t{Dev: 42, Ino: 1, Nlink: 2, Mode: unix.S_IFDIR | 0755, Uid: 5, Gid: 6, Size: 40, Blksize: 4096}
	st.Atim, st.Mtim, st.Ctim = unix.Timespec{}, unix.Timespec{}, unix.Timespec{}
	if st != want {
		t.Errorf("root stat %+v, want %+v", st, want)
	}
	if n, b := fs.Usage(); n != 1 || b != 0 {
		t.Errorf("Usage = %d, %d; want 1, 0", n, b)
	}
	if got := listDir(t, root); !slices.Equal(got, []string{".", ".."}) {
		t.Errorf("root listing %q", got)
	}
}

func TestStatfs(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want unix.Statfs_t
	}{
		{"unlimited", Options{}, unix.Statfs_t{}},
		{"limits", Options{SizeLimit: 10000, MaxInodes: 10}, unix.Statfs_t{Blocks: 3, Bfree: 2, Bavail: 2, Files: 10, Ffree: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newTestFS(t, tc.opts)
			f := mustCreate(t, fs, "f", 0644, rootCreds)
			mustWrite(t, fs, "f", 0, []byte("x"))
			if _, err := fs.Root().Link("g", f, rootCreds); err != nil {
				t.Fatal(err)
			}
			var st unix.Statfs_t
			fs.Statfs(&st)
			if st.Type != unix.TMPFS_MAGIC || st.Bsize != 4096 || st.Frsize != 4096 || st.Namelen != 255 {
				t.Errorf("statfs constants: %+v", st)
			}
			got := unix.Statfs_t{Blocks: st.Blocks, Bfree: st.Bfree, Bavail: st.Bavail, Files: st.Files, Ffree: st.Ffree}
			if got != tc.want {
				t.Errorf("statfs counters %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCreateFamilyErrors(t *testing.T) {
	type mk func(d vfs.Dentry, name string, c *vfs.Credentials) error
	ops := map[string]mk{
		"Create": func(d vfs.Dentry, n string, c *vfs.Credentials) error { _, err := d.Create(n, 0644, c); return err },
		"Mkdir":  func(d vfs.Dentry, n string, c *vfs.Credentials) error { _, err := d.Mkdir(n, 0755, c); return err },
		"Symlink": func(d vfs.Dentry, n string, c *vfs.Credentials) error {
			_, err := d.Symlink(n, "target", c)
			return err
		},
		"Link": func(d vfs.Dentry, n string, c *vfs.Credentials) error {
			t, err := walk(d.(*dentry).fs, "file")
			if err != nil {
				return err
			}
			_, err = d.Link(n, t, c)
			return err
		},
	}
	for opName, op := range ops {
		for _, tc := range []struct {
			name string
			dir  string
			new  string
			c    *vfs.Credentials
			want unix.Errno
		}{
			{"ok", "", "new", rootCreds, 0},
			{"exists", "", "file", rootCreds, unix.EEXIST},
			{"exists dir", "", "dir", userCreds, unix.EEXIST},
			{"not a directory", "file", "x", rootCreds, unix.ENOTDIR},
			{"no write permission", "ro", "x", userCreds, unix.EACCES},
			{"root ignores permissions", "ro", "x", rootCreds, 0},
			{"removed directory", "gone", "x", rootCreds, unix.ENOENT},
			{"inode limit", "", "x", rootCreds, unix.ENOSPC},
		} {
			t.Run(opName+"/"+tc.name, func(t *testing.T) {
				opts := Options{}
				if tc.want == unix.ENOSPC {
					opts.MaxInodes = 5 // root, file, dir, ro, gone
				}
				fs := newTestFS(t, opts)
				mustCreate(t, fs, "file", 0644, rootCreds)
				mustMkdir(t, fs, "dir", 0755, rootCreds)
				mustMkdir(t, fs, "ro", 0555, rootCreds)
				gone := mustMkdir(t, fs, "gone", 0777, rootCreds)
				if tc.want != unix.ENOSPC {
					if err := fs.Root().Rmdir("gone", rootCreds); err != nil {
						t.Fatal(err)
					}
				}
				var d vfs.Dentry = gone
				if tc.dir != "gone" {
					d = mustWalk(t, fs, tc.dir)
				}
				if got := errnoOf(t, op(d, tc.new, tc.c)); got != tc.want {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
				if tc.want == 0 {
					if _, err := d.Lookup(tc.new); err != nil {
						t.Errorf("Lookup after success: %v", err)
					}
				}
			})
		}
	}
}

func TestNewInodeAttributes(t *testing.T) {
	fs := newTestFS(t, Options{RootMode: 0777})
	sg := mustMkdir(t, fs, "sg", 0777, rootCreds)
	setAttr(sg, 02777, 0, 500)
	for _, tc := range []struct {
		name     string
		op       string
		dir      string
		mode     uint32
		c        *vfs.Credentials
		wantMode uint32
		wantGID  uint32
	}{
		{"file", "create", "", 0640, userCreds, unix.S_IFREG | 0640, 1000},
		{"file all bits", "create", "", 0177777, userCreds, unix.S_IFREG | 07777, 1000},
		{"dir drops suid sgid", "mkdir", "", 07777, userCreds, unix.S_IFDIR | 01777, 1000},
		{"symlink", "symlink", "", 0, userCreds, unix.S_IFLNK | 0777, 1000},
		{"sgid dir: file group", "create", "sg", 0644, userCreds, unix.S_IFREG | 0644, 500},
		{"sgid dir: dir inherits", "mkdir", "sg", 0755, userCreds, unix.S_IFDIR | 02755, 500},
		{"sgid dir: symlink group", "symlink", "sg", 0, userCreds, unix.S_IFLNK | 0777, 500},
		{"sgid dir: strip sgid not in group", "create", "sg", 02775, userCreds, unix.S_IFREG | 0775, 500},
		{"sgid dir: keep sgid without group exec", "create", "sg", 02765, userCreds, unix.S_IFREG | 02765, 500},
		{"sgid dir: keep sgid in group", "create", "sg", 02775, &vfs.Credentials{UID: 7, GID: 7, Groups: []uint32{500}}, unix.S_IFREG | 02775, 500},
		{"sgid dir: keep sgid root", "create", "sg", 02775, rootCreds, unix.S_IFREG | 02775, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustWalk(t, fs, tc.dir)
			name := tc.op + "-" + tc.name
			var nd vfs.Dentry
			var err error
			switch tc.op {
			case "create":
				nd, err = d.Create(name, tc.mode, tc.c)
			case "mkdir":
				nd, err = d.Mkdir(name, tc.mode, tc.c)
			case "symlink":
				nd, err = d.Symlink(name, "t", tc.c)
			}
			if err != nil {
				t.Fatal(err)
			}
			st := stat(t, nd)
			if st.Mode != tc.wantMode || st.Gid != tc.wantGID || st.Uid != tc.c.UID {
				t.Errorf("mode %o uid %d gid %d, want %o %d %d", st.Mode, st.Uid, st.Gid, tc.wantMode, tc.c.UID, tc.wantGID)
			}
			if st.Atim != st.Mtim || st.Mtim != st.Ctim {
				t.Errorf("times differ: %v %v %v", st.Atim, st.Mtim, st.Ctim)
			}
			if nd.Name() != name || nd.Parent() != d {
				t.Errorf("Name %q Parent %v", nd.Name(), nd.Parent())
			}
		})
	}
}

func TestInodeNumbersUnique(t *testing.T) {
	fs := newTestFS(t, Options{})
	seen := map[uint64]bool{1: true}
	for k := range 50 {
		name := string(rune('a'+k%26)) + string(rune('a'+k/26))
		var d vfs.Dentry
		if k%2 == 0 {
			d = mustCreate(t, fs, name, 0644, rootCreds)
		} else {
			d = mustMkdir(t, fs, name, 0755, rootCreds)
		}
		ino := d.Inode().Ino()
		if seen[ino] {
			t.Fatalf("inode number %d reused", ino)
		}
		seen[ino] = true
		if k%3 == 0 {
			fs.Root().Unlink(name, rootCreds)
			fs.Root().Rmdir(name, rootCreds)
		}
	}
}

func TestReadWrite(t *testing.T) {
	fs := newTestFS(t, Options{})
	f := mustCreate(t, fs, "f", 0644, rootCreds).Inode()
	if n, err := f.WriteAt([]byte("hello"), 0, rootCreds); n != 5 || err != nil {
		t.Fatalf("WriteAt: %d %v", n, err)
	}
	if n, err := f.WriteAt([]byte("x"), 1<<20, rootCreds); n != 1 || err != nil {
		t.Fatalf("WriteAt hole: %d %v", n, err)
	}
	var st unix.Stat_t
	f.Stat(&st)
	if st.Size != 1<<20+1 || st.Blocks != 16 {
		t.Errorf("after hole: size %d blocks %d, want %d 16", st.Size, st.Blocks, 1<<20+1)
	}
	for _, tc := range []struct {
		name    string
		off     int64
		n       int
		want    []byte
		wantErr unix.Errno
	}{
		{"start", 0, 5, []byte("hello"), 0},
		{"into hole", 3, 5, []byte("lo\x00\x00\x00"), 0},
		{"short at EOF", 1 << 20, 10, []byte("x"), 0},
		{"at EOF", 1<<20 + 1, 10, []byte{}, 0},
		{"past EOF", 1 << 30, 10, []byte{}, 0},
		{"empty", 0, 0, []byte{}, 0},
		{"negative", -1, 1, []byte{}, unix.EINVAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := bytes.Repeat([]byte{0xff}, tc.n)
			n, err := f.ReadAt(buf, tc.off)
			if errnoOf(t, err) != tc.wantErr || !bytes.Equal(buf[:n], tc.want) {
				t.Errorf("ReadAt = %q, %v; want %q, %v", buf[:n], err, tc.want, tc.wantErr)
			}
		})
	}
	for _, tc := range []struct {
		name    string
		off     int64
		n       int
		wantN   int
		wantErr unix.Errno
	}{
		{"negative", -1, 1, 0, unix.EINVAL},
		// pwrite's rw_verify_area refuses a range whose end overflows
		// before the file system's limit (EFBIG, or shortening) is
		// reached; the data is the backing's, written by pwrite.
		{"at max size", math.MaxInt64, 1, 0, unix.EINVAL},
		{"past max size", math.MaxInt64 - 2, 5, 0, unix.EINVAL},
		{"empty at max size", math.MaxInt64, 0, 0, 0},
	} {
		t.Run("write "+tc.name, func(t *testing.T) {
			g := mustCreate(t, fs, "w "+tc.name, 0644, rootCreds).Inode()
			n, err := g.WriteAt(make([]byte, tc.n), tc.off, rootCreds)
			if n != tc.wantN || errnoOf(t, err) != tc.wantErr {
				t.Errorf("WriteAt = %d, %v; want %d, %v", n, err, tc.wantN, tc.wantErr)
			}
		})
	}
	// Append.
	n, end, err := f.Append([]byte("yz"), rootCreds)
	if n != 2 || end != 1<<20+3 || err != nil {
		t.Errorf("Append = %d, %d, %v", n, end, err)
	}
	// Non-regular files.
	d := mustMkdir(t, fs, "d", 0755, rootCreds).Inode()
	s, _ := fs.Root().Symlink("s", "f", rootCreds)
	for _, tc := range []struct {
		name string
		i    vfs.Inode
		want unix.Errno
	}{{"dir", d, unix.EISDIR}, {"symlink", s.Inode(), unix.EINVAL}} {
		if _, err := tc.i.ReadAt(make([]byte, 1), 0); errnoOf(t, err) != tc.want {
			t.Errorf("%s ReadAt: %v", tc.name, err)
		}
		if _, err := tc.i.WriteAt(make([]byte, 1), 0, rootCreds); errnoOf(t, err) != tc.want {
			t.Errorf("%s WriteAt: %v", tc.name, err)
		}
		if _, _, err := tc.i.Append(make([]byte, 1), rootCreds); errnoOf(t, err) != tc.want {
			t.Errorf("%s Append: %v", tc.name, err)
		}
		if err := tc.i.Truncate(0, nil); errnoOf(t, err) != tc.want {
			t.Errorf("%s Truncate: %v", tc.name, err)
		}
	}
	if _, err := f.Readlink(); errnoOf(t, err) != unix.EINVAL {
		t.Errorf("Readlink of a file: %v", err)
	}
	if tgt, err := s.Inode().Readlink(); tgt != "f" || err != nil {
		t.Errorf("Readlink = %q, %v", tgt, err)
	}
}

// TestWriteTimesAndPrivs: a write, and a truncate (even to the same size:
// do_truncate -> setattr_should_drop_suidgid), by a caller without
// CAP_FSETID drop SUID, and SGID when group-executable or the caller is not
// in the group; root keeps them.
func TestWriteTimesAndPrivs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     uint32
		c        *vfs.Credentials
		wantMode uint32
	}{
		{"root keeps", 06755, rootCreds, 06755},
		{"suid dropped", 04755, userCreds, 0755},
		{"sgid with group exec dropped", 02775, userCreds, 0775},
		{"sgid without group exec kept in group", 02765, userCreds, 02765},
		{"sgid without group exec dropped outside group", 02765, strangerCreds, 0765},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newTestFS(t, Options{})
			d := mustCreate(t, fs, "f", 0666, userCreds)
			setAttr(d, tc.mode, 1000, 1000)
			setTimes(d, 1, 1, 1)
			if _, err := d.Inode().WriteAt([]byte("x"), 0, tc.c); err != nil {
				t.Fatal(err)
			}
			st := stat(t, d)
			if st.Mode&07777 != tc.wantMode {
				t.Errorf("mode %o, want %o", st.Mode&07777, tc.wantMode)
			}
			if st.Mtim.Nano() == 1 || st.Ctim != st.Mtim || st.Atim.Nano() != 1 {
				t.Errorf("times after write: a %v m %v c %v", st.Atim, st.Mtim, st.Ctim)
			}
			setAttr(d, tc.mode, 1000, 1000)
			if err := d.Inode().Truncate(1, tc.c); err != nil {
				t.Fatal(err)
			}
			if st := stat(t, d); st.Mode&07777 != tc.wantMode {
				t.Errorf("mode after truncate %o, want %o", st.Mode&07777, tc.wantMode)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	fs := newTestFS(t, Options{})
	d := mustCreate(t, fs, "f", 0644, rootCreds)
	f := d.Inode()
	mustWrite(t, fs, "f", 0, bytes.Repeat([]byte{7}, 10000))
	for _, tc := range []struct {
		size       int64
		wantBlocks int64
		wantErr    unix.Errno
	}{
		{5000, 16, 0},
		{100000, 16, 0},
		{5000, 16, 0},
		{4096, 8, 0},
		{-1, 8, unix.EINVAL},
		{0, 0, 0},
		{1 << 40, 0, 0},
	} {
		setTimes(d, 1, 1, 1)
		err := f.Truncate(tc.size, rootCreds)
		if errnoOf(t, err) != tc.wantErr {
			t.Fatalf("Truncate(%d) = %v, want %v", tc.size, err, tc.wantErr)
		}
		st := stat(t, d)
		if st.Blocks != tc.wantBlocks {
			t.Errorf("Truncate(%d): blocks %d, want %d", tc.size, st.Blocks, tc.wantBlocks)
		}
		if err == nil && (st.Size != tc.size || st.Mtim.Nano() == 1 || st.Ctim.Nano() == 1) {
			t.Errorf("Truncate(%d): size %d, mtime %v ctime %v", tc.size, st.Size, st.Mtim, st.Ctim)
		}
		if err != nil && st.Mtim.Nano() != 1 {
			t.Errorf("failed Truncate changed mtime")
		}
	}
	// Bytes past a shrink read as zeros after growing again.
	mustWrite(t, fs, "f", 0, bytes.Repeat([]byte{9}, 8192))
	f.Truncate(100, nil)
	f.Truncate(8192, nil)
	buf := make([]byte, 8192)
	f.ReadAt(buf, 0)
	if !bytes.Equal(buf[:100], bytes.Repeat([]byte{9}, 100)) || !bytes.Equal(buf[100:], make([]byte, 8092)) {
		t.Errorf("data after shrink and grow is wrong")
	}
}

func TestSizeLimit(t *testing.T) {
	fs := newTestFS(t, Options{SizeLimit: 3 * 4096})
	f := mustCreate(t, fs, "f", 0644, rootCreds).Inode()
	if n, err := f.WriteAt(make([]byte, 8192), 100, rootCreds); n != 8192 || err != nil {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if n, err := f.WriteAt(make([]byte, 8192), 8192+100, rootCreds); n != 4096-100 || err != nil {
		t.Fatalf("partial WriteAt = %d, %v; want %d, nil", n, err, 4096-100)
	}
	if n, err := f.WriteAt(make([]byte, 1), 1<<20, rootCreds); n != 0 || errnoOf(t, err) != unix.ENOSPC {
		t.Fatalf("WriteAt when full = %d, %v", n, err)
	}
	if f.Size() != 3*4096 {
		t.Errorf("size %d after ENOSPC", f.Size())
	}
	if _, err := fs.Root().Symlink("s", string(make([]byte, 200)), rootCreds); errnoOf(t, err) != unix.ENOSPC {
		t.Errorf("long Symlink when full: %v", err)
	}
	if _, err := fs.Root().Symlink("s", "short", rootCreds); err != nil {
		t.Errorf("short Symlink when full: %v", err)
	}
	if err := f.Truncate(1<<30, nil); err != nil {
		t.Errorf("growing Truncate past the limit: %v", err)
	}
	if _, b := fs.Usage(); b != 3*4096 {
		t.Errorf("Usage bytes %d", b)
	}
	f.Truncate(0, nil)
	if _, b := fs.Usage(); b != 0 {
		t.Errorf("Usage bytes after truncate %d", b)
	}
}

func TestUnlinkedOpen(t *testing.T) {
	fs := newTestFS(t, Options{})
	d := mustCreate(t, fs, "f", 0644, rootCreds)
	i := d.Inode()
	mustWrite(t, fs, "f", 0, make([]byte, 10000))
	i.IncRef()
	i.IncRef()
	if err := fs.Root().Unlink("f", rootCreds); err != nil {
		t.Fatal(err)
	}
	if n, b := fs.Usage(); n != 2 || b != 3*4096 {
		t.Errorf("Usage while open: %d, %d", n, b)
	}
	if err := fs.Check(); err != nil {
		t.Fatal(err)
	}
	if n, err := i.WriteAt([]byte("x"), 20000, rootCreds); n != 1 || err != nil {
		t.Errorf("write to unlinked: %d %v", n, err)
	}
	if _, err := fs.Root().Link("g", d, rootCreds); errnoOf(t, err) != unix.ENOENT {
		t.Errorf("Link of unlinked inode: %v", err)
	}
	i.DecRef()
	if n, _ := fs.Usage(); n != 2 {
		t.Errorf("freed before the last DecRef")
	}
	i.DecRef()
	if n, b := fs.Usage(); n != 1 || b != 0 {
		t.Errorf("Usage after last DecRef: %d, %d", n, b)
	}
	var hst unix.Stat_t
	if err := i.(*inode).fs.store.statFile(i.Ino(), &hst); err != unix.ENOENT {
		t.Errorf("backing of a freed inode: %v, want ENOENT", err)
	}
	// A dentry obtained before the unlink can still be opened: the inode is
	// revived until its last reference goes.
	i.IncRef()
	if n, _ := fs.Usage(); n != 2 {
		t.Errorf("revived inode not counted")
	}
	if err := fs.Check(); err != nil {
		t.Fatal(err)
	}
	i.DecRef()
	// Without references an unlink frees at once.
	mustCreate(t, fs, "h", 0644, rootCreds)
	mustWrite(t, fs, "h", 0, []byte("x"))
	fs.Root().Unlink("h", rootCreds)
	if n, b := fs.Usage(); n != 1 || b != 0 {
		t.Errorf("Usage after unlink: %d, %d", n, b)
	}
}

func TestUnlinkRmdirErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   string // unlink or rmdir
		dir  string
		path string
		c    *vfs.Credentials
		want unix.Errno
	}{
		{"unlink file", "unlink", "", "f", rootCreds, 0},
		{"unlink missing", "unlink", "", "nope", rootCreds, unix.ENOENT},
		{"unlink dir", "unlink", "", "d", rootCreds, unix.EISDIR},
		{"unlink in file", "unlink", "f", "x", rootCreds, unix.ENOTDIR},
		{"unlink no perm", "unlink", "ro", "x", userCreds, unix.EACCES},
		{"unlink missing no perm", "unlink", "ro", "nope", userCreds, unix.ENOENT},
		{"unlink sticky other", "unlink", "", "f", otherCreds, unix.EPERM},
		{"unlink sticky owner", "unlink", "", "f", userCreds, 0},
		{"unlink sticky dir owner", "unlink", "sticky", "f", strangerCreds, 0},
		{"rmdir dir", "rmdir", "", "d", rootCreds, 0},
		{"rmdir file", "rmdir", "", "f", rootCreds, unix.ENOTDIR},
		{"rmdir missing", "rmdir", "", "nope", rootCreds, unix.ENOENT},
		{"rmdir nonempty", "rmdir", "", "full", rootCreds, unix.ENOTEMPTY},
		{"rmdir sticky other", "rmdir", "", "d", otherCreds, unix.EPERM},
		{"rmdir no perm", "rmdir", "ro", "x", userCreds, unix.EACCES},
		{"rmdir in file", "rmdir", "f", "x", rootCreds, unix.ENOTDIR},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newTestFS(t, Options{})
			mustCreate(t, fs, "f", 0644, userCreds)
			mustMkdir(t, fs, "d", 0755, userCreds)
			mustMkdir(t, fs, "full", 0755, rootCreds)
			mustCreate(t, fs, "full/x", 0644, rootCreds)
			mustMkdir(t, fs, "ro", 0777, rootCreds)
			mustCreate(t, fs, "ro/x", 0644, userCreds)
			mustMkdir(t, fs, "ro/x2", 0755, userCreds)
			setAttr(mustWalk(t, fs, "ro"), 0555, 0, 0)
			st := mustMkdir(t, fs, "sticky", 01777, rootCreds)
			mustCreate(t, fs, "sticky/f", 0644, userCreds)
			setAttr(st, 01777, strangerCreds.UID, 0)
			d := mustWalk(t, fs, tc.dir)
			before := stat(t, d)
			var err error
			if tc.op == "unlink" {
				err = d.Unlink(tc.path, tc.c)
			} else {
				err = d.Rmdir(tc.path, tc.c)
			}
			if got := errnoOf(t, err); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if err == nil {
				after := stat(t, d)
				if after.Size != before.Size-20 || after.Mtim == before.Mtim {
					t.Errorf("parent size %d -> %d, mtime %v -> %v", before.Size, after.Size, before.Mtim, after.Mtim)
				}
				if tc.op == "rmdir" && after.Nlink != before.Nlink-1 {
					t.Errorf("parent nlink %d -> %d", before.Nlink, after.Nlink)
				}
			}
		})
	}
}

func TestLinkErrors(t *testing.T) {
	fs := newTestFS(t, Options{})
	f := mustCreate(t, fs, "f", 0644, rootCreds)
	d := mustMkdir(t, fs, "d", 0755, rootCreds)
	other := newTestFS(t, Options{})
	of := mustCreate(t, other, "f", 0644, rootCreds)
	for _, tc := range []struct {
		name   string
		target vfs.Dentry
		newN   string
		want   unix.Errno
	}{
		{"directory", d, "x", unix.EPERM},
		{"other fs", of, "x", unix.EXDEV},
		{"exists", f, "d", unix.EEXIST},
		{"ok", f, "g", 0},
	} {
		_, err := fs.Root().Link(tc.newN, tc.target, rootCreds)
		if got := errnoOf(t, err); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if st := stat(t, f); st.Nlink != 2 {
		t.Errorf("nlink %d after link", st.Nlink)
	}
	if _, err := f.Link("x", f, rootCreds); errnoOf(t, err) != unix.ENOTDIR {
		t.Errorf("Link in a file: %v", err)
	}
}

func TestLookup(t *testing.T) {
	fs := newTestFS(t, Options{})
	f := mustCreate(t, fs, "f", 0644, rootCreds)
	if got, err := fs.Root().Lookup("f"); err != nil || got != f {
		t.Errorf("Lookup(f) = %v, %v", got, err)
	}
	if _, err := fs.Root().Lookup("g"); errnoOf(t, err) != unix.ENOENT {
		t.Errorf("Lookup(g): %v", err)
	}
	if _, err := f.Lookup("x"); errnoOf(t, err) != unix.ENOTDIR {
		t.Errorf("Lookup in file: %v", err)
	}
	for _, op := range []func() error{
		func() error { _, err := f.Create("x", 0, rootCreds); return err },
		func() error { _, err := f.Mkdir("x", 0, rootCreds); return err },
		func() error { _, err := f.Symlink("x", "y", rootCreds); return err },
		func() error { return f.Unlink("x", rootCreds) },
		func() error { return f.Rmdir("x", rootCreds) },
		func() error { return f.Rename("x", fs.Root(), "y", 0, rootCreds) },
		func() error { return fs.Root().Rename("f", f, "y", 0, rootCreds) },
		func() error { return f.IterDirents(0, nil) },
	} {
		if err := op(); errnoOf(t, err) != unix.ENOTDIR {
			t.Errorf("directory op on a file: %v", err)
		}
	}
}

func TestRename(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to string
		flags    uint32
		c        *vfs.Credentials
		want     unix.Errno
		check    func(t *testing.T, fs *Filesystem)
	}{
		{"file", "a/f", "b/g", 0, rootCreds, 0, func(t *testing.T, fs *Filesystem) {
			if _, err := walk(fs, "b/g"); err != nil {
				t.Error(err)
			}
		}},
		{"dir moves dotdot", "a/sub", "b/sub", 0, rootCreds, 0, func(t *testing.T, fs *Filesystem) {
			if st := stat(t, mustWalk(t, fs, "a")); st.Nlink != 3 {
				t.Errorf("a nlink %d", st.Nlink)
			}
			if st := stat(t, mustWalk(t, fs, "b")); st.Nlink != 4 {
				t.Errorf("b nlink %d", st.Nlink)
			}
			if p := mustWalk(t, fs, "b/sub").Parent(); p != mustWalk(t, fs, "b") {
				t.Errorf("parent not updated")
			}
		}},
		{"over file frees it", "a/f", "b/f2", 0, rootCreds, 0, func(t *testing.T, fs *Filesystem) {
			if n, _ := fs.Usage(); n != 10 {
				t.Errorf("inodes %d", n)
			}
		}},
		{"over empty dir", "a/sub", "b/empty", 0, rootCreds, 0, func(t *testing.T, fs *Filesystem) {
			if st := stat(t, mustWalk(t, fs, "b")); st.Nlink != 3 {
				t.Errorf("b nlink %d", st.Nlink)
			}
		}},
		{"exchange file and dir", "a/f", "b/empty", unix.RENAME_EXCHANGE, rootCreds, 0, func(t *testing.T, fs *Filesystem) {
			if !mustWalk(t, fs, "a/f").Inode().(*inode).isDir() || mustWalk(t, fs, "b/empty").Inode().(*inode).isDir() {
				t.Error("not exchanged")
			}
			if st := stat(t, mustWalk(t, fs, "a")); st.Nlink != 5 {
				t.Errorf("a nlink %d", st.Nlink)
			}
			if st := stat(t, mustWalk(t, fs, "b")); st.Nlink != 2 {
				t.Errorf("b nlink %d", st.Nlink)
			}
		}},
		{"missing", "a/nope", "b/x", 0, rootCreds, unix.ENOENT, nil},
		{"noreplace", "a/f", "b/f2", unix.RENAME_NOREPLACE, rootCreds, unix.EEXIST, nil},
		{"exchange missing", "a/f", "b/x", unix.RENAME_EXCHANGE, rootCreds, unix.ENOENT, nil},
		{"bad flags", "a/f", "b/x", 0x100, rootCreds, unix.EINVAL, nil},
		{"exchange noreplace", "a/f", "b/f2", unix.RENAME_EXCHANGE | unix.RENAME_NOREPLACE, rootCreds, unix.EINVAL, nil},
		{"whiteout", "a/f", "b/x", unix.RENAME_WHITEOUT, rootCreds, unix.EINVAL, nil},
		{"into itself", "a", "a/sub/x", 0, rootCreds, unix.EINVAL, nil},
		{"over ancestor", "a/sub", "a", 0, rootCreds, unix.ENOTEMPTY, nil},
		{"dir over file", "a/sub", "b/f2", 0, rootCreds, unix.ENOTDIR, nil},
		{"file over dir", "a/f", "b/empty", 0, rootCreds, unix.EISDIR, nil},
		{"over nonempty", "b/empty", "a", 0, rootCreds, unix.ENOTEMPTY, nil},
		{"same inode", "a/f", "a/link", 0, rootCreds, 0, func(t *testing.T, fs *Filesystem) {
			if _, err := walk(fs, "a/f"); err != nil {
				t.Error("source removed")
			}
		}},
		{"no permission", "a/f", "ro/x", 0, userCreds, unix.EACCES, nil},
		{"dir needs write on itself", "a/rosub", "b/x", 0, userCreds, unix.EACCES, nil},
		{"dir same parent no write on itself", "a/rosub", "a/y", 0, userCreds, 0, nil},
		{"sticky", "st/f", "b/x", 0, userCreds, unix.EPERM, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newTestFS(t, Options{})
			mustMkdir(t, fs, "a", 0777, rootCreds)
			mustMkdir(t, fs, "b", 0777, rootCreds)
			mustMkdir(t, fs, "ro", 0555, rootCreds)
			mustMkdir(t, fs, "st", 01777, rootCreds)
			mustCreate(t, fs, "st/f", 0644, otherCreds)
			mustMkdir(t, fs, "a/sub", 0755, rootCreds)
			mustMkdir(t, fs, "a/rosub", 0555, userCreds)
			mustMkdir(t, fs, "b/empty", 0755, rootCreds)
			f := mustCreate(t, fs, "a/f", 0644, rootCreds)
			mustCreate(t, fs, "b/f2", 0644, rootCreds)
			if _, err := mustWalk(t, fs, "a").Link("link", f, rootCreds); err != nil {
				t.Fatal(err)
			}
			od, on, _ := walkParent(fs, tc.from)
			nd, nn, _ := walkParent(fs, tc.to)
			if got := errnoOf(t, od.Rename(on, nd, nn, tc.flags, tc.c)); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, fs)
			}
		})
	}
}

func TestIterDirents(t *testing.T) {
	fs := newTestFS(t, Options{})
	d := mustMkdir(t, fs, "d", 0755, rootCreds)
	for _, n := range []string{"a", "b", "c", "e"} {
		mustCreate(t, fs, "d/"+n, 0644, rootCreds)
	}
	mustMkdir(t, fs, "d/sub", 0755, rootCreds)
	type ent struct {
		name string
		typ  uint8
		ino  uint64
	}
	var got []ent
	var nexts []int64
	d.IterDirents(0, func(ino uint64, next int64, typ uint8, name string) bool {
		got = append(got, ent{name, typ, ino})
		nexts = append(nexts, next)
		return true
	})
	want := []ent{
		{".", unix.DT_DIR, d.Inode().Ino()},
		{"..", unix.DT_DIR, 1},
		// Newest first, as Linux 6.18 tmpfs lists.
		{"sub", unix.DT_DIR, mustWalk(t, fs, "d/sub").Inode().Ino()},
		{"e", unix.DT_REG, mustWalk(t, fs, "d/e").Inode().Ino()},
		{"c", unix.DT_REG, mustWalk(t, fs, "d/c").Inode().Ino()},
		{"b", unix.DT_REG, mustWalk(t, fs, "d/b").Inode().Ino()},
		{"a", unix.DT_REG, mustWalk(t, fs, "d/a").Inode().Ino()},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listing %v, want %v", got, want)
	}
	// Resume after "e" while "c" and "sub" go away and "f" comes: the
	// older "b" and "a" follow, "c" is gone, the new "f" is not reached.
	d.Rmdir("sub", rootCreds)
	d.Unlink("c", rootCreds)
	mustCreate(t, fs, "d/f", 0644, rootCreds)
	var rest []string
	d.IterDirents(nexts[3], func(ino uint64, next int64, typ uint8, name string) bool {
		rest = append(rest, name)
		return true
	})
	if !slices.Equal(rest, []string{"b", "a"}) {
		t.Errorf("resumed listing %q", rest)
	}
	// Stopping early.
	var first []string
	d.IterDirents(0, func(ino uint64, next int64, typ uint8, name string) bool {
		first = append(first, name)
		return len(first) < 3
	})
	if !slices.Equal(first, []string{".", "..", "f"}) {
		t.Errorf("early stop listing %q", first)
	}
	// Symlink type, negative offset, callbacks into the file system.
	fs.Root().Symlink("s", "x", rootCreds)
	if got := listDir(t, fs.Root()); !slices.Equal(got, []string{".", "..", "s", "d"}) {
		t.Errorf("root listing %q", got)
	}
	if err := d.IterDirents(-1, nil); errnoOf(t, err) != unix.EINVAL {
		t.Errorf("negative offset: %v", err)
	}
	err := fs.Root().IterDirents(0, func(ino uint64, next int64, typ uint8, name string) bool {
		if name == "d" {
			mustCreate(t, fs, "new", 0644, rootCreds) // takes the tree lock
		}
		return true
	})
	if err != nil {
		t.Error(err)
	}
	// A removed directory.
	g := mustMkdir(t, fs, "gone", 0755, rootCreds)
	fs.Root().Rmdir("gone", rootCreds)
	if err := g.IterDirents(0, func(uint64, int64, uint8, string) bool { return true }); errnoOf(t, err) != unix.ENOENT {
		t.Errorf("IterDirents on removed dir: %v", err)
	}
	if st := stat(t, g); st.Nlink != 0 || st.Size != 40 {
		t.Errorf("removed dir nlink %d size %d", st.Nlink, st.Size)
	}
	// Many entries span several batches.
	for k := range 100 {
		mustCreate(t, fs, "d/many"+string(rune('0'+k/10))+string(rune('0'+k%10)), 0644, rootCreds)
	}
	if n := len(listDir(t, d)); n != 2+4+100 {
		t.Errorf("listed %d entries", n)
	}
}

func TestCheckPermission(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode uint32
		c    *vfs.Credentials
		mask uint32
		want unix.Errno
	}{
		{"owner read", unix.S_IFREG | 0400, userCreds, vfs.MayRead, 0},
		{"owner write denied", unix.S_IFREG | 0477, userCreds, vfs.MayWrite, unix.EACCES},
		{"group read", unix.S_IFREG | 0040, otherCreds, vfs.MayRead, 0},
		{"group only class", unix.S_IFREG | 0407, otherCreds, vfs.MayRead, unix.EACCES},
		{"other read", unix.S_IFREG | 0004, strangerCreds, vfs.MayRead, 0},
		{"other rw denied", unix.S_IFREG | 0004, strangerCreds, vfs.MayRead | vfs.MayWrite, unix.EACCES},
		{"root read", unix.S_IFREG | 0000, rootCreds, vfs.MayRead | vfs.MayWrite, 0},
		{"root exec no x", unix.S_IFREG | 0666, rootCreds, vfs.MayExec, unix.EACCES},
		{"root exec some x", unix.S_IFREG | 0001, rootCreds, vfs.MayExec, 0},
		{"root search dir", unix.S_IFDIR | 0000, rootCreds, vfs.MayExec | vfs.MayWrite, 0},
		{"search dir", unix.S_IFDIR | 0711, strangerCreds, vfs.MayExec, 0},
		{"list dir denied", unix.S_IFDIR | 0711, strangerCreds, vfs.MayRead, unix.EACCES},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newTestFS(t, Options{})
			d := mustCreate(t, fs, "f", 0, rootCreds)
			if tc.mode&unix.S_IFMT == unix.S_IFDIR {
				d = mustMkdir(t, fs, "d", 0, rootCreds)
			}
			setAttr(d, tc.mode, 1000, 1000)
			if got := errnoOf(t, d.Inode().CheckPermission(tc.c, tc.mask)); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRelatime(t *testing.T) {
	now := time.Now().UnixNano()
	hour := int64(time.Hour)
	for _, tc := range []struct {
		name                string
		atime, mtime, ctime int64
		want                bool
	}{
		{"atime before mtime", now - 2*hour, now - hour, now - 3*hour, true},
		{"atime equals ctime", now - hour, now - 2*hour, now - hour, true},
		{"atime newest, recent", now - hour, now - 2*hour, now - 2*hour, false},
		{"atime newest, over a day", now - 25*hour, now - 26*hour, now - 26*hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newTestFS(t, Options{})
			d := mustMkdir(t, fs, "d", 0755, rootCreds)
			s, _ := fs.Root().Symlink("s", "t", rootCreds)
			for _, x := range []struct {
				name string
				d    vfs.Dentry
				op   func()
			}{
				// A regular file's atime is its backing's, which
				// the host's relatime moves (its ctime cannot be
				// set here).
				{"readdir", d, func() { d.IterDirents(0, func(uint64, int64, uint8, string) bool { return true }) }},
				{"readlink", s, func() { s.Inode().Readlink() }},
			} {
				setTimes(x.d, tc.atime, tc.mtime, tc.ctime)
				x.op()
				st := stat(t, x.d)
				if changed := st.Atim.Nano() != tc.atime; changed != tc.want {
					t.Errorf("%s: atime updated %v, want %v", x.name, changed, tc.want)
				}
				if st.Mtim.Nano() != tc.mtime || st.Ctim.Nano() != tc.ctime {
					t.Errorf("%s: mtime or ctime changed", x.name)
				}
			}
		})
	}
}

func TestSymlinkBlocks(t *testing.T) {
	fs := newTestFS(t, Options{})
	for _, tc := range []struct {
		n          int
		wantBlocks int64
		wantErr    unix.Errno
	}{{1, 0, 0}, {127, 0, 0}, {128, 8, 0}, {4095, 8, 0}, {4096, 0, unix.ENAMETOOLONG}, {0, 0, unix.ENOENT}} {
		name := "s" + string(rune('a'+tc.n%26)) + string(rune('a'+tc.n/26%26))
		d, err := fs.Root().Symlink(name, string(bytes.Repeat([]byte{'x'}, tc.n)), rootCreds)
		if errnoOf(t, err) != tc.wantErr {
			t.Errorf("Symlink(%d bytes): %v, want %v", tc.n, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		st := stat(t, d)
		if st.Blocks != tc.wantBlocks || st.Size != int64(tc.n) || st.Mode != unix.S_IFLNK|0777 {
			t.Errorf("Symlink(%d bytes): blocks %d size %d mode %o", tc.n, st.Blocks, st.Size, st.Mode)
		}
	}
}

func TestStatx(t *testing.T) {
	fs := newTestFS(t, Options{Dev: unix.Mkdev(3, 7)})
	f := mustCreate(t, fs, "f", 0640, userCreds)
	mustWrite(t, fs, "f", 0, []byte("abc"))
	var st unix.Stat_t
	var stx unix.Statx_t
	f.Inode().Stat(&st)
	f.Inode().Statx(&stx)
	if stx.Mask != unix.STATX_BASIC_STATS|unix.STATX_BTIME || stx.Attributes != 0 ||
		stx.Ino != st.Ino || stx.Size != 3 || stx.Blocks != 8 || stx.Nlink != 1 ||
		uint32(stx.Mode) != st.Mode || stx.Uid != 1000 || stx.Gid != 1000 ||
		stx.Dev_major != 3 || stx.Dev_minor != 7 || stx.Blksize != 4096 ||
		stx.Mtime.Sec != st.Mtim.Sec || int64(stx.Mtime.Nsec) != st.Mtim.Nsec ||
		stx.Btime.Sec > stx.Mtime.Sec {
		t.Errorf("statx %+v\nstat %+v", stx, st)
	}
	fs.Root().Inode().Statx(&stx)
	if stx.Attributes != unix.STATX_ATTR_MOUNT_ROOT {
		t.Errorf("root attributes %#x", stx.Attributes)
	}
}

func TestTimesOnNamespaceOps(t *testing.T) {
	fs := newTestFS(t, Options{})
	d := mustMkdir(t, fs, "d", 0755, rootCreds)
	f := mustCreate(t, fs, "d/f", 0644, rootCreds)
	type times struct{ da, dm, dc, fa, fm, fc bool }
	for _, tc := range []struct {
		name string
		op   func() error
		want times
	}{
		{"link", func() error { _, err := d.Link("g", f, rootCreds); return err }, times{dm: true, dc: true, fc: true}},
		{"rename in dir", func() error { return d.Rename("g", d, "h", 0, rootCreds) }, times{dm: true, dc: true, fc: true}},
		{"unlink", func() error { return d.Unlink("h", rootCreds) }, times{dm: true, dc: true, fc: true}},
		{"create", func() error { _, err := d.Create("x", 0644, rootCreds); return err }, times{dm: true, dc: true}},
		{"failed create", func() error { _, err := d.Create("x", 0644, rootCreds); return err }, times{}},
		{"lookup", func() error { _, err := d.Lookup("f"); return err }, times{}},
	} {
		setTimes(d, 1, 1, 1)
		setTimes(f, 1, 1, 1)
		// A regular file's ctime is its backing's, set by the host.
		fst0 := stat(t, f)
		fc := fst0.Ctim.Nano()
		tc.op()
		ds, fst := stat(t, d), stat(t, f)
		got := times{ds.Atim.Nano() != 1, ds.Mtim.Nano() != 1, ds.Ctim.Nano() != 1, fst.Atim.Nano() != 1, fst.Mtim.Nano() != 1, fst.Ctim.Nano() != fc}
		if got != tc.want {
			t.Errorf("%s: changed %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
