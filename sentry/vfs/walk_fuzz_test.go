package vfs_test

import (
	"fmt"
	"path"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/fs/tmpfs"
	"sentry/sentry/vfs"
)

// FuzzWalk drives the walk with random paths from sentry and host
// starts, checking each result for consistency. Without -fuzz, go test
// runs its seeds as regular tests.

// walkFixture is a VFS with two tmpfs mounts, built once per process: the
// walk never changes the tree (a followed symlink's atime aside).
type walkFixture struct {
	v      *vfs.VirtualFilesystem
	m1, m2 *vfs.Mount
	starts []vfs.Location
}

var (
	walkOnce sync.Once
	walkFix  *walkFixture
)

var fuzzRoot = vfs.RootCredentials()
var fuzzUser = &vfs.Credentials{UID: 1000, GID: 1000}

func must(d vfs.Dentry, err error) vfs.Dentry {
	if err != nil {
		panic(err)
	}
	return d
}

func getWalkFixture() *walkFixture {
	walkOnce.Do(func() {
		fs1, err1 := tmpfs.New(tmpfs.Options{Dev: unix.Mkdev(0, 251), RootMode: 0755})
		fs2, err2 := tmpfs.New(tmpfs.Options{Dev: unix.Mkdev(0, 252), RootMode: 01777})
		if err1 != nil || err2 != nil {
			panic(fmt.Sprint(err1, err2))
		}
		m1 := &vfs.Mount{Point: "/m1", Root: fs1.Root(), ID: 1, FS: fs1}
		m2 := &vfs.Mount{Point: "/srv/m2", Root: fs2.Root(), ID: 2, FS: fs2}
		r1, r2 := fs1.Root(), fs2.Root()
		c := fuzzRoot

		d := must(r1.Mkdir("d", 0755, c))
		must(d.Create("f", 0644, c))
		e := must(d.Mkdir("e", 0755, c))
		must(e.Create("g", 0644, c))
		must(e.Symlink("deep", "../../d/e/../../abs/e", c))
		must(d.Symlink("back", "../..", c))
		f := must(r1.Create("f", 0644, c))
		priv := must(r1.Mkdir("priv", 0700, c))
		must(priv.Create("s", 0600, c))
		noexec := must(r1.Mkdir("noexec", 0666, c))
		must(noexec.Create("t", 0644, c))
		must(r1.Symlink("loop", "loop", c))
		must(r1.Symlink("loopa", "loopb/x", c))
		must(r1.Symlink("loopb", "loopa/", c))
		must(r1.Symlink("etc", "/etc", c))
		must(r1.Symlink("up", "../..", c))
		must(r1.Symlink("rel", "d/e", c))
		must(r1.Symlink("abs", "/m1/d", c))
		must(r1.Symlink("x2", "/srv/m2/h", c))
		must(r1.Symlink("dangling", "nowhere/x", c))
		must(r1.Symlink("self", ".", c))
		must(r1.Symlink("chain", "rel/../f", c))
		must(r1.Symlink("tofile", "f/", c))
		must(r1.Symlink("privlink", "priv/s", c))
		must(r1.Create(strings.Repeat("n", vfs.NameMax), 0644, c))
		must(r1.Symlink("longtarget", strings.Repeat("d/e/../", 150)+"f", c))
		// A chain of 41 symlinks: following all of them is one too many.
		for i := 0; i < 41; i++ {
			must(r1.Symlink(fmt.Sprintf("c%d", i), fmt.Sprintf("c%d", i+1), c))
		}
		must(r1.Create("c41", 0644, c))

		h := must(r2.Mkdir("h", 0755, c))
		must(h.Create("i", 0644, c))
		must(r2.Symlink("lnk", "/m1/f", c))
		must(r2.Symlink("out", "../../m1/rel", c))

		walkFix = &walkFixture{
			v: vfs.New([]*vfs.Mount{m1, m2}), m1: m1, m2: m2,
			starts: []vfs.Location{
				{Host: "/"},
				{Host: "/srv"},
				{Host: "/tmp"},
				{Mount: m1, Dentry: r1},
				{Mount: m1, Dentry: d},
				{Mount: m1, Dentry: e},
				{Mount: m1, Dentry: f},
				{Mount: m2, Dentry: r2},
				{Mount: m2, Dentry: h},
				{Mount: m1, Dentry: priv},
			},
		}
	})
	return walkFix
}

// walkErrnos are the errors a walk may return.
var walkErrnos = map[unix.Errno]bool{
	unix.ENOENT: true, unix.ENOTDIR: true, unix.ELOOP: true, unix.ENAMETOOLONG: true,
	unix.EACCES: true, unix.EXDEV: true, unix.EINVAL: true,
	// A magic link to a file of a sentry store (kernelJump): the test
	// process holds its fixture's backings, so /dev/fd/N or
	// /proc/self/fd/N can name one.
	unix.EOPNOTSUPP: true,
}

// under reports whether host path p is dir or below it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// isUnder reports whether d is start or below it.
func isUnder(d, start vfs.Dentry) bool {
	for ; d != nil; d = d.Parent() {
		if d == start {
			return true
		}
	}
	return false
}

func FuzzWalk(f *testing.F) {
	// sel: bits 0-4 RESOLVE_*, bit 5 follow, bits 6-9 start, bit 10 an
	// unprivileged user.
	const follow, user = 1 << 5, 1 << 10
	start := func(i int) uint16 { return uint16(i) << 6 }
	for _, s := range []struct {
		p   string
		sel uint16
	}{
		{"/m1/d/f", follow},
		{"/m1/d/e/g", 0},
		{"/m1/loop", follow},
		{"/m1/loop/", 0},
		{"/m1/loopa", follow},
		{"/m1/c0", follow},
		{"/m1/c1", follow},
		{"/m1/etc/passwd", follow},
		{"/m1/up/tmp", 0},
		{"/m1/rel/../f", 0},
		{"/m1/x2/i", 0},
		{"/m1/x2/i", vfs.ResolveNoXdev},
		{"/srv/m2/out/g", follow},
		{"/m1/priv/s", user},
		{"/m1/noexec/t", user},
		{"/m1/privlink", user | follow},
		{"/m1/" + strings.Repeat("n", 256), 0},
		{"/m1/" + strings.Repeat("n", 255) + "/", 0},
		{"/m1/longtarget", follow},
		{"../../..", start(4) | vfs.ResolveBeneath},
		{"../../..", start(4) | vfs.ResolveInRoot},
		{"e/deep/g", start(4) | vfs.ResolveInRoot | follow},
		{"back/m1/f", start(4) | vfs.ResolveInRoot | follow},
		{"/etc", start(3) | vfs.ResolveInRoot},
		{"f", start(6)},
		{".", start(6)},
		{"m1/./d/../d/e/", start(0)},
		{"m2/h/..", start(1)},
		{"a\x00b/../c", start(3)},
		{"self/self/self/tofile", start(3) | follow},
		{"dangling", start(3) | follow | vfs.ResolveNoSymlinks},
		{"", start(3)},
		{"//", start(2)},
		// Host links and magic links into the mounts and out of them.
		{"/proc/self/root/m1/d/f", follow},
		{"/proc/thread-self/root/srv/m2/h/../../../m1/rel", follow},
		{"/proc/self/cwd/m1/up/proc/self/root/m1/f", follow},
		{"/proc/self/fd/0/x", 0},
		{"/dev/fd/0", follow},
		{"/dev/stdin", 0},
		{"proc/self/root/m1/f", start(0) | vfs.ResolveBeneath | follow},
		{"proc/self/root/m1/f", start(0) | vfs.ResolveNoMagiclinks | follow},
		{"/proc/self/root/m1/f", vfs.ResolveNoXdev | follow},
		{"/proc/mounts", follow},
		{"/bin/../m1/d", 0},
	} {
		f.Add([]byte(s.p), s.sel)
	}
	f.Fuzz(func(t *testing.T, p []byte, sel uint16) {
		if len(p) > 320 {
			p = p[:320]
		}
		fx := getWalkFixture()
		st := fx.starts[int(sel>>6&15)%len(fx.starts)]
		c := fuzzRoot
		if sel&(1<<10) != 0 {
			c = fuzzUser
		}
		resolve := uint64(sel & 0x1f)
		fol := sel&(1<<5) != 0
		ps := string(p)
		w, err := fx.v.WalkPathResolve(c, st, ps, fol, resolve)
		if err != nil {
			e, ok := err.(unix.Errno)
			if w.HostErr {
				// The host's own error for a host path, passed through.
				if !ok || !w.IsHost() || w.Entered {
					t.Fatalf("walk %q (start %v): host error %v with %+v", ps, locString(st), err, w)
				}
				return
			}
			if !ok || !walkErrnos[e] {
				t.Fatalf("walk %q (start %v, follow %v, resolve %#x): error %#v (%v) is not an expected errno", ps, locString(st), fol, resolve, err, err)
			}
			return
		}
		if err := checkWalk(fx, st, ps, resolve, w); err != nil {
			t.Fatalf("walk %q (start %v, follow %v, resolve %#x) = %+v: %v", ps, locString(st), fol, resolve, w, err)
		}
	})
}

func locString(l vfs.Location) string {
	if l.IsHost() {
		return "host:" + l.Host
	}
	return "sentry:" + vfs.PathOf(l.Mount, l.Dentry)
}

// checkWalk checks that a successful walk's result is internally
// consistent.
func checkWalk(fx *walkFixture, st vfs.Location, p string, resolve uint64, w vfs.Walk) error {
	if w.TrailingSlash != strings.HasSuffix(p, "/") {
		return fmt.Errorf("TrailingSlash %v", w.TrailingSlash)
	}
	scoped := resolve&(vfs.ResolveBeneath|vfs.ResolveInRoot) != 0
	if w.IsHost() {
		if w.Dentry != nil || w.Parent != nil {
			return fmt.Errorf("host result with a dentry")
		}
		if strings.HasPrefix(w.Host, "/proc/") {
			// A path through a magic link, which ".." may follow.
			return nil
		}
		if !strings.HasPrefix(w.Host, "/") || path.Clean(w.Host) != w.Host {
			return fmt.Errorf("host path %q is not absolute and clean", w.Host)
		}
		for _, m := range fx.v.Mounts() {
			if m.Point == w.Host && w.Name != "" {
				return fmt.Errorf("host path %q is a mount point", w.Host)
			}
		}
		if scoped && !st.IsHost() {
			return fmt.Errorf("scoped walk from a sentry directory escaped to the host")
		}
		if scoped && !under(w.Host, st.Host) {
			return fmt.Errorf("scoped walk from host %q moved to %q", st.Host, w.Host)
		}
		return nil
	}
	if w.Host != "" {
		return fmt.Errorf("sentry result with a host path %q", w.Host)
	}
	m := w.Mount
	if m != fx.m1 && m != fx.m2 {
		return fmt.Errorf("unknown mount %p", m)
	}
	top := w.Dentry
	if top == nil {
		if w.Parent == nil {
			return fmt.Errorf("neither dentry nor parent")
		}
		if w.Name == "" || w.Name == "." || w.Name == ".." || strings.IndexByte(w.Name, '/') >= 0 || len(w.Name) > vfs.NameMax {
			return fmt.Errorf("missing last component has a bad name %q", w.Name)
		}
		if _, err := w.Parent.Lookup(w.Name); err != unix.ENOENT {
			return fmt.Errorf("missing %q in its parent: lookup says %v", w.Name, err)
		}
		top = w.Parent
	} else if w.Parent != nil {
		if w.Dentry.Parent() != w.Parent || w.Dentry.Name() != w.Name {
			return fmt.Errorf("dentry %q under %q, but walk says %q under %q",
				w.Dentry.Name(), vfs.PathOf(m, w.Dentry.Parent()), w.Name, vfs.PathOf(m, w.Parent))
		}
	} else if w.Name != "" && w.Name != "." && w.Name != ".." {
		return fmt.Errorf("no parent but name %q", w.Name)
	}
	if w.Name == "" && w.Dentry != m.Root && !(resolve&vfs.ResolveInRoot != 0 && w.Dentry == st.Dentry) {
		// "" is the end on a root: a mount's, or IN_ROOT's start.
		return fmt.Errorf("empty name but not on a root")
	}
	if !isUnder(top, m.Root) {
		return fmt.Errorf("result is not under its mount's root")
	}
	if scoped && st.IsHost() && !under(m.Point, st.Host) {
		return fmt.Errorf("scoped walk escaped from %s to mount %s", locString(st), m.Point)
	}
	if scoped && !st.IsHost() && (st.Mount != m || !isUnder(top, st.Dentry)) {
		return fmt.Errorf("scoped walk escaped from %s to %s", locString(st), vfs.PathOf(m, top))
	}
	// The result's own absolute path leads back to it.
	want := w.Dentry
	abs := vfs.PathOf(m, top)
	if w.Dentry == nil {
		abs += "/" + w.Name
	}
	w2, err := fx.v.WalkPath(fuzzRoot, vfs.Location{Host: "/"}, abs, false)
	if err != nil || w2.Mount != m || w2.Dentry != want {
		return fmt.Errorf("its path %q walks to %+v, %v", abs, w2, err)
	}
	return nil
}
