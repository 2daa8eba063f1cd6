package vfs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/fs/tmpfs"
	"sentry/sentry/vfs"
)

// The host half of the walk, against a host directory tree made for the
// test with a sentry tmpfs "mounted" on one of its directories: symlinks
// and magic links on the host lead into the mount, and out of it again.

// fakeCaller stands for a guest: the test process is its process, fds
// are its virtual descriptors, cwd its working directory; as a non-root
// uid, AsCaller switches the thread's file system credentials as the
// sentry's asGuest does and drops its capabilities.
type fakeCaller struct {
	fds map[int32]vfs.Location
	cwd vfs.Location
	uid uint32
}

func (f *fakeCaller) TGID() int32 { return int32(unix.Getpid()) }
func (f *fakeCaller) TID() int32  { return int32(unix.Gettid()) }
func (f *fakeCaller) Guest(id int32) (int32, bool) {
	if id == f.TGID() || id == f.TID() {
		return f.TGID(), true
	}
	return 0, false
}

func (f *fakeCaller) ProcLink(tid int32, name string, fd int32) vfs.Location {
	switch name {
	case "root":
		return vfs.Location{Host: "/"}
	case "cwd":
		return f.cwd
	case "fd":
		return f.fds[fd]
	}
	return vfs.Location{}
}

func (f *fakeCaller) Privileged() bool { return f.uid == 0 }

func (f *fakeCaller) MayReadProc(int32) (bool, error) { return false, nil }

func (f *fakeCaller) AsCaller(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var saved [64]uint32
	n, _, _ := unix.RawSyscall(unix.SYS_GETGROUPS, uintptr(len(saved)), uintptr(unsafe.Pointer(&saved[0])), 0)
	unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0)
	oldGID, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, uintptr(f.uid), 0, 0)
	oldUID, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, uintptr(f.uid), 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps, keep [2]unix.CapUserData
	unix.Capget(&hdr, &caps[0])
	keep = caps
	caps[0].Effective, caps[1].Effective = 0, 0
	unix.Capset(&hdr, &caps[0])
	defer func() {
		unix.Capset(&hdr, &keep[0])
		unix.RawSyscall(unix.SYS_SETFSUID, oldUID, 0, 0)
		unix.RawSyscall(unix.SYS_SETFSGID, oldGID, 0, 0)
		unix.RawSyscall(unix.SYS_SETGROUPS, n, uintptr(unsafe.Pointer(&saved[0])), 0)
	}()
	return fn()
}

// walkTree is the test's host tree H and the sentry mount on H/mnt.
type walkTree struct {
	h    string
	v    *vfs.VirtualFilesystem
	m    *vfs.Mount
	root vfs.Dentry
	sub  vfs.Dentry
	f    vfs.Dentry
	// dfd is a host descriptor of H/d.
	dfd int
}

func newWalkTree(t *testing.T) *walkTree {
	t.Helper()
	h, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"mnt", "d", "d/e", "bind"} {
		if err := os.Mkdir(filepath.Join(h, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(h, "d/file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"abs":      filepath.Join(h, "mnt"),
		"rel":      "mnt",
		"deep":     "d/e/../../mnt",
		"up":       "..",
		"fdlink":   "/proc/self/fd",
		"rootlink": "/proc/self/root",
		"loop":     "loop",
		"tofile":   "d/file",
		"rabs":     "/mnt",
		"d/e/back": "../..",
	}
	// A chain of 40 links from c0 into the mount: one more is too many.
	for i := 0; i < 39; i++ {
		links["c"+strconv.Itoa(i)] = "c" + strconv.Itoa(i+1)
	}
	links["c39"] = "mnt"
	links["cx"] = "c0"
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(h, name)); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := tmpfs.New(tmpfs.Options{Dev: unix.Mkdev(0, 240), RootMode: 0o755})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fs.Release)
	c := vfs.RootCredentials()
	root := fs.Root()
	f := must(root.Create("f", 0o644, c))
	sub := must(root.Mkdir("sub", 0o755, c))
	must(sub.Create("g", 0o644, c))
	must(root.Symlink("back", "../d", c))
	must(root.Symlink("out", filepath.Join(h, "d/file"), c))
	must(root.Symlink("mix", filepath.Join(h, "c1"), c))
	must(root.Symlink("mix0", filepath.Join(h, "c0"), c))
	must(root.Symlink("self", "/proc/self/fd/1001/g", c))
	must(root.Symlink("proc", "/proc", c))
	m := &vfs.Mount{Point: filepath.Join(h, "mnt"), Root: root, ID: 7, FS: fs}
	dfd, err := unix.Open(filepath.Join(h, "d"), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(dfd) })
	return &walkTree{h: h, v: vfs.New([]*vfs.Mount{m}), m: m, root: root, sub: sub, f: f, dfd: dfd}
}

// describe is a walk's outcome as the tables write it: "sentry:PATH"
// (PATH in the mount, with "+NAME" for a missing last component),
// "host:PATH", or the errno's name.
func (wt *walkTree) describe(w vfs.Walk, err error) string {
	if err != nil {
		s := unix.ErrnoName(err.(unix.Errno))
		if w.HostErr {
			s += " (host)"
		}
		return s
	}
	if w.IsHost() {
		return "host:" + w.Host
	}
	if w.Dentry == nil {
		return "sentry:" + relPath(wt.m, w.Parent) + "+" + w.Name
	}
	return "sentry:" + relPath(wt.m, w.Dentry)
}

func relPath(m *vfs.Mount, d vfs.Dentry) string {
	p := vfs.PathOf(m, d)[len(m.Point):]
	if p == "" {
		return "/"
	}
	return p
}

func TestWalkHost(t *testing.T) {
	wt := newWalkTree(t)
	h := wt.h
	pid := strconv.Itoa(unix.Getpid())
	dfd := strconv.Itoa(wt.dfd)
	caller := &fakeCaller{
		fds: map[int32]vfs.Location{
			1000: {Mount: wt.m, Dentry: wt.f},
			1001: {Mount: wt.m, Dentry: wt.sub},
		},
		cwd: vfs.Location{Mount: wt.m, Dentry: wt.sub},
	}
	root := vfs.Location{Host: "/"}
	for _, tc := range []struct {
		name    string
		start   vfs.Location
		path    string
		follow  bool
		resolve uint64
		want    string
		entered bool
	}{
		{name: "absolute symlink into the mount", path: h + "/abs/f", want: "sentry:/f", entered: true},
		{name: "relative symlink into the mount", path: h + "/rel/sub/g", want: "sentry:/sub/g", entered: true},
		{name: "symlink with dotdot", path: h + "/deep/f", want: "sentry:/f", entered: true},
		{name: "missing last component in the mount", path: h + "/abs/new", want: "sentry:/+new", entered: true},
		{name: "lexical path into the mount", path: h + "/d/../mnt/sub/g", want: "sentry:/sub/g", entered: true},
		{name: "host path", path: h + "/d/file", want: "host:" + h + "/d/file"},
		{name: "host symlink to host", path: h + "/tofile", follow: true, want: "host:" + h + "/d/file"},
		{name: "host symlink not followed", path: h + "/tofile", want: "host:" + h + "/tofile"},
		{name: "dotdot out of the mount", path: h + "/mnt/..", want: "host:" + h, entered: true},
		{name: "dotdot twice out of the mount", path: h + "/mnt/sub/../../d", want: "host:" + h + "/d", entered: true},
		{name: "sentry symlink out of the mount", path: h + "/mnt/back/file", want: "host:" + h + "/d/file", entered: true},
		{name: "sentry symlink to a host file", path: h + "/mnt/out", follow: true, want: "host:" + h + "/d/file", entered: true},
		{name: "host symlink back to the start", path: h + "/d/e/back/abs/f", want: "sentry:/f", entered: true},
		{name: "proc self root", path: "/proc/self/root" + h + "/mnt/f", want: "sentry:/f", entered: true},
		{name: "proc pid root", path: "/proc/" + pid + "/root" + h + "/mnt/sub", want: "sentry:/sub", entered: true},
		{name: "proc thread-self root", path: "/proc/thread-self/root" + h + "/mnt/sub/g", want: "sentry:/sub/g", entered: true},
		{name: "host symlink to proc self root", path: h + "/rootlink" + h + "/abs/f", want: "sentry:/f", entered: true},
		{name: "virtual fd", path: "/proc/self/fd/1000", follow: true, want: "sentry:/f", entered: true},
		{name: "virtual fd not followed", path: "/proc/self/fd/1000", want: "host:/proc/" + pid + "/fd/1000"},
		{name: "virtual fd by pid", path: "/proc/" + pid + "/fd/1000", follow: true, want: "sentry:/f", entered: true},
		{name: "virtual fd of a thread", path: "/proc/thread-self/fd/1000", follow: true, want: "sentry:/f", entered: true},
		{name: "virtual directory fd", path: "/proc/self/fd/1001/g", want: "sentry:/sub/g", entered: true},
		{name: "dev fd of a virtual fd", path: h + "/fdlink/1000", follow: true, want: "sentry:/f", entered: true},
		{name: "dev fd of a virtual fd with a trailing slash", path: h + "/fdlink/1001/", want: "sentry:/sub", entered: true},
		{name: "proc self cwd in the mount", path: "/proc/self/cwd/g", want: "sentry:/sub/g", entered: true},
		{name: "proc net through self", path: "/proc/net/unix", want: "host:/proc/" + pid + "/net/unix"},
		{name: "host fd", path: "/proc/self/fd/" + dfd + "/file", want: "host:" + h + "/d/file"},
		// A failure at a magic link is the sentry's answer: the host,
		// given the guest's path, would follow the link again, to
		// whatever the number holds by then (a placeholder: the store).
		// Past the link, the host walks the target's own path.
		{name: "number not open", path: "/proc/self/fd/987/x", want: "ENOENT"},
		{name: "host fd then a missing directory", path: "/proc/self/fd/" + dfd + "/nowhere/x", want: "host:" + h + "/d/nowhere/x"},
		{name: "host fd then dotdot into the mount", path: "/proc/self/fd/" + dfd + "/../abs/f", want: "sentry:/f", entered: true},
		{name: "sentry symlink to a virtual fd", path: h + "/mnt/self", follow: true, want: "sentry:/sub/g", entered: true},
		{name: "40 links", path: h + "/c0/f", want: "sentry:/f", entered: true},
		{name: "41 links", path: h + "/cx/f", want: "ELOOP (host)"},
		{name: "40 links from the sentry", path: h + "/mnt/mix/f", want: "sentry:/f", entered: true},
		{name: "41 links from the sentry", path: h + "/mnt/mix0/f", want: "ELOOP"},
		{name: "loop", path: h + "/loop", follow: true, want: "ELOOP (host)"},
		// The kernel's walk fails before anything of the sentry's: the
		// call passes through and the kernel reports its error.
		{name: "missing host directory", path: h + "/nowhere/x", want: "host:" + h + "/nowhere/x"},
		{name: "host file as a directory", path: h + "/d/file/x", want: "host:" + h + "/d/file/x"},
		{name: "missing host directory before a link", path: h + "/nowhere/../abs/f", want: "host:" + h + "/abs/f"},
		{name: "host file as a directory before a link", path: h + "/d/file/../abs/f", want: "host:" + h + "/d/abs/f"},
		{name: "host file as a directory after a link", path: h + "/tofile/x", want: "host:" + h + "/d/file/x"},
		{name: "host file as a directory after a magic link", path: "/proc/self/fd/1000/x", want: "ENOTDIR"},
		{name: "host file as a directory in a link", path: h + "/tofile/../abs/f", want: "host:" + h + "/d/abs/f"},
		{name: "no symlinks", path: h + "/abs/f", resolve: vfs.ResolveNoSymlinks, want: "ELOOP (host)"},
		{name: "no magic links", path: "/proc/self/fd/1000", follow: true, resolve: vfs.ResolveNoMagiclinks, want: "ELOOP (host)"},
		{name: "no magic links, self is a symlink", path: "/proc/self/root", follow: true, resolve: vfs.ResolveNoMagiclinks, want: "ELOOP (host)"},
		{name: "no xdev into the mount", path: h + "/mnt/f", resolve: vfs.ResolveNoXdev, want: "EXDEV"},
		{name: "beneath into the mount", start: vfs.Location{Host: h}, path: "mnt/f", resolve: vfs.ResolveBeneath, want: "sentry:/f", entered: true},
		{name: "beneath through a relative link", start: vfs.Location{Host: h}, path: "rel/f", resolve: vfs.ResolveBeneath, want: "sentry:/f", entered: true},
		{name: "beneath through an absolute link", start: vfs.Location{Host: h}, path: "abs/f", resolve: vfs.ResolveBeneath, want: "EXDEV (host)"},
		{name: "beneath above the start", start: vfs.Location{Host: h + "/d"}, path: "../mnt/f", resolve: vfs.ResolveBeneath, want: "EXDEV (host)"},
		{name: "beneath through a magic link", start: root, path: "proc/self/fd/1000", follow: true, resolve: vfs.ResolveBeneath, want: "EXDEV (host)"},
		{name: "in root, absolute link", start: vfs.Location{Host: h}, path: "rabs/f", resolve: vfs.ResolveInRoot, want: "sentry:/f", entered: true},
		{name: "in root, dotdot stays", start: vfs.Location{Host: h}, path: "../../mnt/f", resolve: vfs.ResolveInRoot, want: "sentry:/f", entered: true},
		{name: "relative from a host directory", start: vfs.Location{Host: h + "/d"}, path: "../abs/f", want: "sentry:/f", entered: true},
		{name: "relative from a sentry directory to the host", start: vfs.Location{Mount: wt.m, Dentry: wt.sub}, path: "../../d/file", want: "host:" + h + "/d/file", entered: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := tc.start
			if start == (vfs.Location{}) {
				start = root
			}
			w, err := wt.v.Resolve(caller, vfs.RootCredentials(), start, tc.path, tc.follow, tc.resolve)
			if got := wt.describe(w, err); got != tc.want || err == nil && w.Entered != tc.entered {
				t.Fatalf("walk %q: got %s (entered %v), want %s (entered %v)", tc.path, got, w.Entered, tc.want, tc.entered)
			}
		})
	}
	// /proc/self itself, not followed, reads as the caller's.
	w, err := wt.v.Resolve(caller, vfs.RootCredentials(), root, h+"/mnt/proc/self", false, 0)
	if err != nil || w.LinkText != pid || !w.IsHost() || !w.Entered || w.Host != "/proc/self" {
		t.Fatalf("proc self link: %+v, %v", w, err)
	}
	// The link itself, not followed, tells where it points.
	w, err = wt.v.Resolve(caller, vfs.RootCredentials(), root, h+"/fdlink/1001", false, 0)
	if err != nil || w.Link.Mount != wt.m || w.Link.Dentry != wt.sub {
		t.Fatalf("link of a virtual fd: %+v, %v", w, err)
	}
}

// TestWalkStaleWorkingDirectory: a working directory held open is walked
// from where it is now, not from the path it had when it was entered.
func TestWalkStaleWorkingDirectory(t *testing.T) {
	wt := newWalkTree(t)
	h := wt.h
	if err := os.MkdirAll(h+"/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	cwd := wt.v.HostLocation(h + "/a/b")
	if err := os.MkdirAll(h+"/x/y", 0o755); err != nil {
		t.Fatal(err)
	}
	// One level deeper than it was.
	if err := os.Rename(h+"/a", h+"/x/y/a"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"../../../../abs/f", "sentry:/f"},
		{"../../../../mnt/sub", "sentry:/sub"},
		{"../../../../rel/f", "sentry:/f"},
	} {
		w, err := wt.v.Resolve(&fakeCaller{}, vfs.RootCredentials(), cwd, tc.path, false, 0)
		if got := wt.describe(w, err); got != tc.want {
			t.Errorf("walk %q from the moved directory: got %s, want %s", tc.path, got, tc.want)
		}
	}
	// The same but along a link from the moved directory.
	if err := os.Symlink("../../../../mnt", h+"/x/y/a/b/L"); err != nil {
		t.Fatal(err)
	}
	w, err := wt.v.Resolve(&fakeCaller{}, vfs.RootCredentials(), cwd, "L/f", false, 0)
	if got := wt.describe(w, err); got != "sentry:/f" {
		t.Errorf("walk through a link in the moved directory: got %s", got)
	}
}

// TestWalkAsCaller: a walk that host lookups made as the sentry led into
// the mount is made again as the caller, who may not search where the
// sentry may, nor follow another process's magic links.
func TestWalkAsCaller(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	wt := newWalkTree(t)
	h := wt.h
	// Searchable by all down to H; H/priv by root only.
	for d := h; d != "/"; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			os.Chmod(d, st.Mode().Perm()|0o011)
		}
	}
	if err := os.Mkdir(h+"/priv", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(h+"/mnt", h+"/priv/in"); err != nil {
		t.Fatal(err)
	}
	// A process that is no guest, root's, with its working directory
	// in H.
	other := exec.Command("sleep", "60")
	other.Dir = h
	if err := other.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	defer other.Wait()
	defer other.Process.Kill()
	cwd := "/proc/" + strconv.Itoa(other.Process.Pid) + "/cwd"
	nobody := &fakeCaller{uid: 65534}
	creds := &vfs.Credentials{UID: 65534, GID: 65534}
	root := vfs.Location{Host: "/"}
	for _, tc := range []struct {
		caller *fakeCaller
		c      *vfs.Credentials
		path   string
		want   string
	}{
		{&fakeCaller{}, vfs.RootCredentials(), h + "/priv/in/f", "sentry:/f"},
		// Where nobody may not search, the walk is the kernel's, which
		// refuses it (EACCES) when the call passes through.
		{nobody, creds, h + "/priv/in/f", "host:" + h + "/priv/in/f"},
		{nobody, creds, h + "/priv/../abs/f", "host:" + h + "/abs/f"},
		{nobody, creds, h + "/abs/f", "sentry:/f"},
		{&fakeCaller{}, vfs.RootCredentials(), cwd + "/abs/f", "sentry:/f"},
		// Refused by the sentry, not left to the host: the host would
		// follow the link again, to whatever it leads to by then.
		{nobody, creds, cwd + "/abs/f", "EACCES"},
		{nobody, creds, cwd + "/..", "host:" + filepath.Dir(h)},
	} {
		w, err := wt.v.Resolve(tc.caller, tc.c, root, tc.path, false, 0)
		if got := wt.describe(w, err); got != tc.want || w.Entered != (got[0] == 's') {
			t.Errorf("walk %q as uid %d: got %s (entered %v), want %s", tc.path, tc.caller.uid, got, w.Entered, tc.want)
		}
	}
}

// TestWalkProtectedSymlinks: with fs.protected_symlinks (forced on: the
// test host may have it off), a trailing symlink in a sticky
// world-writable directory that neither the follower nor the directory's
// owner owns is not followed (may_follow_link), on the host and in the
// sentry's tmpfs alike.
func TestWalkProtectedSymlinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	wt := newWalkTree(t)
	wt.v.SetProtectedSymlinks(true)
	h := wt.h
	if err := os.Mkdir(h+"/sticky", 0o777); err != nil {
		t.Fatal(err)
	}
	unix.Chmod(h+"/sticky", 0o1777)
	if err := os.Symlink(h+"/mnt/sub", h+"/sticky/pl"); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(h+"/sticky/pl", 1234, 1234); err != nil {
		t.Fatal(err)
	}
	other := &vfs.Credentials{UID: 1234, GID: 1234}
	tmp := must(wt.root.Mkdir("tmp", 0o1777, vfs.RootCredentials()))
	must(tmp.Symlink("sl", "../sub", other))
	must(tmp.Symlink("rl", "../sub", vfs.RootCredentials()))
	root := vfs.Location{Host: "/"}
	for _, tc := range []struct {
		uid    uint32
		path   string
		follow bool
		want   string
	}{
		{0, h + "/sticky/pl", true, "EACCES (host)"},
		{0, h + "/sticky/pl/", false, "EACCES (host)"},
		{0, h + "/sticky/pl/g", false, "sentry:/sub/g"},
		{0, h + "/sticky/pl", false, "host:" + h + "/sticky/pl"},
		{1234, h + "/sticky/pl", true, "sentry:/sub"},
		{0, h + "/mnt/tmp/sl", true, "EACCES"},
		{0, h + "/mnt/tmp/sl/g", true, "sentry:/sub/g"},
		{0, h + "/mnt/tmp/sl", false, "sentry:/tmp/sl"},
		{1234, h + "/mnt/tmp/sl", true, "sentry:/sub"},
		{1234, h + "/mnt/tmp/rl", true, "sentry:/sub"},
	} {
		w, err := wt.v.Resolve(&fakeCaller{}, &vfs.Credentials{UID: tc.uid}, root, tc.path, tc.follow, 0)
		if got := wt.describe(w, err); got != tc.want {
			t.Errorf("walk %q as uid %d: got %s, want %s", tc.path, tc.uid, got, tc.want)
		}
	}
}

// TestWalkBindMount: a bind mount of the mount point's directory, or of a
// directory above it, is another mount: the kernel would not cross into
// a file system mounted on the original there, and neither does the walk.
func TestWalkBindMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	done := make(chan string)
	go func() {
		// A private mount namespace for this thread only, which dies
		// with it (the goroutine never unlocks).
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			done <- "unshare: " + err.Error()
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
			done <- "mount private: " + err.Error()
			return
		}
		wt := newWalkTree(t)
		h := wt.h
		os.Mkdir(h+"/bind2", 0o755)
		if err := unix.Mount(h+"/mnt", h+"/bind", "", unix.MS_BIND, ""); err != nil {
			done <- "bind: " + err.Error()
			return
		}
		if err := unix.Mount(h, h+"/bind2", "", unix.MS_BIND, ""); err != nil {
			done <- "bind: " + err.Error()
			return
		}
		msg := ""
		for _, tc := range []struct{ path, want string }{
			{h + "/bind/f", "host:" + h + "/bind/f"},
			{h + "/bind2/mnt/f", "host:" + h + "/bind2/mnt/f"},
			{h + "/bind2/abs/f", "sentry:/f"},
			{h + "/bind2/rel/f", "host:" + h + "/bind2/mnt/f"},
			{h + "/mnt/f", "sentry:/f"},
		} {
			w, err := wt.v.Resolve(&fakeCaller{}, vfs.RootCredentials(), vfs.Location{Host: "/"}, tc.path, false, 0)
			if got := wt.describe(w, err); got != tc.want {
				msg += "walk " + tc.path + ": got " + got + ", want " + tc.want + "\n"
			}
		}
		done <- msg
	}()
	if msg := <-done; msg != "" {
		t.Fatal(msg)
	}
}

// TestHostDirsCollected: working directories dropped in a loop (a guest's
// chdir loop) do not hold their descriptors until the garbage collector
// happens to run: 5,000 left as many open, with nothing else allocated to
// start a collection.
func TestHostDirsCollected(t *testing.T) {
	dir := t.TempDir()
	count := func() int {
		ents, _ := os.ReadDir("/proc/self/fd")
		n := 0
		for _, e := range ents {
			if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); target == dir {
				n++
			}
		}
		return n
	}
	v := vfs.New(nil)
	for i := 0; i < 5000; i++ {
		if v.OpenHostDir(dir) == nil {
			t.Fatalf("open %s failed", dir)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if n := count(); n > 2048 {
		t.Errorf("%d descriptors of dropped directories still open", n)
	}
}
