package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// testdataPath is the absolute path of testdata file name, which guests
// of both runs can read.
func testdataPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sameOnBothTmpfs runs script (with the work directory as $1) natively on
// a fresh /dev/shm directory and in the sandbox on /tmp, and compares.
func sameOnBothTmpfs(t *testing.T, script string) string {
	t.Helper()
	return sameOnBothTmpfsWith(t, nil, script)
}

// hostRootFlags run a root guest as the host's root (--userns=off), with
// the capabilities of the host's namespace: what mknod of a device, the
// immutable flag, a mount need, none of which a root guest has in the
// sandbox's user namespace (the default).
var hostRootFlags = []string{"--userns=off"}

// rootModes are the two ways a root guest runs, each compared with Linux
// under the same credentials (nativeArgv).
var rootModes = []struct {
	name  string
	flags []string
}{{"userns", nil}, {"host-root", hostRootFlags}}

// sameOnBothTmpfsWith is sameOnBothTmpfs with the sandbox run with flags.
func sameOnBothTmpfsWith(t *testing.T, flags []string, script string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "sentry-prog-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	native := runNative(t, flags, "sh", "-c", script, "sh", dir)
	sb := sandboxed(t, flags, "sh", "-c", script, "sh", "/tmp")
	if native.code != 0 || native != sb {
		t.Fatalf("native and sandbox differ\nnative:  %+v\nsandbox: %+v", native, sb)
	}
	return sb.stdout
}

func TestGitSameAsNative(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed (needs Debian's git)")
	}
	out := sameOnBothTmpfs(t, `set -e
export GIT_AUTHOR_DATE='2020-01-01T00:00:00Z' GIT_COMMITTER_DATE='2020-01-01T00:00:00Z' HOME="$1"
cd "$1" && git init -q -b main repo && cd repo
git config user.email a@example.com && git config user.name sentry
echo hello > f && mkdir d && echo x > d/g && git add f d && git commit -qm one
echo more >> f && git commit -qam two && git mv d/g h && git commit -qm three
git log --format='%H %s' && git status --short && git fsck --no-progress 2>&1 && git cat-file -p HEAD:f`)
	if strings.Count(out, "\n") < 5 {
		t.Fatalf("short output: %q", out)
	}
}

func TestSqliteSameAsNative(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("sqlite3 not installed (needs Debian's sqlite3)")
	}
	out := sameOnBothTmpfs(t, `set -e
db="$1/t.db"
sqlite3 "$db" 'create table t(a integer primary key, b text);'
i=0
while [ $i -lt 10 ]; do
  sqlite3 "$db" "begin; with recursive c(x) as (select 1 union all select x+1 from c where x<1000) insert into t(b) select 'row'||x from c; commit;"
  i=$((i+1))
done
sqlite3 "$db" 'select count(*), sum(a), max(b) from t; pragma integrity_check;'`)
	if out != "10000|50005000|row999\nok\n" {
		t.Fatalf("got %q", out)
	}
	// Write-ahead logging maps the -shm file shared and writable in every
	// process that opens the database.
	out = sameOnBothTmpfs(t, `set -e
db="$1/w.db"
sqlite3 "$db" 'pragma journal_mode=wal; create table t(a integer primary key, b text);'
for i in 1 2 3 4 5; do
  sqlite3 "$db" "begin; with recursive c(x) as (select 1 union all select x+1 from c where x<1000) insert into t(b) select 'row'||x from c; commit;"
done
sqlite3 "$db" 'pragma journal_mode; select count(*), sum(a) from t; pragma integrity_check; pragma wal_checkpoint(truncate);'
ls "$1"`)
	if out != "wal\nwal\n5000|12502500\nok\n0|0|0\nw.db\n" {
		t.Fatalf("WAL: got %q", out)
	}
}

// TestMmapCoherent maps a file shared and private and checks, against
// Linux, that the mappings, read, write and truncate see the same data,
// also between processes that opened the file on their own.
func TestMmapCoherent(t *testing.T) {
	out := sameOnBothTmpfs(t, `python3 `+testdataPath(t, "mapprobe.py")+` "$1"`)
	for _, want := range []string{"pread after map write b'HELLO world'", "parent read child's map write b'child' b'child'", "ro shared rw 13"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestExecFromTmpfs builds a C program into the work directory and runs
// it from there, and runs "#!" scripts by path: $0 and the arguments are
// the kernel's (binfmt_script: interpreter, its one argument, the path as
// exec'd, the rest), an empty "#!" line is ENOEXEC.
func TestExecFromTmpfs(t *testing.T) {
	src := buildC(t, "forkwait") + ".c"
	if err := os.WriteFile(src, []byte("#include <stdio.h>\nint main(int c, char **v) { printf(\"%s %d\\n\", v[1], c); return 5; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sameOnBothTmpfs(t, `cd "$1" && gcc -o prog `+src+` && ./prog hi there; echo "rc=$?"
"$1/prog" x; echo "rc=$?"
printf '#!/bin/sh\necho "script $0 $1 $#"\nexit 4\n' > s.sh && chmod +x s.sh && ./s.sh a b; echo "rc=$?"
"$1/s.sh" c | sed "s|$1|D|"
printf '#!  /bin/sh   -e  \necho "args $0 $*"; false; echo notreached\n' > e.sh && chmod +x e.sh && ./e.sh x "y z"; echo "rc=$?"
printf '#!\necho hi\n' > n.sh && chmod +x n.sh && python3 -c 'import os
try: os.execv("./n.sh", ["n"])
except OSError as e: print("noexec", e.errno)'
chmod -x prog; ./prog 2>/dev/null; echo "rc=$?"
mkdir sub; ./sub 2>/dev/null; echo "rc=$?"`)
}

// TestPathsBackToHost: paths that go through the tmpfs and end on the
// host (a symlink to a host file, ".." out of the mount, relative paths
// from a working directory in the tmpfs) reach the host's files; so does
// chdir through a tmpfs symlink to a host directory (the host was given
// the guest's own path, which led to the cover: ENOENT).
func TestPathsBackToHost(t *testing.T) {
	sameOnBothTmpfs(t, `set -e
cd "$1" && ln -s /etc/passwd pw && ln -s /usr/bin ub && mkdir -p w/x && cd w/x
cmp ../../pw /etc/passwd && echo same
test -d ../../ub/ && echo dir
ls -d ../../ub/sh
(cd "$1/ub" && ls -d sh && pwd -P)
head -1 "$1/pw"`)
}

// TestFIFOScript is a busybox shell script that passes data through a FIFO
// made in the work directory, between two guest processes.
func TestFIFOScript(t *testing.T) {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox not installed (needs busybox-static; .ci/run installs it)")
	}
	sameOnBothTmpfs(t, `set -e
cd "$1" && `+busybox+` mkfifo -m 600 pipe && `+busybox+` stat -c '%A %s %h' pipe
(`+busybox+` seq 1 1000 > pipe &) ; `+busybox+` wc -l < pipe
`+busybox+` rm pipe && `+busybox+` ls -a`)
}

// TestDeviceNodes: root makes character and block device nodes (and a
// whiteout, which needs no privilege), stat shows their numbers as the
// kernel encodes them, opening one opens the device itself (null, zero);
// a non-root guest gets EPERM for mknod of a device but may open a node
// whose mode lets it, and uses a FIFO in the same directory.
func TestDeviceNodes(t *testing.T) {
	var fs unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &fs); err != nil || fs.Flags&unix.ST_NODEV != 0 {
		t.Skip("requires /dev/shm mounted without nodev, to open device nodes natively")
	}
	out := sameOnBothTmpfsWith(t, hostRootFlags, `D="$1"; cd "$D"
mknod null c 1 3; echo mknod=$?
mknod wo c 0 0; echo whiteout=$?
mknod blk b 7 200; echo blk=$?
mknod null c 1 3 2>/dev/null; echo again=$?
stat -c '%n %F %a %t:%T %s %b %h' null wo blk
echo hello > null; echo write=$?
wc -c < null
mknod zero c 1 5 && head -c 5 zero | od -An -tx1
ls -l | awk '{print $1, $5, $6, $NF}'
python3 -c '
import os
os.mknod("big", 0o600 | 0o20000, os.makedev(300, 70000))
st = os.stat("big"); print(os.major(st.st_rdev), os.minor(st.st_rdev), hex(st.st_rdev))
try: os.mknod("big", 0o600 | 0o20000, 0)
except OSError as e: print("EEXIST", e.errno)
try: os.mknod("d", 0o600 | 0o40000, 0)
except OSError as e: print("dir", e.errno)
try: os.mknod("bad", 0o600 | 0o170000, 0)
except OSError as e: print("type", e.errno)
'
chmod 666 null; chmod 1777 "$D"
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '
mknod n2 c 1 3 2>/dev/null; echo nonroot_mknod=$?
mknod wo2 c 0 0; echo nonroot_whiteout=$?
echo x > null; echo nonroot_write=$?
head -c 2 zero | wc -c
mkfifo f && (echo through-fifo > f &) && timeout 10 cat f; echo fifo=$?
ls -l wo2 f | cut -c1-10'
rm -f null zero blk big wo wo2 f; ls -A`)
	for _, want := range []string{"mknod=0", "null character special file 644 1:3 0 0 1", "00 00 00 00 00", "300 70000 0x11112c70", "nonroot_mknod=1", "through-fifo"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestTmpfile opens O_TMPFILE files and names one with linkat, against
// Linux (testdata/tmpfile.py).
func TestTmpfile(t *testing.T) {
	out := sameOnBothTmpfs(t, `umask 022; python3 `+testdataPath(t, "tmpfile.py")+` "$1"`)
	for _, want := range []string{"nlink 0 mode 0o100640", "link 0 ['named'] 1 data", "excl link 2", "after close ['named', 'named2', 'sub'] []"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestProcTaskFDNames: the per-thread views of /proc name virtual fds as
// /proc/self/fd does (testdata/procfd.py).
func TestProcTaskFDNames(t *testing.T) {
	out := sameOnBothTmpfs(t, `python3 `+testdataPath(t, "procfd.py")+` "$1"`)
	if strings.Count(out, "'D/x', 0)") != 6 {
		t.Fatalf("got:\n%s", out)
	}
}

// TestProcFDInfo: /proc/PID/fdinfo/N of a virtual descriptor shows the
// sandbox's mount id and inode, as statx, mountinfo and fstat give them,
// and its locks by the file's st_dev and st_ino; the kernel's file
// describes the placeholder, whose are the store's (a directory's inode
// and every mount id differed). Through each name of the file, from
// another thread, and for the opens the kernel answers itself
// (testdata/fdinfo.py).
func TestProcFDInfo(t *testing.T) {
	out := sameOnBothTmpfs(t, `python3 `+testdataPath(t, "fdinfo.py")+` "$1"`)
	if strings.Count(out, "is the mount's True") != 9 || strings.Count(out, "ino is st_ino True") != 10 ||
		strings.Count(out, "dev:ino is the file's True") != 5 {
		t.Fatalf("got:\n%s", out)
	}
	// The sentry's look at a description for its fdinfo holds it only
	// while it writes the file: the unlinked, closed file is gone at the
	// end, its bytes freed (a reference kept made it outlive its close).
	statsFile := filepath.Join(t.TempDir(), "stats.json")
	if r := sandboxed(t, []string{"--stats-json", statsFile}, "python3", testdataPath(t, "fdinfo.py"), "/tmp"); r.code != 0 {
		t.Fatalf("exited %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(statsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rep statsReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Tmpfs) != 1 || rep.Tmpfs[0].Inodes != 2 || rep.Tmpfs[0].Bytes != 0 || rep.Tmpfs[0].Check != "ok" {
		t.Errorf("the tmpfs at exit: %+v, want the root and sub alone, no bytes", rep.Tmpfs)
	}
}

// TestSpecialFileFstat: a FIFO or device node the guest opened is a host
// descriptor, whose fstat must still show the node's mode and owner
// (testdata/fifostat.py).
func TestSpecialFileFstat(t *testing.T) {
	var fs unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &fs); err != nil || fs.Flags&unix.ST_NODEV != 0 {
		t.Skip("requires /dev/shm mounted without nodev, to open device nodes natively")
	}
	out := sameOnBothTmpfsWith(t, hostRootFlags, `umask 022; python3 `+testdataPath(t, "fifostat.py")+` "$1"`)
	if !strings.HasPrefix(out, "0o10640 65534 65534 1 0\n0o10604 65534\n") {
		t.Fatalf("got:\n%s", out)
	}
}

// TestXattrs sets, gets, lists and removes extended attributes in every
// namespace on files, directories, symlinks and FIFOs, as root and as a
// non-root guest, with every error, against Linux (testdata/xattrs.py).
func TestXattrs(t *testing.T) {
	for _, m := range rootModes {
		t.Run(m.name, func(t *testing.T) {
			out := sameOnBothTmpfsWith(t, m.flags, `python3 `+testdataPath(t, "xattrs.py")+` "$1" nobody`)
			for _, want := range []string{"replace ok b'22'", "nobody get b'22' set EACCES", "nobody caps EPERM EINVAL EPERM", "cp -a ['user.via'", "setxattrat 0 b'atval'", "getxattrat 5 b'atval'"} {
				if !strings.Contains(out, want) {
					t.Fatalf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestUnixSocketsOnTmpfs binds, connects and talks over a Unix socket at
// a path in the work directory, sends datagrams to a path, and checks
// bind's, connect's and sendto's errors.
func TestUnixSocketsOnTmpfs(t *testing.T) {
	dst := filepath.Join(testBinDir, "unixsock.py")
	data, err := os.ReadFile(testdataPath(t, "unixsock.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := sameOnBothTmpfs(t, `python3 `+dst+` "$1"`)
	if !strings.Contains(out, "hello over unix") || !strings.Contains(out, "datagram") {
		t.Fatalf("got %q", out)
	}
}

// TestProcFDNames: /proc/self/fd/N, /proc/PID/fd/N of another guest
// process and /proc/self/cwd name the sentry's files by their guest paths
// (" (deleted)" once unlinked), and are symlinks to lstat, as Linux does.
func TestProcFDNames(t *testing.T) {
	out := sameOnBothTmpfs(t, `python3 -c '
import os, sys
d = sys.argv[1]
fd = os.open(d + "/x", os.O_CREAT | os.O_RDWR)
print(os.readlink("/proc/self/fd/%d" % fd) == d + "/x")
os.mkdir(d + "/sub"); os.chdir(d + "/sub")
print(os.readlink("/proc/self/cwd") == d + "/sub", os.getcwd() == d + "/sub")
os.unlink(d + "/x")
print(os.readlink("/proc/self/fd/%d" % fd) == d + "/x (deleted)")
' "$1"
cd "$1" && exec 5>y && ls -l /proc/self/fd/5 /proc/$$/fd/5 | sed "s|.*:[0-9][0-9] ||; s|$1|D|; s|/proc/[0-9]*/|/proc/P/|"
stat -c "%F" /proc/self/fd/5 /proc/$$/fd/5; stat -L -c "%F %s" /proc/self/fd/5`)
	want := "True\nTrue True\nTrue\n" +
		"/proc/P/fd/5 -> D/y\n/proc/self/fd/5 -> D/y\n" +
		"symbolic link\nsymbolic link\nregular empty file 0\n"
	if out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

// TestProcFDNamesOtherProcess: a nobody guest reads the link of its
// shell's descriptor of a sandbox file (/proc/$$/fd/5 from ls, another
// process of its uid), which the sentry resolves: in the sandbox's user
// namespace a sentry thread asked as the guest is refused (it is judged
// from the initial namespace), so the sentry decides as Linux does
// (Task.MayReadProc); the file of another uid's process stays refused.
func TestProcFDNamesOtherProcess(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("skipped: the guest runs under setpriv, which is not installed (.ci/install installs it)")
	}
	out := sameOnBothTmpfs(t, `chmod 1777 "$1" && exec 7>"$1/rootfile" && setpriv --reuid=65534 --regid=65534 --clear-groups -- sh -c '
cd "$1" && exec 5>y && ls -l /proc/$$/fd/5 | sed "s|.*:[0-9][0-9] ||; s|$1|D|; s|/proc/[0-9]*/|/proc/P/|"
stat -c "%F" /proc/$$/fd/5
ls -l /proc/$PPID/fd/7 2>&1 | sed "s|.*/fd/7|/proc/PPID/fd/7|"' sh "$1"`)
	want := "/proc/P/fd/5 -> D/y\nsymbolic link\n/proc/PPID/fd/7': Permission denied\n"
	if out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

// TestMountVisible: the tmpfs shows where tools look for mounts
// (/proc/self/mountinfo, /proc/mounts, statfs), so df, findmnt and stat -f
// report a tmpfs at /tmp, with the size limit given.
func TestMountVisible(t *testing.T) {
	r := sandboxed(t, []string{"--tmpfs", "/tmp:size=64m"}, "sh", "-c",
		"df --output=fstype,size,target /tmp | tail -1; findmnt -n -o FSTYPE,TARGET /tmp; stat -f -c '%T %S' /tmp; grep -c ' /tmp tmpfs ' /proc/mounts")
	want := "tmpfs    65536 /tmp\ntmpfs  /tmp\ntmpfs 4096\n1\n"
	if r.code != 0 || strings.Join(strings.Fields(r.stdout), " ") != strings.Join(strings.Fields(want), " ") {
		t.Fatalf("got %+v, want %q", r, want)
	}
}

// TestInKernelCopies: copy_file_range and sendfile between tmpfs files,
// from a tmpfs file into a pipe and from a host file into a tmpfs file,
// and copy_file_range across file systems (EXDEV), as on /dev/shm.
func TestInKernelCopies(t *testing.T) {
	sameOnBothTmpfs(t, `python3 -c '
import os, sys
d = sys.argv[1]
with open(d + "/a", "wb") as f: f.write(bytes(range(256)) * 800)
def drain(call):
    n = 0
    while True:
        k = call()
        if k == 0: return n
        n += k
a = os.open(d + "/a", os.O_RDONLY); b = os.open(d + "/b", os.O_WRONLY | os.O_CREAT, 0o644)
print("copy_file_range", drain(lambda: os.copy_file_range(a, b, 1 << 20)), os.lseek(a, 0, 1))
a2 = os.open(d + "/a", os.O_RDONLY); c = os.open(d + "/c", os.O_WRONLY | os.O_CREAT, 0o644)
print("sendfile", drain(lambda: os.sendfile(c, a2, None, 1 << 20)))
print("with offset", os.sendfile(c, a2, 10, 100), os.lseek(a2, 0, 1))
r, w = os.pipe()
print("to pipe", os.sendfile(w, os.open(d + "/a", 0), 5, 100), os.read(r, 1000)[:3])
h = os.open("/etc/passwd", 0); e = os.open(d + "/e", os.O_WRONLY | os.O_CREAT, 0o644)
print("from host", os.sendfile(e, h, None, 100000) == os.fstat(h).st_size)
for name, src in (("xdev", h), ("append", a)):
    try: os.copy_file_range(src, os.open(d + "/f", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644), 10)
    except OSError as x: print(name, x.errno)
for x in "bce": print(x, open(d + "/" + x, "rb").read() == (open("/etc/passwd", "rb").read() if x == "e" else open(d + "/a", "rb").read()))
' "$1"`)
}

// testdataCopy copies testdata/name to the test binary directory, which the
// guest can read (the checkout may be under /tmp, hidden in the sandbox).
func testdataCopy(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(testBinDir, name)
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestIoctlOnTmpfs: FIONREAD, FIONBIO, FIOCLEX/FIONCLEX, FS_IOC_GETFLAGS
// and ENOTTY for terminal requests, as on /dev/shm.
func TestIoctlOnTmpfs(t *testing.T) {
	sameOnBothTmpfs(t, `python3 `+testdataCopy(t, "ioctl.py")+` "$1"`)
}

// TestNonRootGuestPermissions: a guest that drops to nobody is checked
// with its own fsuid and groups (read, create, the sticky bit), and what it
// creates is its own, as on /dev/shm.
func TestNonRootGuestPermissions(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed (needs util-linux)")
	}
	sameOnBothTmpfs(t, `cd "$1" && chmod 1777 . && echo secret > root-only && chmod 600 root-only && mkdir -m 755 rootdir
setpriv --reuid 65534 --regid 65534 --clear-groups -- sh -c '
id -u; cat root-only; echo x > rootdir/f; echo y > mine && stat -c "%A %U %G" mine
rm root-only; mkdir own && chmod 700 own && echo z > own/f && cat own/f; rm -r own mine' 2>&1
stat -c "%A %U" root-only; ls rootdir`)
}

// TestNonRootTruncateDropsSUID: truncate(2), ftruncate(2) and an O_TRUNC
// open by a guest without CAP_FSETID drop SUID, and SGID when
// group-executable, even at the same size (do_truncate), as on /dev/shm;
// root's truncate keeps them.
func TestNonRootTruncateDropsSUID(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed (needs util-linux)")
	}
	sameOnBothTmpfs(t, `cd "$1" && chmod 755 . && for f in a b c d r; do echo data > $f; chown 65534:65534 $f; done
chmod 6755 a b c r && chmod 6745 d && truncate -s 0 r
setpriv --reuid 65534 --regid 65534 --clear-groups -- sh -c '
python3 -c "import os; os.truncate(\"a\", 5)"; truncate -s 2 b; : > c; truncate -s 0 d' 2>&1
stat -c "%n %a %s" a b c d r`)
}

// TestFallocateOnTmpfs: fallocate's modes, sizes, blocks, holes punched,
// and errors, as on /dev/shm.
func TestFallocateOnTmpfs(t *testing.T) {
	sameOnBothTmpfs(t, `python3 `+testdataCopy(t, "fallocate.py")+` "$1"`)
}

// TestFlockOnTmpfs: flock(1) and flock(2) on a tmpfs file between guest
// processes: exclusive and shared locks, LOCK_NB refusals, a blocked flock
// that waits for the holder, locks shared through dup and released by the
// last close, as on /dev/shm.
func TestFlockOnTmpfs(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock not installed (needs util-linux)")
	}
	sameOnBothTmpfs(t, `sh `+testdataCopy(t, "flock.sh")+` "$1"`)
}

// TestRecordLocksOnTmpfs: fcntl POSIX and OFD record locks between guest
// processes: conflicts, F_GETLK, a blocked F_SETLKW that waits, splitting,
// release by any close of the file, OFD locks released by the last close,
// and the errors, as on /dev/shm.
func TestRecordLocksOnTmpfs(t *testing.T) {
	sameOnBothTmpfs(t, `python3 `+testdataCopy(t, "locks.py")+` "$1"`)
}

// TestLeasesRefused: a lease on a sentry file is refused (EINVAL, as on a
// file system without leases), so that a writer's open, which the sentry
// makes on the host, never waits in the kernel's lease break: it held the
// sentry (on ptrace every guest thread, on unotify the other processes'
// calls) for lease-break-time, 45 s, while the holder waited for the
// writer. A lease on a host file is the host's, as natively.
func TestLeasesRefused(t *testing.T) {
	host, err := os.MkdirTemp("/var/tmp", "sentry-lease-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(host)
	r := sandboxed(t, nil, "python3", testdataCopy(t, "leases.py"), "/tmp", host)
	want := `sentry file lease: 22
sentry file getlease: True
writer opened while the holder waits: True
host file lease: granted
host file getlease: True
host file released: True
`
	if r.code != 0 || r.stdout != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
}
