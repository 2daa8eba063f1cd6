package tmpfs

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// TestXattrSet follows simple_xattr_set: XATTR_CREATE on an existing name
// is EEXIST, XATTR_REPLACE or a removal of a missing one ENODATA, an empty
// value is kept (not a removal), every change moves ctime, and names list
// sorted.
func TestXattrSet(t *testing.T) {
	fs := newTestFS(t, Options{})
	d, err := fs.Root().Create("f", 0o644, rootCreds)
	if err != nil {
		t.Fatal(err)
	}
	x := d.Inode().(vfs.XattrInode)
	steps := []struct {
		name  string
		value []byte
		flags uint32
		want  error
	}{
		{"user.b", []byte("1"), 0, nil},
		{"user.b", []byte("2"), unix.XATTR_CREATE, unix.EEXIST},
		{"user.a", []byte("3"), unix.XATTR_REPLACE, unix.ENODATA},
		{"user.a", []byte{}, unix.XATTR_CREATE, nil},
		{"user.b", []byte("4"), unix.XATTR_REPLACE, nil},
		{"user.c", nil, 0, unix.ENODATA},
		{"trusted.z", []byte("5"), 0, nil},
		{"trusted.z", nil, 0, nil},
	}
	ino := d.(*dentry).inode
	for i, s := range steps {
		// A regular file's ctime is its backing's: taken before, so
		// that the host stamps the next change with a finer time.
		var before, st unix.Stat_t
		ino.Stat(&before)
		if err := x.Setxattr(s.name, s.value, s.flags); err != s.want {
			t.Fatalf("step %d: Setxattr(%q, %q, %#x) = %v, want %v", i, s.name, s.value, s.flags, err, s.want)
		}
		ino.Stat(&st)
		if moved := st.Ctim.Nano() != before.Ctim.Nano(); moved != (s.want == nil) {
			t.Fatalf("step %d: ctime moved %v", i, moved)
		}
	}
	if v, ok := x.Getxattr("user.a"); !ok || len(v) != 0 {
		t.Fatalf("empty value: %q, %v", v, ok)
	}
	if v, _ := x.Getxattr("user.b"); string(v) != "4" {
		t.Fatalf("user.b = %q", v)
	}
	if got := x.Listxattr(); !slices.Equal(got, []string{"user.a", "user.b"}) {
		t.Fatalf("Listxattr = %q", got)
	}
}
