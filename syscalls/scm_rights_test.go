package syscalls_test

import (
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// TestReceivedDescriptors: what a receipt of SCM_RIGHTS makes of each
// descriptor (here, descriptors of this process standing for a guest's):
// the placeholder of a sentry file gets its description, a host file
// stays the host's, and a file of the store that is no open file the
// sentry holds (opened anew through /proc) is closed by a reissued
// close_range before the guest sees the call's result; such a descriptor
// is refused as a directory for *at calls and fchdir.
func TestReceivedDescriptors(t *testing.T) {
	h := newHarness(t, sentry.Options{})
	h.open(t, cstr(mountPoint+"/f"), unix.O_CREAT|unix.O_RDWR, guestFD)
	same := guestFD + 1
	if err := unix.Dup3(guestFD, same, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(same)
	anew, err := unix.Open("/proc/self/fd/"+strconv.Itoa(guestFD), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(anew)
	host, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(host)

	want := h.k.FDTableOf(h.tid).Get(guestFD)
	defer want.DecRef()
	if f, ok := h.k.ReceivedFile(h.tid, int32(same), false); !ok || f != want {
		t.Errorf("the placeholder's copy: %v %v, want its description", f, ok)
	} else {
		f.DecRef()
	}
	if f, ok := h.k.ReceivedFile(h.tid, int32(host), false); !ok || f != nil {
		t.Errorf("a host file: %v %v", f, ok)
	}
	if f, ok := h.k.ReceivedFile(h.tid, int32(anew), false); ok || f != nil {
		t.Errorf("a store file opened anew: %v %v, want unplaceable", f, ok)
	}

	sv, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sv[0])
	defer unix.Close(sv[1])
	udp, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(udp)

	// recvmsg's exit with all three received.
	ctl := le(uint64(cmsgLen(3)), uint32(unix.SOL_SOCKET), uint32(unix.SCM_RIGHTS),
		uint32(same), uint32(host), uint32(anew), uint32(0))
	msg := le(uint64(0), uint64(0), uint64(0), uint64(0), uint64(addr(ctl)), uint64(cmsgLen(3)), uint64(0))
	r := h.call(unix.SYS_RECVMSG, uintptr(sv[1]), addr(msg), 0)
	if r.Action != platform.Rewrite || r.Sysno != unix.SYS_RECVMSG {
		t.Fatalf("recvmsg with a control buffer: %+v, want it observed", r)
	}
	if ret := h.k.SyscallExit(h.tid, 1); ret != 1 {
		t.Fatalf("recvmsg's result: %d", ret)
	}
	if f := h.k.FDTableOf(h.tid).Get(int32(same)); f != want {
		t.Errorf("received placeholder not given its description: %v", f)
	} else {
		f.DecRef()
	}
	if h.k.FDTableOf(h.tid).Has(int32(host)) || h.k.FDTableOf(h.tid).Has(int32(anew)) {
		t.Errorf("a host file or an unplaceable one got a description")
	}
	sysno, args, ok := h.k.Reissue(h.tid)
	if !ok || sysno != unix.SYS_CLOSE_RANGE || args[0] != uintptr(anew) || args[1] != uintptr(anew) {
		t.Fatalf("unplaceable store file: reissue %v %d %v, want close_range(%d, %d)", ok, sysno, args, anew, anew)
	}
	// The reissued close_range's exit gives the guest recvmsg's result.
	h.args = args
	if r := h.k.Syscall(h.tid, sysno, &h.args, h.sp()); r.Action != platform.Rewrite {
		t.Fatalf("reissued close_range: %+v", r)
	}
	if ret := h.k.SyscallExit(h.tid, 0); ret != 1 {
		t.Errorf("after the close: %d, want recvmsg's 1", ret)
	}

	// Without a control buffer, nothing can arrive: not observed.
	plain := le(uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0))
	if r := h.call(unix.SYS_RECVMSG, uintptr(sv[1]), addr(plain), 0); r.Action != platform.Passthrough {
		t.Errorf("recvmsg without control data: %+v, want a pass", r)
	}
	// Nor on a socket that is not AF_UNIX (a UDP socket's packet info).
	if r := h.call(unix.SYS_RECVMSG, uintptr(udp), addr(msg), 0); r.Action != platform.Passthrough {
		t.Errorf("recvmsg on a UDP socket: %+v, want a pass", r)
	}

	// A store file the sentry does not know is no directory to start a
	// path from, nor a working directory.
	name := cstr("x")
	if r := h.call(unix.SYS_OPENAT, uintptr(anew), addr(name), unix.O_RDONLY); r.Action != platform.Done || r.Ret != -int64(unix.EOPNOTSUPP) {
		t.Errorf("openat from an unknown store file: %+v", r)
	}
	if r := h.call(unix.SYS_FCHDIR, uintptr(anew)); r.Action != platform.Done || r.Ret != -int64(unix.EOPNOTSUPP) {
		t.Errorf("fchdir to an unknown store file: %+v", r)
	}
}

// cmsgLen is CMSG_LEN for n descriptors.
func cmsgLen(n int) int { return 16 + 4*n }
