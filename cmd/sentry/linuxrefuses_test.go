package main

import (
	"strings"
	"testing"
)

// TestLinuxRefusesAsLinux: calls Linux itself fails on a tmpfs file
// (swapon, swapoff: no swap on tmpfs; quotactl: not a block device;
// quotactl_fd: no quota options; uselib: a kernel without it) give the
// same errno in the sandbox's tmpfs as natively on /dev/shm, as root and
// as nobody (EPERM first for swap), instead of EOPNOTSUPP.
func TestLinuxRefusesAsLinux(t *testing.T) {
	requireNamespaces(t)
	probe := testdataPath(t, "linuxrefuses.py")
	for _, g := range guests {
		t.Run(g.name, func(t *testing.T) {
			wrap := strings.Join(g.wrap, " ")
			out := sameOnBothTmpfs(t, `chmod o+x "$1"; d="$1/lr-`+g.name+`"; mkdir "$d" && chmod 777 "$d" && `+wrap+` `+python+` `+probe+` "$d"`)
			if strings.Count(out, "\n") != 16 {
				t.Fatalf("probe did not run to the end:\n%s", out)
			}
		})
	}
}
