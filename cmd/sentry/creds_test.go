package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// credsProbe runs testdata/creds.py natively on /dev/shm and in the
// sandbox on /tmp: the files are made as root, then the probe runs under
// wrap (a command prefix that changes its credentials) with arg, on the
// tmpfs and, through the tmpfs's "..", on a fresh host directory.
// Linux's answers on /dev/shm are the reference.
func credsProbe(t *testing.T, wrap, arg string) string {
	t.Helper()
	return credsProbeWith(t, nil, wrap, arg)
}

// credsProbeWith is credsProbe with the sandbox run with flags.
func credsProbeWith(t *testing.T, flags []string, wrap, arg string) string {
	t.Helper()
	py := testdataCopy(t, "creds.py")
	return sameOnBothTmpfsWith(t, flags, `chmod 755 "$1" && H=$(mktemp -d /var/tmp/sentry-creds-XXXXXX) && chmod 755 "$H" &&
/usr/bin/python3 `+py+` setup "$1" "$H" &&
`+wrap+` /usr/bin/python3 `+py+` probe "$1" "$H" `+arg+`; rc=$?; rm -rf "$H"; exit $rc`)
}

func requireCredsTools(t *testing.T) {
	for _, tool := range []string{"setpriv", "/usr/bin/python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s, which runs the probe as other users, is not installed (.ci/install installs it)", tool)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("skipped: the probe chowns files to other users and runs guests as them, which needs root (CI runs as root)")
	}
}

// wantLines fails unless every line is in out.
func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l+"\n") {
			t.Fatalf("output lacks %q:\n%s", l, out)
		}
	}
}

// TestCaplessRoot: root without capabilities (its bounding set emptied
// before its exec) is an ordinary user on the sentry's files and on host
// files reached through the tmpfs: a mode-000 file is unreadable, other
// users' files cannot be changed, no device node can be made, and so on,
// as Linux decides on /dev/shm. On unotify the host path is served by the
// sentry's own thread, which must act with the guest's capabilities.
func TestCaplessRoot(t *testing.T) {
	requireCredsTools(t)
	out := credsProbe(t, "setpriv --inh-caps=-all --bounding-set=-all --", "")
	wantLines(t, out, "caps 0000000000000000", "probe read secret EACCES", "probe read nob000 EACCES", "probe list d000 EACCES",
		"probe chown mine to nobody EPERM", "probe mknod null EPERM", "probe set trusted EPERM",
		"probe write suid ok 0o100777", "probe host read secret EACCES", "probe host read nob600 EACCES",
		"probe host stat nobdir/f EACCES", "probe host access nob600 False", "probe host create in nobdir EACCES")
}

// TestRootCapabilities: the host's root (--userns=off) with its
// capabilities does all that, as on Linux (the reference for the probe's
// other runs).
func TestRootCapabilities(t *testing.T) {
	requireCredsTools(t)
	out := credsProbeWith(t, hostRootFlags, "", "")
	wantLines(t, out, "probe read secret b's3cret'", "probe mknod null ok", "probe host read secret b'host s3cret'",
		"probe host create in nobdir ok", "probe write suid ok 0o106777")
}

// TestUserNSRootCapabilities: root in the sandbox's user namespace (the
// default) keeps its power over files, the host's and the sentry's, which
// its namespace maps every owner of; what the initial namespace keeps
// (CAP_MKNOD for a device, CAP_SYS_ADMIN for trusted. attributes,
// CAP_FSETID when a write keeps set-id bits) it has not, as Linux decides
// for the same credentials (the native run is in such a namespace too).
func TestUserNSRootCapabilities(t *testing.T) {
	requireCredsTools(t)
	out := credsProbe(t, "", "")
	wantLines(t, out, "probe read secret b's3cret'", "probe chown mine to nobody ok", "probe mknod null EPERM", "probe set trusted EPERM",
		"probe write suid ok 0o100777", "probe host read secret b'host s3cret'", "probe host create in nobdir ok")
}

// TestNobodyCapabilities: an unprivileged guest, as before.
func TestNobodyCapabilities(t *testing.T) {
	requireCredsTools(t)
	out := credsProbe(t, "setpriv --reuid=65534 --regid=65534 --clear-groups --", "")
	wantLines(t, out, "probe read secret EACCES", "probe read nob600 b'n6'", "probe chown nob to itself ok",
		"probe host read nob600 b'host n6'", "probe host read secret EACCES")
}

// TestCapsetDrop: capabilities dropped with capset(2), without an exec,
// count at once (the sentry observes capset).
func TestCapsetDrop(t *testing.T) {
	requireCredsTools(t)
	out := credsProbe(t, "", "capset")
	wantLines(t, out, "capset read secret EACCES", "capset host read secret EACCES", "capset chmod nob ok")
}

// TestSetfsuidCapabilities: setfsuid away from 0 drops the file system
// capabilities, and back to 0 restores them (cap_task_fix_setuid).
func TestSetfsuidCapabilities(t *testing.T) {
	requireCredsTools(t)
	out := credsProbe(t, "", "fsuid")
	wantLines(t, out, "fsuid EACCES b'n6' EACCES b'host n6'", "fsuid 0 b's3cret' b'host s3cret'")
}

// TestUserNamespaceCapabilities: a guest in a user namespace of its own
// has its capabilities there, which count over the files whose owner and
// group the namespace maps (capable_wrt_inode_uidgid) and for nothing
// that asks the host's namespace (CAP_MKNOD, trusted. attributes).
func TestUserNamespaceCapabilities(t *testing.T) {
	requireCredsTools(t)
	if err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "unshare", "--user", "--map-root-user", "true").Run(); err != nil {
		t.Skip("unprivileged user namespaces unavailable:", err)
	}
	out := credsProbe(t, "setpriv --reuid=65534 --regid=65534 --clear-groups -- unshare --user --map-root-user --", "userns")
	wantLines(t, out, "userns read secret EACCES", "userns read nob000 b'n0'", "userns set trusted EPERM", "userns chmod nob ok",
		"userns unlink st/v ok", "userns host read nob600 b'host n6'")
}
