package vfs_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"sentry/fs/tmpfs"
	"sentry/sentry/vfs"
)

// guestMount makes a tmpfs mounted on dentry point of parent.
func guestMount(t *testing.T, v *vfs.VirtualFilesystem, parent *vfs.Mount, point vfs.Dentry, id uint64) *vfs.Mount {
	t.Helper()
	fs, err := tmpfs.New(tmpfs.Options{Dev: unix.Mkdev(0, uint32(200+id)), RootMode: 0o755})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fs.Release)
	m := &vfs.Mount{Root: fs.Root(), ID: id, FS: fs, Parent: parent, MountPoint: point}
	if err := v.Attach(m, 100, 0); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGuestMountWalk: the walk crosses into a guest's mount (on a name,
// stacked on another mount's root), ".." climbs out of it (follow_dotdot),
// a path ending on a mount point ends on the mount's root with no name,
// PathOf names files in it, and after Detach the walk sees what is below.
func TestGuestMountWalk(t *testing.T) {
	w := newWalkTree(t)
	c := vfs.RootCredentials()
	a := guestMount(t, w.v, w.m, w.sub, 100)
	must(a.Root.Create("ina", 0o644, c))
	asub := must(a.Root.Mkdir("asub", 0o755, c))
	b := guestMount(t, w.v, a, asub, 101)
	must(b.Root.Create("inb", 0o644, c))
	mnt := w.h + "/mnt"
	for _, tc := range []struct {
		path  string
		mount *vfs.Mount
		name  string // the walk's last name ("" on a mount's root)
		root  bool   // ends on the mount's root
	}{
		{mnt + "/sub", a, "", true},
		{mnt + "/sub/", a, "", true},
		{mnt + "/sub/ina", a, "ina", false},
		{mnt + "/sub/asub", b, "", true},
		{mnt + "/sub/asub/inb", b, "inb", false},
		{mnt + "/sub/asub/..", a, "..", true},
		{mnt + "/sub/asub/../..", w.m, "..", true},
		{mnt + "/sub/asub/../../f", w.m, "f", false},
		{mnt + "/sub/..", w.m, "..", true},
		{mnt + "/sub/g", a, "g", false}, // hidden below the mount
	} {
		r, err := w.v.WalkPath(c, w.v.HostLocation("/"), tc.path, true)
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if r.Mount != tc.mount || r.Name != tc.name || (r.Dentry == tc.mount.Root) != tc.root {
			t.Errorf("%s: mount %d name %q root %v, want mount %d name %q root %v",
				tc.path, r.Mount.ID, r.Name, r.Dentry == tc.mount.Root, tc.mount.ID, tc.name, tc.root)
		}
		if tc.name == "g" && r.Dentry != nil {
			t.Errorf("%s: found the file the mount hides", tc.path)
		}
	}
	r, _ := w.v.WalkPath(c, w.v.HostLocation("/"), mnt+"/sub/asub/inb", true)
	if p := vfs.PathOf(r.Mount, r.Dentry); p != mnt+"/sub/asub/inb" {
		t.Errorf("PathOf = %q", p)
	}
	// Stacked: a mount on a's root is crossed into from the same name.
	s := guestMount(t, w.v, a, a.Root, 102)
	if r, _ := w.v.WalkPath(c, w.v.HostLocation("/"), mnt+"/sub", true); r.Mount != s {
		t.Errorf("stacked: walk ends in mount %d", r.Mount.ID)
	}
	if _, err := w.v.Detach(a, false, func(*vfs.Mount) bool { return false }); err != unix.EBUSY {
		t.Errorf("detach of a covered mount: %v, want EBUSY", err)
	}
	if _, err := w.v.Detach(s, false, func(*vfs.Mount) bool { return true }); err != unix.EBUSY {
		t.Errorf("detach of a busy mount: %v, want EBUSY", err)
	}
	if _, err := w.v.Detach(s, false, func(*vfs.Mount) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if _, err := w.v.Detach(a, false, func(*vfs.Mount) bool { return false }); err != unix.EBUSY {
		t.Errorf("detach with a mount on it: %v, want EBUSY", err)
	}
	gone, err := w.v.Detach(a, true, func(*vfs.Mount) bool { return true })
	if err != nil || len(gone) != 2 || !a.Detached() || !b.Detached() {
		t.Fatalf("lazy detach: %v %v", gone, err)
	}
	if r, _ := w.v.WalkPath(c, w.v.HostLocation("/"), mnt+"/sub/g", true); r.Mount != w.m || r.Dentry == nil {
		t.Errorf("after detach: mount %d, dentry %v", r.Mount.ID, r.Dentry)
	}
	// ".." of a detached mount's root stays there.
	r, err = w.v.WalkPath(c, vfs.Location{Mount: b, Dentry: b.Root}, "../inb", true)
	if err != nil || r.Mount != b || r.Dentry == nil {
		t.Errorf("'..' in a detached mount: %v %v", r.Mount, err)
	}
	if len(w.v.GuestMounts()) != 0 {
		t.Errorf("mounts left: %d", len(w.v.GuestMounts()))
	}
	// The limit: fs.mount-max.
	if err := w.v.Attach(&vfs.Mount{Parent: w.m, MountPoint: w.f}, 5, 5); err != unix.ENOSPC {
		t.Errorf("past mount-max: %v", err)
	}
}
