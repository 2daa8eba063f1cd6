package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The guest runs in a mount namespace of its own with an empty read-only
// tmpfs over each sentry mount point, and the host special files standing
// for its FIFOs, sockets and device nodes live in a private directory that
// exists only there (platform/launch/namespace.go,
// sentry/host_specials.go). These tests look at the host from outside.

// nobody is the setpriv prefix that runs a command as nobody.
var nobody = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}

// python is the system's python3, which nobody can run (root's PATH may
// start with a private pyenv).
const python = "/usr/bin/python3"

// guests are the identities a guest runs with: the sandbox's own (root)
// and nobody, dropped inside the sandbox.
var guests = []struct {
	name string
	wrap []string
}{{"root", nil}, {"nobody", nobody}}

func requireNamespaces(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("requires root: the sandbox makes the guest's mount namespace only as root")
	}
	for _, tool := range []string{"setpriv", python} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
}

// nsToken is a random name for this run's files (the host side looks
// for it).
func nsToken(t *testing.T) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// runIn runs argv in directory dir.
func runIn(t *testing.T, dir string, argv ...string) result {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	return runCommand(t, cmd)
}

// runJob is runIn in a process group of its own, as a shell starts a
// job: what argv signals with kill(0) stays out of the test's own
// processes.
func runJob(t *testing.T, dir string, argv ...string) result {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return runCommand(t, cmd)
}

// readableTempDir makes a directory under /var/tmp (the host's, outside
// any sandbox's tmpfs) that every user may read, removed at the test's
// end.
func readableTempDir(t *testing.T, prefix string) string {
	t.Helper()
	dir := tempDirIn(t, "/var/tmp", prefix)
	os.Chmod(dir, 0o755)
	return dir
}

// tempDirIn makes a new directory in parent, removed at the test's end:
// t.TempDir's, on a file system of the test's choosing (/dev/shm for a
// native probe's run on a kernel tmpfs, where its fixed names must not
// meet what else is there).
func tempDirIn(t *testing.T, parent, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// runCommand runs cmd and returns its output and exit code; a command
// that cannot be run fails the test.
func runCommand(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	argv := cmd.Args
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	return result{so.String(), se.String(), code}
}

// noHostFiles fails for each name that exists in the host's /tmp (and
// removes it).
func noHostFiles(t *testing.T, r result, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join("/tmp", n)
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("the guest made %s on the host (guest: %+v)", p, r)
			os.Remove(p)
		}
	}
}

// TestCoverStopsPathsAroundMount: paths the sentry does not see as its
// mount's (a host symlink into the mount point, the same after "..", the
// magic link /proc/self/root, and io_uring, which the seccomp filter never
// sees) reach the empty read-only cover, never the host's /tmp.
func TestCoverStopsPathsAroundMount(t *testing.T) {
	requireNamespaces(t)
	uring := buildC(t, "uring_open")
	tok := nsToken(t)
	link := "/var/tmp/sentry-link-" + tok
	if err := os.Symlink("/tmp", link); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(link)
	for _, g := range guests {
		t.Run(g.name, func(t *testing.T) {
			n := func(v string) string { return tok + "-" + g.name + "-" + v }
			script := `echo y > ` + link + `/` + n("symlink") + `; echo symlink $?
echo y > /tmp/..` + link + `/` + n("redirect") + `; echo redirect $?
echo y > /proc/self/root/tmp/` + n("procroot") + `; echo procroot $?
` + uring + ` /tmp/` + n("uring") + ` >/dev/null; echo uring $?
echo y > /tmp/` + n("sandbox") + ` && cat /tmp/` + n("sandbox")
			r := sandboxed(t, nil, append(g.wrap, "sh", "-c", script)...)
			if r.code != 0 || !strings.HasSuffix(r.stdout, "uring 0\ny\n") {
				t.Fatalf("guest did not run to the end: %+v", r)
			}
			noHostFiles(t, r, n("symlink"), n("redirect"), n("procroot"), n("uring"), n("sandbox"))
		})
	}
}

// TestStartInMountPoint: a guest started with a sentry mount point as its
// working directory is in the sandbox's /tmp, for the sentry's calls
// (touch, ls) and for a relative call the sentry never sees (io_uring),
// which reaches the cover; /proc/self/mountinfo shows one mount there, the
// sentry's tmpfs.
func TestStartInMountPoint(t *testing.T) {
	requireNamespaces(t)
	uring := buildC(t, "uring_open")
	tok := nsToken(t)
	for _, g := range guests {
		t.Run(g.name, func(t *testing.T) {
			f, rel := tok+"-"+g.name+"-touched", tok+"-"+g.name+"-uring"
			script := `touch ` + f + ` && ls && pwd && ` + uring + ` ` + rel + ` >/dev/null &&
grep -c ' /tmp ' /proc/self/mountinfo; grep -c ' /tmp[/ ]' /proc/mounts; findmnt -n -o FSTYPE,SOURCE,TARGET /tmp
grep -c sentry /proc/self/mountinfo`
			r := runIn(t, "/tmp", append([]string{sentryBin, "run", "--"}, append(g.wrap, "sh", "-c", script)...)...)
			want := f + "\n/tmp\n1\n1\ntmpfs  tmpfs  /tmp\n0\n"
			if got := strings.Join(strings.Fields(r.stdout), " "); got != strings.Join(strings.Fields(want), " ") {
				t.Errorf("got %+v, want stdout %q", r, want)
			}
			noHostFiles(t, r, f, rel)
		})
	}
}

// TestSandboxesApart: one sandbox's root guest holds a FIFO, a stream and
// a datagram socket and a file in its /tmp, all mode 0666 (0777), while a
// guest of a second sandbox (nobody, its sentry root or nobody too; or
// root, of a root sentry) looks for them through every host path it can
// find: /proc/net/unix, the fd links and roots of every process, the
// private directories' names and what they list, and every process's
// descriptors by pidfd_getfd (testdata/neighbour.py). It must reach none.
// The root guest is the one --userns contains: as the host's root
// (--userns=off) it took the holder's sentry's store and read the file.
func TestSandboxesApart(t *testing.T) {
	requireNamespaces(t)
	probe := testdataCopy(t, "neighbour.py")
	dir := readableTempDir(t, "sentry-apart-")
	holder := `
import os, socket, sys, time
ready, done = sys.argv[1], sys.argv[2]
os.umask(0)
os.mkfifo("/tmp/fifo", 0o666)
fd = os.open("/tmp/fifo", os.O_RDWR)
os.write(fd, b"fifo-secret")
s = socket.socket(socket.AF_UNIX); s.bind("/tmp/sock"); s.listen(8); s.setblocking(False)
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind("/tmp/dgram"); d.setblocking(False)
with open("/tmp/file", "w") as f: f.write("file-secret")
held = open("/tmp/file")
open(ready, "w").close()
accepted = received = 0
deadline = time.time() + 120
while not os.path.exists(done) and time.time() < deadline:
    try: s.accept()[0].close(); accepted += 1
    except BlockingIOError: pass
    try: d.recv(100); received += 1
    except BlockingIOError: pass
    time.sleep(0.05)
os.set_blocking(fd, False)
try: left = os.read(fd, 100)
except BlockingIOError: left = b""
print("accepted", accepted, "received", received, "fifo", left)
`
	for _, b := range []struct {
		name string
		argv []string
	}{
		{"root-sentry", append(append([]string{sentryBin, "run", "--"}, nobody...), python, probe)},
		{"nobody-sentry", append(append([]string{}, nobody...), sentryBin, "run", "--", python, probe)},
		{"root-guest", []string{sentryBin, "run", "--", python, probe}},
	} {
		t.Run(b.name, func(t *testing.T) {
			ready, done := filepath.Join(dir, b.name+".ready"), filepath.Join(dir, b.name+".done")
			a := exec.Command(sentryBin, "run", "--", python, "-c", holder, ready, done)
			a.Dir = "/"
			aout, exited := startReady(t, a, ready)
			r := runIn(t, "/", b.argv...)
			os.WriteFile(done, nil, 0o644)
			<-exited
			if r.code != 0 || !strings.Contains(r.stdout, "descriptors asked:") || strings.Contains(r.stdout, "unix sockets with a path: 0\n") {
				t.Fatalf("the probe did not run: %+v", r)
			}
			if strings.Contains(r.stdout, "reached") {
				t.Errorf("a guest of another sandbox reached the holder's files:\n%s", r.stdout)
			}
			if want := "accepted 0 received 0 fifo b'fifo-secret'\n"; aout.String() != want {
				t.Errorf("holder: %q, want %q", aout.String(), want)
			}
		})
	}
}

// TestNoGuestSignalsASentry: a root guest tries every way it has to send
// SIGKILL to another sandbox's sentry and to its own (testdata/sigreach.c:
// kill, tkill, tgkill, both sigqueues, pidfd_send_signal by pidfd and by
// /proc directory, prlimit), and to starve it (setpriority, sched_setparam,
// sched_setscheduler, sched_setattr, sched_setaffinity, ioprio_set, of its
// process, a thread, its process group: refused by the kernel as the
// sentry's permitted capabilities hold CAP_SYS_ADMIN, which the guest's
// lack, cap_safe_nice), each EPERM; it makes either sentry the owner
// of a socket's SIGIO (F_SETOWN, F_SETOWN_EX by process, thread and group,
// FIOSETOWN, SIOCSPGRP: Linux allows these, and so does the sandbox), and
// then F_SETSIG of a signal the sentry would act on is EPERM, while every
// other (SIGIO, SIGURG, the real-time ones, ...) is sent to it for real.
// The other sandbox lives with its file, and so does the probe's. Before
// the sentries took their own uid,
// kill alone killed the other sentry and its tmpfs with it. What a guest
// reaches of its own must still be reached: itself as an owner (and the
// SIGIOs it gets), its child, its process group (the kernel skips the
// sentry in it).
func TestNoGuestSignalsASentry(t *testing.T) {
	requireNamespaces(t)
	probe := buildC(t, "sigreach")
	dir := readableTempDir(t, "sentry-signals-")
	ready, done := filepath.Join(dir, "ready"), filepath.Join(dir, "done")
	holder := exec.Command(sentryBin, "run", "--", "sh", "-c",
		`echo keep > /tmp/f && touch "$0" && while [ ! -e "$1" ]; do sleep 0.05; done; cat /tmp/f`, ready, done)
	// A job of its own, as a shell starts one: in the probe's process
	// group its guest would get the probe's signal to that group (a
	// guest's signals reach other sandboxes' guests, as the README says;
	// their sentries are what they must not reach).
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	hout, exited := startReady(t, holder, ready)
	// Its own job too: it signals its process group, which holds its
	// sentry (skipped) and, but for this, the test's own processes.
	r := runJob(t, "/", sentryBin, "run", "--", probe, strconv.Itoa(holder.Process.Pid))
	os.WriteFile(done, nil, 0o644)
	<-exited
	if hout.String() != "keep\n" || holder.ProcessState.ExitCode() != 0 {
		t.Errorf("the other sandbox: %q, exit %d; want its file and 0", hout.String(), holder.ProcessState.ExitCode())
	}
	if r.code != 0 {
		t.Fatalf("the probe's sandbox: exit %d, want 0 (its own sentry lives)\n%s%s", r.code, r.stdout, r.stderr)
	}
	refused := 0
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		name, got, _ := strings.Cut(line, ": ")
		who, what, _ := strings.Cut(name, " ")
		want := "0"
		switch {
		case name == "child killed":
			want = "1"
		case name == "self sigios received":
			want = "2"
		case strings.HasPrefix(what, "setsig "):
			// The signals a sentry ignores (and SIGIO's 0); the test's
			// point is that the sentries live after each was sent.
			sig, _ := strconv.Atoi(strings.TrimPrefix(what, "setsig "))
			switch {
			case sig == 0, sig == 14, sig == 17, sig == 18, sig == 23, sig == 28, sig == 29, sig == 30, sig >= 34:
			default:
				want = "EPERM"
				refused++
			}
		case who != "self" && who != "child" && !strings.Contains(what, "OWN") && !strings.Contains(what, "PGRP") && !strings.HasPrefix(what, "sigio sent"):
			// The signalling calls at a sentry.
			want = "EPERM"
			refused++
		}
		if got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if want := 2 * (8 + 9 + 26); refused != want {
		t.Errorf("%d tries refused at the sentries, want %d:\n%s", refused, want, r.stdout)
	}
}

// TestNothingLeftAfterSIGKILL: a guest makes a FIFO, a socket and a file
// (and opens them) and the sentry is killed with SIGKILL: nothing of the
// sandbox remains in the host's /tmp, /dev/shm or $TMPDIR (a private one
// here, so that any new entry there is the sandbox's; in the shared
// directories, an entry naming the sentry's pid is).
func TestNothingLeftAfterSIGKILL(t *testing.T) {
	requireNamespaces(t)
	dir := readableTempDir(t, "sentry-kill-")
	os.Chmod(dir, 0o1777)
	tmpdir := filepath.Join(dir, "tmpdir")
	os.Mkdir(tmpdir, 0o1777)
	for _, g := range guests {
		t.Run(g.name, func(t *testing.T) {
			ready := filepath.Join(dir, g.name+".ready")
			script := `cd /tmp && mkfifo fifo && exec 3<>fifo && echo data > file && exec 4<file &&
` + python + ` -c 'import socket; s = socket.socket(socket.AF_UNIX); s.bind("/tmp/sock"); s.listen(); open("` + ready + `", "w").close(); s.accept()'`
			list := func() map[string][]string {
				m := map[string][]string{}
				for _, d := range []string{"/tmp", "/dev/shm", tmpdir} {
					entries, _ := os.ReadDir(d)
					for _, e := range entries {
						m[d] = append(m[d], e.Name())
					}
				}
				return m
			}
			before := list()
			cmd := exec.Command(sentryBin, append([]string{"run", "--"}, append(g.wrap, "sh", "-c", script)...)...)
			cmd.Dir = "/"
			cmd.Env = append(os.Environ(), "TMPDIR="+tmpdir)
			_, exited := startReady(t, cmd, ready)
			guestPids := descendants(cmd.Process.Pid)
			cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			waitGone(t, guestPids)
			after := list()
			pid := "-" + strconv.Itoa(cmd.Process.Pid) + "-"
			for d, names := range after {
				old := map[string]bool{}
				for _, n := range before[d] {
					old[n] = true
				}
				var left []string
				for _, n := range names {
					if !old[n] && (d == tmpdir || strings.Contains(n, pid)) {
						left = append(left, n)
					}
				}
				sort.Strings(left)
				if len(left) > 0 {
					t.Errorf("left in %s after SIGKILL of the sentry: %v", d, left)
					for _, n := range left {
						os.RemoveAll(filepath.Join(d, n))
					}
				}
			}
		})
	}
}

// startReady starts cmd, its output into a buffer, and waits until it
// made file ready; it fails the test when cmd exits first or a deadline
// against hangs passes. The channel is closed once cmd exited (the buffer
// may be read then).
func startReady(t *testing.T, cmd *exec.Cmd, ready string) (*bytes.Buffer, chan struct{}) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	for deadline := time.Now().Add(60 * time.Second); ; {
		if _, err := os.Stat(ready); err == nil {
			return &out, exited
		}
		select {
		case <-exited:
			if _, err := os.Stat(ready); err == nil {
				return &out, exited
			}
			t.Fatalf("%v exited before it was ready: %s", cmd.Args, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			t.Fatalf("%v was not ready in time: %s", cmd.Args, out.String())
		}
	}
}

// descendants are the pids of pid's descendants.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	for todo := []int{pid}; len(todo) > 0; {
		p := todo[0]
		todo = todo[1:]
		out = append(out, children[p]...)
		todo = append(todo, children[p]...)
	}
	return out
}

// waitGone waits until each pid has exited (or is a zombie waiting for a
// reaper), and fails after a deadline.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for {
			data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil || strings.Contains(string(data), ") Z ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("guest process %d survived the sentry's SIGKILL: %s", pid, data)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestUnreadableSockaddrNotPassed: a guest that makes itself non-dumpable
// (as ssh-agent does) hides its memory from a sentry without
// CAP_SYS_PTRACE, which then cannot read a bind's or connect's address.
// The call must fail (EFAULT, as for an address the kernel cannot read),
// not pass to the host, which can read it: run by nobody, the sentry has
// no covers, and the host's /tmp would get the socket.
func TestUnreadableSockaddrNotPassed(t *testing.T) {
	requireNamespaces(t)
	name := "/tmp/" + nsToken(t) + "-nondumpable"
	script := `
import ctypes, socket, sys
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
for what, call in (("bind", socket.socket.bind), ("connect", socket.socket.connect)):
    try:
        call(socket.socket(socket.AF_UNIX), sys.argv[1])
        print(what, "ok")
    except OSError as e:
        print(what, e.errno)
`
	r := runIn(t, "/", append(append([]string{}, nobody...), sentryBin, "run", "--", python, "-c", script, name)...)
	noHostFiles(t, r, filepath.Base(name))
	if r.stdout != "bind 1\nconnect 14\n" {
		t.Errorf("got %+v, want bind EPERM (the sentry cannot take the socket either) and connect EFAULT", r)
	}
}

// TestUserNSRefused: where the kernel refuses the guest a user namespace
// (here a namespace of the test's own whose user.max_user_namespaces is
// 0), --userns=auto runs the guest without one and stderr says so, and
// --userns=on fails as the sandbox's own failure (125), naming the user
// namespace and the kernel's errno.
func TestUserNSRefused(t *testing.T) {
	requireNamespaces(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	guest := `echo kept > /tmp/f && cat /tmp/f`
	for _, c := range []struct {
		userns string
		code   int
		stdout string
		stderr []string
	}{
		{"auto", 0, "kept\n", []string{"no user namespace for the guest (no space left on device)"}},
		{"on", 125, "", []string{"user namespace of its own", "no space left on device"}},
	} {
		script := `echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" run --userns=` + c.userns + ` -- sh -c '` + guest + `'`
		r := runJob(t, "/", "unshare", "-U", "-r", "--mount", "sh", "-c", script, sentryBin)
		if r.code != c.code || r.stdout != c.stdout {
			t.Errorf("--userns=%s: exit %d, stdout %q, want %d, %q (stderr: %s)", c.userns, r.code, r.stdout, c.code, c.stdout, r.stderr)
		}
		for _, want := range c.stderr {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("--userns=%s: stderr %q does not say %q", c.userns, r.stderr, want)
			}
		}
	}
}
