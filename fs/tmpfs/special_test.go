package tmpfs

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// TestMknodDevices follows vfs_mknod: the directory's permission first
// (EACCES), then CAP_MKNOD for a device node other than a whiteout (EPERM),
// and the number comes back in st_rdev and statx's rdev fields.
func TestMknodDevices(t *testing.T) {
	fs := newTestFS(t, Options{})
	if _, err := fs.Root().Mkdir("ro", 0o755, rootCreds); err != nil {
		t.Fatal(err)
	}
	nullDev := uint64(unix.Mkdev(1, 3))
	bigDev := uint64(0x11112c70) // 300:70000 as new_encode_dev packs it
	tests := []struct {
		name string
		dir  string
		mode uint32
		rdev uint64
		cred *vfs.Credentials
		want error
	}{
		{"root char", "", unix.S_IFCHR | 0o644, nullDev, rootCreds, nil},
		{"root block", "", unix.S_IFBLK | 0o600, bigDev, rootCreds, nil},
		{"user char", "", unix.S_IFCHR | 0o644, nullDev, userCreds, unix.EPERM},
		{"user block", "", unix.S_IFBLK | 0o644, 0, userCreds, unix.EPERM},
		{"user whiteout", "", unix.S_IFCHR, 0, userCreds, nil},
		{"user char, dir not writable", "ro", unix.S_IFCHR | 0o644, nullDev, userCreds, unix.EACCES},
		{"user whiteout, dir not writable", "ro", unix.S_IFCHR, 0, userCreds, unix.EACCES},
		{"directory type", "", unix.S_IFDIR | 0o755, 0, rootCreds, unix.EPERM},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := walk(fs, tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			name := string(rune('a' + i))
			d, err := dir.(vfs.Mknoder).Mknod(name, tc.mode, tc.rdev, tc.cred)
			if err != tc.want {
				t.Fatalf("Mknod = %v, want %v", err, tc.want)
			}
			if err != nil {
				if _, lerr := dir.Lookup(name); lerr != unix.ENOENT {
					t.Fatalf("failed mknod left %q: %v", name, lerr)
				}
				return
			}
			var st unix.Stat_t
			d.Inode().Stat(&st)
			if st.Mode != tc.mode || st.Rdev != tc.rdev || st.Size != 0 || st.Blocks != 0 {
				t.Fatalf("stat mode %o rdev %#x size %d blocks %d, want mode %o rdev %#x", st.Mode, st.Rdev, st.Size, st.Blocks, tc.mode, tc.rdev)
			}
			var stx unix.Statx_t
			d.Inode().Statx(&stx)
			if stx.Rdev_major != unix.Major(tc.rdev) || stx.Rdev_minor != unix.Minor(tc.rdev) {
				t.Fatalf("statx rdev %d:%d, want %d:%d", stx.Rdev_major, stx.Rdev_minor, unix.Major(tc.rdev), unix.Minor(tc.rdev))
			}
			if got := d.Inode().(vfs.DeviceInode).Rdev(); got != tc.rdev {
				t.Fatalf("Rdev() = %#x", got)
			}
		})
	}
	// A FIFO keeps no number, whatever mknod was given.
	d, err := fs.Root().(vfs.Mknoder).Mknod("fifo", unix.S_IFIFO|0o600, nullDev, userCreds)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Inode().(vfs.DeviceInode).Rdev(); got != 0 {
		t.Fatalf("FIFO rdev %#x", got)
	}
}

// TestShadowMapped moves a file's data into its shadow (as a guest's mmap
// does) and checks that reads, writes, truncate, fallocate, st_blocks and
// the mount's page count then follow the shadow, where a guest mapping
// writes directly; freeing the inode removes the shadow.
func TestShadowMapped(t *testing.T) {
	// On a host tmpfs, as the sentry puts them: st_blocks is shmem's.
	dir, err := os.MkdirTemp("/dev/shm", "shadow-test-")
	if err != nil {
		t.Skip("requires /dev/shm:", err)
	}
	defer os.RemoveAll(dir)
	fs := newTestFS(t, Options{ShadowDir: dir, SizeLimit: 16 * pageSize})
	d, err := fs.Root().Create("f", 0o644, userCreds)
	if err != nil {
		t.Fatal(err)
	}
	ino := d.Inode()
	if _, err := ino.WriteAt([]byte("hello"), 5000, userCreds); err != nil {
		t.Fatal(err)
	}
	sh := ino.(vfs.Shadowed)
	if p, _ := sh.ShadowPath(false); p != "" {
		t.Fatalf("shadow %q before any open asked for one", p)
	}
	p, err := sh.ShadowPath(true)
	if err != nil || p == "" {
		t.Fatalf("ShadowPath(true) = %q, %v", p, err)
	}
	if err := sh.Map(); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil || st.Size != 5005 {
		t.Fatalf("shadow size %d, %v", st.Size, err)
	}
	// A guest's mapping writes the shadow directly.
	hf, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	if _, err := hf.WriteAt([]byte("MAPPED"), 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if n, _ := ino.ReadAt(buf, 0); n != 6 || string(buf) != "MAPPED" {
		t.Fatalf("ReadAt after a mapping's write: %q", buf[:n])
	}
	if n, _ := ino.ReadAt(buf, 5000); n != 5 || string(buf[:5]) != "hello" {
		t.Fatalf("ReadAt 5000: %q", buf[:n])
	}
	if _, err := ino.WriteAt([]byte("written"), 100, userCreds); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 7)
	if _, err := hf.ReadAt(got, 100); err != nil || string(got) != "written" {
		t.Fatalf("shadow after WriteAt: %q, %v", got, err)
	}
	ino.Stat(&st)
	if st.Blocks != 16 {
		t.Fatalf("blocks %d, want 16 (two pages)", st.Blocks)
	}
	if _, err := ino.WriteAt(make([]byte, 20*pageSize), 0, userCreds); err != unix.ENOSPC {
		t.Fatalf("write past the size limit: %v", err)
	}
	if err := ino.(vfs.Allocator).Allocate(0, 8*pageSize, false, userCreds); err != nil {
		t.Fatal(err)
	}
	if ino.Stat(&st); st.Size != 8*pageSize || st.Blocks != 64 {
		t.Fatalf("after fallocate: size %d blocks %d", st.Size, st.Blocks)
	}
	if err := ino.(vfs.Allocator).PunchHole(pageSize, 2*pageSize, userCreds); err != nil {
		t.Fatal(err)
	}
	if ino.Stat(&st); st.Blocks != 48 {
		t.Fatalf("after punching two pages: blocks %d", st.Blocks)
	}
	if err := ino.Truncate(3, userCreds); err != nil {
		t.Fatal(err)
	}
	if err := fs.Check(); err != nil {
		t.Fatal(err)
	}
	if n, _ := ino.ReadAt(buf, 0); n != 3 || string(buf[:3]) != "MAP" {
		t.Fatalf("after truncate: %q", buf[:n])
	}
	if err := fs.Root().Unlink("f", userCreds); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("shadow of a freed inode still there: %v", err)
	}
	if used := fs.usedPages.Load(); used != 0 {
		t.Fatalf("%d pages still counted", used)
	}
}

// TestTmpfileLifetime: an O_TMPFILE inode has no name and one inode slot,
// is freed at its last reference unless linked, takes a first name with
// Link (no second slot) unless made with excl, and then lives on.
func TestTmpfileLifetime(t *testing.T) {
	fs := newTestFS(t, Options{MaxInodes: 3})
	root := fs.Root().(*dentry)
	tf := func(excl bool) *dentry {
		t.Helper()
		d, err := root.CreateTmpfile(0o600, excl, userCreds)
		if err != nil {
			t.Fatal(err)
		}
		d.Inode().IncRef() // the open's reference
		return d.(*dentry)
	}
	a := tf(false)
	if n := a.inode.nlink.Load(); n != 0 || a.Name() != "#2" {
		t.Fatalf("nlink %d name %q", n, a.Name())
	}
	if err := fs.Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Link("a", a, userCreds); err != nil {
		t.Fatal(err)
	}
	b := tf(true)
	if _, err := root.Link("b", b, userCreds); err != unix.ENOENT {
		t.Fatalf("link of an O_EXCL tmpfile: %v", err)
	}
	// Two inodes and the root fill nr_inodes=3; a first link of a
	// tmpfile took no slot, a second name of "a" needs one.
	if _, err := root.Link("a2", a, userCreds); err != unix.ENOSPC {
		t.Fatalf("extra link past nr_inodes: %v", err)
	}
	b.Inode().DecRef()
	if !b.inode.freed {
		t.Fatal("unlinked tmpfile not freed at its last reference")
	}
	a.Inode().DecRef()
	if a.inode.freed {
		t.Fatal("linked tmpfile freed")
	}
	s, err := root.CreateTmpfile(0o600, false, strangerCreds)
	if err != nil {
		t.Fatalf("tmpfile in the sticky world-writable root: %v", err)
	}
	s.Inode().IncRef()
	s.Inode().DecRef()
	ro, err := newTestFS(t, Options{}).Root().Mkdir("ro", 0o755, rootCreds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.(*dentry).CreateTmpfile(0o600, false, userCreds); err != unix.EACCES {
		t.Fatalf("tmpfile in a directory without write permission: %v", err)
	}
}

// TestIdleShadowsBounded: shadows of files nobody has open are kept up to
// MaxIdleShadows, least recently closed removed first; open and mapped
// files keep theirs, and a file whose shadow went gets a new one.
func TestIdleShadowsBounded(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "shadow-test-")
	if err != nil {
		t.Skip("requires /dev/shm:", err)
	}
	defer os.RemoveAll(dir)
	fs := newTestFS(t, Options{ShadowDir: dir, MaxIdleShadows: 3})
	var inodes []vfs.Inode
	for i := 0; i < 8; i++ {
		d, err := fs.Root().Create(string(rune('a'+i)), 0o644, rootCreds)
		if err != nil {
			t.Fatal(err)
		}
		inodes = append(inodes, d.Inode())
	}
	open := func(i int) string {
		t.Helper()
		p, err := inodes[i].(vfs.Shadowed).ShadowPath(true)
		if err != nil || p == "" {
			t.Fatalf("ShadowPath: %q, %v", p, err)
		}
		inodes[i].IncRef()
		return p
	}
	count := func() int {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	// 0 stays open, 1 is mapped, 2..7 are opened and closed in turn.
	open(0)
	open(1)
	if err := inodes[1].(vfs.Shadowed).Map(); err != nil {
		t.Fatal(err)
	}
	inodes[1].DecRef()
	var paths []string
	for i := 2; i < 8; i++ {
		paths = append(paths, open(i))
		inodes[i].DecRef()
	}
	// The idle list passed 3: 1 left it first but keeps its shadow (its
	// data is there), then 2, 3 and 4 lost theirs; 5, 6 and 7 are idle.
	if n := count(); n != 5 {
		t.Fatalf("%d shadows, want 5: the open one, the mapped one, the 3 idle", n)
	}
	if _, err := os.Stat(paths[0]); !os.IsNotExist(err) {
		t.Fatalf("oldest idle shadow kept: %v", err)
	}
	if _, err := os.Stat(paths[len(paths)-1]); err != nil {
		t.Fatalf("newest idle shadow removed: %v", err)
	}
	if p, _ := inodes[1].(vfs.Shadowed).ShadowPath(false); p == "" {
		t.Fatal("mapped file lost its shadow")
	}
	if p := open(2); p == paths[0] {
		t.Fatalf("reopened file kept a removed shadow %q", p)
	}
	inodes[0].DecRef()
	inodes[2].DecRef()
	if err := fs.Check(); err != nil {
		t.Fatal(err)
	}
}
