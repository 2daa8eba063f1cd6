package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSCMRightsAsLinux runs testdata/scmrights.py natively on a kernel
// tmpfs and in the sandbox and compares every line (issue #15): a
// descriptor of a tmpfs file, directory or O_PATH passed to another
// process with SCM_RIGHTS (sendmsg, sendmmsg; recvmsg, recvmmsg) is the
// same open file there: stat, name, flags, shared offset, data, an
// unlinked file, fchdir and *at calls through a received directory,
// MSG_CMSG_CLOEXEC, the sender closing first, a failed send.
func TestSCMRightsAsLinux(t *testing.T) {
	probe := testdataPath(t, "scmrights.py")
	sameOnBothTmpfs(t, "python3 "+probe+" $1")
}

// TestSCMRightsToHostProcess: a guest passes a tmpfs file and a tmpfs
// directory to this test process (outside the sandbox) over a host
// socket. What arrives is the placeholder: the file's data itself (same
// bytes, same offset; the store's device and inode number, not the
// sentry's), the directory's empty backing directory. Passed back, the
// file is the guest's file again. The outside process's /proc/PID/fd
// links lead into the sandbox's store, which the guest must not open
// through them.
func TestSCMRightsToHostProcess(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "sentry-scm-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	sockPath := filepath.Join(dir, "sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sockPath, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	seen := make(chan string, 1)
	go func() {
		var report strings.Builder
		defer func() { seen <- report.String() }()
		conn, err := l.AcceptUnix()
		if err != nil {
			fmt.Fprintf(&report, "accept: %v", err)
			return
		}
		defer conn.Close()
		recv := func() int {
			buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
			_, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
			if err != nil {
				fmt.Fprintf(&report, "recv: %v; ", err)
				return -1
			}
			msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
			if len(msgs) != 1 {
				return -1
			}
			fds, _ := unix.ParseUnixRights(&msgs[0])
			return fds[0]
		}
		file, dirfd := recv(), recv()
		if file < 0 || dirfd < 0 {
			return
		}
		defer unix.Close(file)
		defer unix.Close(dirfd)
		data := make([]byte, 32)
		n, _ := unix.Pread(file, data, 0)
		off, _ := unix.Seek(file, 0, 1)
		var st unix.Stat_t
		unix.Fstat(file, &st)
		var names []string
		if d, err := os.ReadDir("/proc/self/fd/" + strconv.Itoa(dirfd)); err == nil {
			for _, e := range d {
				names = append(names, e.Name())
			}
		}
		fmt.Fprintf(&report, "outside read %q at offset %d, regular %v, dir entries %v", data[:n], off, st.Mode&unix.S_IFMT == unix.S_IFREG, names)
		unix.Pwrite(file, []byte("!"), int64(n))
		msg := fmt.Sprintf("got %q %d %d", data[:n], file, dirfd)
		if _, _, err := conn.WriteMsgUnix([]byte(msg), unix.UnixRights(file), nil); err != nil {
			fmt.Fprintf(&report, "; send back: %v", err)
		}
		conn.Read(make([]byte, 8))
	}()
	probe := testdataPath(t, "scmhost.py")
	r := sandboxed(t, nil, "python3", probe, sockPath, strconv.Itoa(os.Getpid()))
	outside := <-seen
	want := `outside says: got "secret-data" %d %d
back is the file: True
back name: /tmp/shared
back offset: 7
back reads: b'secret-data!'
data by name: b'secret-data!'
`
	if r.code != 0 || !strings.HasPrefix(r.stdout, want[:len("outside says: got \"secret-data\"")]) {
		t.Fatalf("guest: %+v\noutside: %s", r, outside)
	}
	lines := strings.SplitN(r.stdout, "\n", 2)
	if rest := lines[1]; !strings.HasPrefix(rest, want[strings.Index(want, "\n")+1:]) {
		t.Errorf("guest after the pass back:\n%s", rest)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "open outside link") && !strings.HasSuffix(line, "ENOTSUP") {
			t.Errorf("the outside process's link reaches the store: %s", line)
		}
	}
	if outside != `outside read "secret-data" at offset 7, regular true, dir entries []` {
		t.Errorf("outside: %s", outside)
	}
	t.Logf("guest:\n%s\noutside: %s", r.stdout, outside)
}
