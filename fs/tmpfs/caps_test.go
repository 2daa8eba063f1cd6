package tmpfs

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

func capsOf(caps ...int) vfs.CapSet {
	var s vfs.CapSet
	for _, c := range caps {
		s |= 1 << c
	}
	return s
}

// TestLinuxCapabilities runs the permission checks that capabilities
// decide (generic_permission, inode_owner_or_capable, chown_ok and
// chgrp_ok, check_sticky, vfs_mknod, file_remove_privs, mode_strip_sgid,
// setattr_prepare's S_ISGID rule) for users holding one capability each,
// root holding none, and root holding all, on Linux's tmpfs with the
// thread's capabilities set the same way, and compares every result.
func TestLinuxCapabilities(t *testing.T) {
	creds := []struct {
		name string
		c    *vfs.Credentials
	}{
		{"root", rootCreds},
		{"root without capabilities", &vfs.Credentials{}},
		{"root with CAP_DAC_READ_SEARCH", &vfs.Credentials{Caps: capsOf(vfs.CapDacReadSearch)}},
		{"root with CAP_DAC_OVERRIDE", &vfs.Credentials{Caps: capsOf(vfs.CapDacOverride)}},
		{"root with CAP_FOWNER", &vfs.Credentials{Caps: capsOf(vfs.CapFowner)}},
		{"root with CAP_CHOWN", &vfs.Credentials{Caps: capsOf(vfs.CapChown)}},
		{"root with CAP_FSETID", &vfs.Credentials{Caps: capsOf(vfs.CapFsetid)}},
		{"root with CAP_MKNOD", &vfs.Credentials{Caps: capsOf(vfs.CapMknod)}},
		{"root with the rest", &vfs.Credentials{Caps: vfs.AllCaps &^ capsOf(vfs.CapChown, vfs.CapDacOverride,
			vfs.CapDacReadSearch, vfs.CapFowner, vfs.CapFsetid, vfs.CapMknod)}},
		{"user", userCreds},
		{"stranger", strangerCreds},
		{"user with CAP_DAC_OVERRIDE", &vfs.Credentials{UID: 1000, GID: 1000, Caps: capsOf(vfs.CapDacOverride)}},
		{"user with CAP_DAC_READ_SEARCH", &vfs.Credentials{UID: 1000, GID: 1000, Caps: capsOf(vfs.CapDacReadSearch)}},
		{"stranger with CAP_FOWNER", &vfs.Credentials{UID: 1002, GID: 1002, Caps: capsOf(vfs.CapFowner)}},
		{"stranger with CAP_CHOWN", &vfs.Credentials{UID: 1002, GID: 1002, Caps: capsOf(vfs.CapChown)}},
		{"stranger with CAP_FSETID", &vfs.Credentials{UID: 1002, GID: 1002, Caps: capsOf(vfs.CapFsetid)}},
		{"stranger with CAP_MKNOD", &vfs.Credentials{UID: 1002, GID: 1002, Caps: capsOf(vfs.CapMknod)}},
	}
	for _, tc := range creds {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			own := int64(c.UID)
			// Set-id bits are set after the owner: a chown would drop them.
			setup := []step{
				{op: "create", a: "f000", mode: 0},
				{op: "write", a: "f000", n: 10},
				{op: "mkdir", a: "d000", mode: 0700},
				{op: "mkdir", a: "d000/sub", mode: 0755},
				{op: "chmod", a: "d000", mode: 0},
				{op: "create", a: "x000", mode: 0},
				{op: "create", a: "x001", mode: 0001},
				{op: "create", a: "u", mode: 0644},
				{op: "chown", a: "u", off: 1000, n: 1000},
				{op: "mkdir", a: "st", mode: 01777},
				{op: "chown", a: "st", off: 1001, n: 1001},
				{op: "create", a: "st/v", mode: 0644},
				{op: "chown", a: "st/v", off: 1000, n: 1000},
				{op: "create", a: "suid", mode: 0777},
				{op: "chown", a: "suid", off: 1000, n: 1000},
				{op: "chmod", a: "suid", mode: 06777},
				{op: "create", a: "sgid", mode: 0766},
				{op: "chown", a: "sgid", off: 1000, n: 500},
				{op: "chmod", a: "sgid", mode: 02766},
				{op: "create", a: "tsuid", mode: 0777},
				{op: "chown", a: "tsuid", off: 1000, n: 1000},
				{op: "chmod", a: "tsuid", mode: 06777},
				{op: "create", a: "mine", mode: 0644},
				{op: "chown", a: "mine", off: own, n: 500},
				{op: "create", a: "csgid", mode: 0755},
				{op: "chown", a: "csgid", off: own, n: 500},
				{op: "chmod", a: "csgid", mode: 02755},
				{op: "mkdir", a: "sg", mode: 0777},
				{op: "chown", a: "sg", off: 0, n: 500},
				{op: "chmod", a: "sg", mode: 02777},
			}
			probes := []step{
				{op: "access", a: "f000", mode: 4},
				{op: "access", a: "f000", mode: 2},
				{op: "access", a: "f000", mode: 1},
				{op: "access", a: "f000", mode: 6},
				{op: "read", a: "f000", n: 10},
				{op: "access", a: "d000", mode: 4},
				{op: "access", a: "d000", mode: 1},
				{op: "access", a: "d000", mode: 2},
				{op: "access", a: "d000", mode: 5},
				{op: "access", a: "d000/sub", mode: 4},
				{op: "access", a: "x000", mode: 1},
				{op: "access", a: "x001", mode: 1},
				{op: "write", a: "u", n: 3},
				{op: "touch", a: "u"},
				{op: "settime", a: "u", off: 1000000},
				{op: "setmode", a: "u", mode: 0664},
				{op: "setowner", a: "u", off: 1000, n: -1},
				{op: "setowner", a: "u", off: -1, n: 1000},
				{op: "setowner", a: "u", off: -1, n: 1001},
				{op: "setowner", a: "u", off: 1001, n: -1},
				{op: "setowner", a: "mine", off: -1, n: 600},
				{op: "setmode", a: "mine", mode: 02755},
				{op: "setowner", a: "csgid", off: -1, n: int(c.GID)},
				{op: "mknod", a: "null", mode: unix.S_IFCHR | 0666, off: int64(unix.Mkdev(1, 3))},
				{op: "mknod", a: "fifo", mode: unix.S_IFIFO | 0666},
				{op: "mknod", a: "wh", mode: unix.S_IFCHR | 0666},
				{op: "unlink", a: "st/v"},
				{op: "write", a: "suid", n: 1},
				{op: "write", a: "sgid", n: 1},
				{op: "setowner", a: "sgid", off: -1, n: 1000},
				{op: "trunc", a: "tsuid", n: 1},
				{op: "create", a: "sg/x", mode: 02775},
				{op: "mkdir", a: "d000/new", mode: 0755},
				{op: "rmdir", a: "d000/sub"},
			}
			for k := range probes {
				probes[k].cred = c
			}
			watch := []string{"f000", "d000", "d000/sub", "u", "mine", "csgid", "null", "fifo", "wh", "st", "st/v", "suid", "sgid", "tsuid", "sg", "sg/x"}
			df := shmDiffer(t, watch, append(setup, probes...))
			df.run(append(setup, probes...))
		})
	}
}

// TestCapabilityChecks pins single answers of the capability rules that
// TestLinuxCapabilities compares, so that they are checked where Linux's
// tmpfs is not at hand, and documents them.
func TestCapabilityChecks(t *testing.T) {
	noCaps := &vfs.Credentials{}
	fs := newTestFS(t, Options{})
	f := mustCreate(t, fs, "f", 0, rootCreds)
	for _, tc := range []struct {
		name string
		c    *vfs.Credentials
		mask uint32
		want unix.Errno
	}{
		{"root reads a mode-000 file", rootCreds, vfs.MayRead, 0},
		{"root without capabilities does not", noCaps, vfs.MayRead, unix.EACCES},
		{"CAP_DAC_READ_SEARCH reads", &vfs.Credentials{Caps: capsOf(vfs.CapDacReadSearch)}, vfs.MayRead, 0},
		{"CAP_DAC_READ_SEARCH does not write", &vfs.Credentials{Caps: capsOf(vfs.CapDacReadSearch)}, vfs.MayWrite, unix.EACCES},
		{"CAP_DAC_OVERRIDE writes", &vfs.Credentials{UID: 1000, Caps: capsOf(vfs.CapDacOverride)}, vfs.MayWrite, 0},
		{"another namespace's CAP_DAC_OVERRIDE does not, unmapped", &vfs.Credentials{UID: 1000, Caps: vfs.AllCaps, Foreign: true}, vfs.MayRead, unix.EACCES},
		{"another namespace's CAP_DAC_OVERRIDE does, mapped", &vfs.Credentials{UID: 1000, Caps: vfs.AllCaps, Foreign: true,
			UIDMap: vfs.IDMap{{First: 0, Count: 1}}, GIDMap: vfs.IDMap{{First: 0, Count: 1}}}, vfs.MayRead, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errnoOf(t, f.Inode().CheckPermission(tc.c, tc.mask)); got != tc.want {
				t.Errorf("CheckPermission(%v) = %v, want %v", tc.mask, got, tc.want)
			}
		})
	}
	// vfs_mknod asks capable(CAP_MKNOD): the host's namespace.
	for _, tc := range []struct {
		c    *vfs.Credentials
		want unix.Errno
	}{
		{rootCreds, 0},
		{noCaps, unix.EPERM},
		{&vfs.Credentials{Caps: vfs.AllCaps, Foreign: true, UIDMap: vfs.IDMap{{First: 0, Count: 1 << 31}}, GIDMap: vfs.IDMap{{First: 0, Count: 1 << 31}}}, unix.EPERM},
	} {
		name := fmt.Sprintf("null-%d", len(tc.c.UIDMap))
		if tc.c == noCaps {
			name = "null-nocaps"
		}
		_, err := fs.Root().(vfs.Mknoder).Mknod(name, unix.S_IFCHR|0666, uint64(unix.Mkdev(1, 3)), tc.c)
		if got := errnoOf(t, err); got != tc.want {
			t.Errorf("Mknod as %+v = %v, want %v", tc.c, got, tc.want)
		}
	}
}
