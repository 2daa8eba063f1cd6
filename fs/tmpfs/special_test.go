package tmpfs

import (
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
