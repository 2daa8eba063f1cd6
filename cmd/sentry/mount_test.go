package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Mounts a guest makes in the sandbox's tmpfs (issue #15): mount(2) of a
// tmpfs on a directory of it is a new sentry mount, with read-only,
// remount, umount2 and the mount lists as Linux has them.

// TestMountProbeSameAsNative runs testdata/mountprobe.py natively, in a
// mount namespace of its own on a directory of a kernel tmpfs, and in the
// sandbox on /tmp (a root guest), and compares every line: the new
// mount's stat, statfs and mountinfo, EROFS from each write-type call on
// a read-only mount, EBUSY for a remount read-only while a file is open
// for writing or mapped, umount2's EBUSY, EINVAL, EAGAIN and MNT_DETACH,
// nested and stacked mounts, bad types and options, and EPERM without
// CAP_SYS_ADMIN.
func TestMountProbeSameAsNative(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounts need root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare not installed (needs util-linux)")
	}
	probe := testdataPath(t, "mountprobe.py")
	dir, err := os.MkdirTemp("/dev/shm", "sentry-mount-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	native := runCmd(t, "", "unshare", "--mount", "--propagation", "private", "python3", probe, dir)
	if native.code != 0 || !strings.HasPrefix(native.stdout, "mount: ok\n") || strings.Count(native.stdout, "\n") < 100 {
		t.Fatalf("native run: %+v", native)
	}
	// Mounts need CAP_SYS_ADMIN, which only the host's root has.
	sb := sandboxed(t, hostRootFlags, "python3", probe, "/tmp")
	nl, sl := strings.Split(native.stdout, "\n"), strings.Split(sb.stdout, "\n")
	for i := range max(len(nl), len(sl)) {
		var n, s string
		if i < len(nl) {
			n = nl[i]
		}
		if i < len(sl) {
			s = sl[i]
		}
		if n != s {
			t.Errorf("line %d differs\nnative:  %s\nsandbox: %s", i+1, n, s)
		}
	}
	if sb.code != native.code || t.Failed() {
		t.Fatalf("sandbox exit %d, stderr:\n%s", sb.code, sb.stderr)
	}
}

// TestMountHostile runs testdata/mounthostile.py as a root guest: the
// sandbox's /tmp cannot be unmounted (EINVAL: under it would be the cover
// and the host's /tmp), bind and move mounts in or out of the sandbox's
// tmpfs are refused, another file system type there is ENODEV, a relative
// target after chdir lands in the sandbox, a symlink target another
// thread flips lands on one of its two targets (so does a target string
// rewritten in memory during the call), a tmpfs over a host
// directory stays in the guest's namespace, nested mounts unmount in
// order, and mounts stop at --mount-max with ENOSPC. On the host: no
// mount on the host directory, nothing of the guest in it or in /tmp.
func TestMountHostile(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounts need root")
	}
	host := hostDir(t)
	tok := token(t)
	// A file of the host's /tmp the guest must never see.
	hostFile := filepath.Join("/tmp", tok+"-host")
	if err := os.WriteFile(hostFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(hostFile)
	res := sandboxed(t, []string{"--mount-max", "80", "--userns=off"}, "python3", testdataPath(t, "mounthostile.py"), host, tok+"-guest", tok+"-host")
	want := `umount /tmp: EINVAL
umount /tmp lazy: EINVAL
umount /tmp/: EINVAL
/tmp after: ['mine'] False
mount over /tmp: ok
over /tmp: []
umount it: ok
/tmp again: ['mine'] False
umount /tmp again: EINVAL
bind /tmp onto host: ENOTSUP
bind /tmp/b onto host: ENOTSUP
bind host into /tmp: ENOTSUP
bind host /tmp into /tmp: ENOTSUP
move /tmp: ENOTSUP
other type into /tmp: ENODEV
move_mount host mount in: ENOTSUP
move_mount open_tree clone in: ENOTSUP
/tmp/mv: [] EINVAL
mount relative: ok
drop relative: written
umount relative: ok
symlink race outcomes: ['ok']
symlink race mounts left on /tmp/x only: True
target rewritten outcomes: True
mount over host: ok
drop over host: written
mount n: ok
mount n/m: ok
drop nested: written
umount n: EBUSY
umount n lazy: ok
n after lazy: []
many: ENOSPC True
umount many: ok
mount after one umount: ok
`
	if res.code != 0 || res.stdout != want {
		t.Errorf("guest saw (exit %d):\n%s\nwant:\n%s\nstderr:\n%s", res.code, res.stdout, want, res.stderr)
	}
	unmountUnder(t, host)
	if ents, _ := os.ReadDir(host); len(ents) != 0 {
		t.Errorf("the guest wrote into the host directory: %v", ents)
	}
	checkHostTmp(t, tok+"-guest")
}

// TestTmpfsFlagOwner: --tmpfs takes uid= and gid= as mount -t tmpfs
// does, for the root directory's owner.
func TestTmpfsFlagOwner(t *testing.T) {
	r := sandboxed(t, []string{"--tmpfs", "/tmp:uid=65534,gid=100,mode=750"}, "stat", "-c", "%u %g %a", "/tmp")
	if r.code != 0 || r.stdout != "65534 100 750\n" {
		t.Errorf("got %+v, want 65534 100 750", r)
	}
}
