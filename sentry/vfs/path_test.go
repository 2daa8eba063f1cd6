package vfs_test

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/fs/tmpfs"
	"sentry/sentry/vfs"
)

// chain is a directory depth levels below the root of its file system,
// every level named name, made on the fly: a tree of any depth without
// making it. Only Name and Parent are implemented; visits counts the
// Parent calls of the whole chain.
type chain struct {
	vfs.Dentry
	depth  int
	name   string
	visits *int
}

func (c chain) Name() string { return c.name }

func (c chain) Parent() vfs.Dentry {
	*c.visits++
	if c.depth == 0 {
		return nil
	}
	return chain{depth: c.depth - 1, name: c.name, visits: c.visits}
}

// newTmpfs is a tmpfs for a path test, released at its end.
func newTmpfs(t *testing.T, dev uint32) *tmpfs.Filesystem {
	t.Helper()
	fs, err := tmpfs.New(tmpfs.Options{Dev: unix.Mkdev(0, dev), RootMode: 0o755})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fs.Release)
	return fs
}

// TestPrependPath: the path of a dentry is built from it up into a
// bounded buffer, as Linux's prepend_path into getcwd's page: the root,
// nested names, guest mounts on a directory and stacked on a mount's
// root, an unlinked directory (its last name, as d_path before its
// " (deleted)"), and ENAMETOOLONG for a path one byte longer than the
// buffer, exactly at which it still fits. A chain deeper than the buffer
// can name is walked no further than the buffer fills (the old PathOf
// built all of it, copying the growing path at every level).
func TestPrependPath(t *testing.T) {
	c := vfs.RootCredentials()
	root := &vfs.Mount{Point: "/", Root: newTmpfs(t, 300).Root()}
	fs := newTmpfs(t, 301)
	tmp := &vfs.Mount{Point: "/tmp", Root: fs.Root()}
	a := must(tmp.Root.Mkdir("a", 0o755, c))
	b := must(a.Mkdir("b", 0o755, c))
	gone := must(a.Mkdir("gone", 0o755, c))
	if err := a.Rmdir("gone", c); err != nil {
		t.Fatal(err)
	}
	// A guest mount on /tmp/a/b, another stacked on its root.
	g := &vfs.Mount{Root: newTmpfs(t, 302).Root(), Parent: tmp, MountPoint: b}
	gf := must(g.Root.Create("f", 0o644, c))
	s := &vfs.Mount{Root: newTmpfs(t, 303).Root(), Parent: g, MountPoint: g.Root}
	sd := must(s.Root.Mkdir("d", 0o755, c))

	// A chain whose path is exactly limit bytes long: "/tmp", 15 names
	// of NAME_MAX and one of 250, each after its '/'.
	const limit = vfs.PathMax - 1 // getcwd's page less the NUL
	exact := tmp.Root
	for i := 0; i < 15; i++ {
		exact = must(exact.Mkdir(strings.Repeat("x", 255), 0o755, c))
	}
	over := must(exact.Mkdir(strings.Repeat("y", 251), 0o755, c))
	exact = must(exact.Mkdir(strings.Repeat("y", 250), 0o755, c))
	exactPath := "/tmp" + strings.Repeat("/"+strings.Repeat("x", 255), 15) + "/" + strings.Repeat("y", 250)
	if len(exactPath) != limit {
		t.Fatalf("exact path is %d bytes", len(exactPath))
	}

	for _, tc := range []struct {
		name string
		m    *vfs.Mount
		d    vfs.Dentry
		size int
		want string
		err  error
	}{
		{"root", root, root.Root, limit, "/", nil},
		{"root in one byte", root, root.Root, 1, "/", nil},
		{"root in none", root, root.Root, 0, "", unix.ENAMETOOLONG},
		{"mount root", tmp, tmp.Root, limit, "/tmp", nil},
		{"nested", tmp, b, limit, "/tmp/a/b", nil},
		{"nested, fits exactly", tmp, b, len("/tmp/a/b"), "/tmp/a/b", nil},
		{"nested, one over", tmp, b, len("/tmp/a/b") - 1, "", unix.ENAMETOOLONG},
		{"no room for the mount point", tmp, b, len("/a/b"), "", unix.ENAMETOOLONG},
		{"unlinked", tmp, gone, limit, "/tmp/a/gone", nil},
		{"guest mount root", g, g.Root, limit, "/tmp/a/b", nil},
		{"across a mount", g, gf, limit, "/tmp/a/b/f", nil},
		{"across stacked mounts", s, sd, limit, "/tmp/a/b/d", nil},
		{"across mounts, one over", s, sd, len("/tmp/a/b/d") - 1, "", unix.ENAMETOOLONG},
		{"at the limit", tmp, exact, limit, exactPath, nil},
		{"one over the limit", tmp, over, limit, "", unix.ENAMETOOLONG},
	} {
		buf := make([]byte, tc.size)
		i, err := vfs.PrependPath(buf, tc.m, tc.d)
		if err != tc.err || err == nil && string(buf[i:]) != tc.want {
			got := ""
			if err == nil {
				got = string(buf[i:])
			}
			t.Errorf("%s: %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.err)
		}
		if err == nil {
			if p := vfs.PathOf(tc.m, tc.d); p != tc.want {
				t.Errorf("%s: PathOf = %q, want %q", tc.name, p, tc.want)
			}
		}
	}
	// PathOf is the whole path, however long.
	if p := vfs.PathOf(tmp, over); p != exactPath[:len(exactPath)-250]+strings.Repeat("y", 251) {
		t.Errorf("PathOf one over the limit: %d bytes", len(p))
	}
}

// TestPrependPathDepth: a path deeper than the buffer stops the walk up
// where the buffer is full, whatever the depth (Linux's getcwd stops
// there too); PathOf builds a long one whole, in time linear in it.
func TestPrependPathDepth(t *testing.T) {
	tmp := &vfs.Mount{Point: "/tmp"}
	for _, tc := range []struct {
		depth, name int
		err         error
		maxVisits   int
	}{
		{1 << 30, 1, unix.ENAMETOOLONG, vfs.PathMax/2 + 1},
		{1 << 30, 100, unix.ENAMETOOLONG, vfs.PathMax/101 + 1},
		{20000, 100, unix.ENAMETOOLONG, vfs.PathMax/101 + 1},
		{40, 100, nil, 41},
	} {
		visits := 0
		d := chain{depth: tc.depth, name: strings.Repeat("d", tc.name), visits: &visits}
		buf := make([]byte, vfs.PathMax-1)
		i, err := vfs.PrependPath(buf, tmp, d)
		if err != tc.err {
			t.Errorf("depth %d of %d-byte names: %v, want %v", tc.depth, tc.name, err, tc.err)
		}
		if err == nil && len(buf)-i != len("/tmp")+tc.depth*(tc.name+1) {
			t.Errorf("depth %d of %d-byte names: %d bytes", tc.depth, tc.name, len(buf)-i)
		}
		if visits > tc.maxVisits {
			t.Errorf("depth %d of %d-byte names: %d levels visited, want at most %d", tc.depth, tc.name, visits, tc.maxVisits)
		}
	}
	visits := 0
	p := vfs.PathOf(tmp, chain{depth: 20000, name: strings.Repeat("d", 100), visits: &visits})
	if want := "/tmp" + strings.Repeat("/"+strings.Repeat("d", 100), 20000); p != want {
		t.Errorf("PathOf at depth 20000: %d bytes, want %d", len(p), len(want))
	}
	// Each try of a doubling buffer visits at most the levels it holds,
	// and the last but one held less than the path: under three times
	// the depth in all.
	if visits > 3*20000 {
		t.Errorf("PathOf at depth 20000: %d levels visited", visits)
	}
}
