package syscalls_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// TestNotifiedDups: on a notifying platform dup, dup2 and dup3 have no exit
// stop; the sentry installs the placeholder itself (here the test process is
// the guest, and the injector's dup3 stands for ADDFD), and the table must
// then say what the kernel's table holds: the description at the new
// number for a virtual oldfd, nothing for a host file put over a virtual
// fd; and nothing changes when the call fails or is the host's.
func TestNotifiedDups(t *testing.T) {
	p := hostPipe(t)
	const virt, other, free = guestFD, guestFD + 1, guestFD + 2
	for _, tc := range []struct {
		name    string
		nr      uintptr
		args    [3]uintptr
		injErr  error
		action  platform.Action
		ret     int64
		virtual map[int32]bool // which numbers the table must hold afterwards
	}{
		{"dup2 virtual to a free number", unix.SYS_DUP2, [3]uintptr{virt, free}, nil, platform.Responded, free,
			map[int32]bool{virt: true, other: true, free: true}},
		{"dup2 virtual over virtual", unix.SYS_DUP2, [3]uintptr{virt, other}, nil, platform.Responded, other,
			map[int32]bool{virt: true, other: true}},
		{"dup3 cloexec", unix.SYS_DUP3, [3]uintptr{virt, free, unix.O_CLOEXEC}, nil, platform.Responded, free,
			map[int32]bool{virt: true, other: true, free: true}},
		{"dup2 host file over virtual", unix.SYS_DUP2, [3]uintptr{uintptr(p[1]), other}, nil, platform.Responded, other,
			map[int32]bool{virt: true, other: false}},
		{"dup2 closed host fd over virtual: EBADF", unix.SYS_DUP2, [3]uintptr{9999, other}, nil, platform.Done, -int64(unix.EBADF),
			map[int32]bool{virt: true, other: true}},
		{"dup3 bad flags: the host's EINVAL", unix.SYS_DUP3, [3]uintptr{virt, other, unix.O_NONBLOCK}, nil, platform.Passthrough, 0,
			map[int32]bool{virt: true, other: true}},
		{"dup3 same number: the host's EINVAL", unix.SYS_DUP3, [3]uintptr{virt, virt, 0}, nil, platform.Passthrough, 0,
			map[int32]bool{virt: true, other: true}},
		{"dup2 same number: the host's", unix.SYS_DUP2, [3]uintptr{virt, virt}, nil, platform.Passthrough, 0,
			map[int32]bool{virt: true, other: true}},
		{"dup2 host only: the host's", unix.SYS_DUP2, [3]uintptr{uintptr(p[0]), free}, nil, platform.Passthrough, 0,
			map[int32]bool{virt: true, other: true, free: false}},
		{"ADDFD refused (newfd past the limit)", unix.SYS_DUP2, [3]uintptr{virt, other}, unix.EBADF, platform.Done, -int64(unix.EBADF),
			map[int32]bool{virt: true, other: true}},
		{"dup virtual", unix.SYS_DUP, [3]uintptr{virt}, nil, platform.Responded, free,
			map[int32]bool{virt: true, other: true, free: true}},
		{"dup host: the host's", unix.SYS_DUP, [3]uintptr{uintptr(p[0])}, nil, platform.Passthrough, 0,
			map[int32]bool{virt: true, other: true, free: false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, sentry.Options{})
			h.open(t, cstr(mountPoint+"/a"), unix.O_CREAT|unix.O_RDWR, virt)
			h.open(t, cstr(mountPoint+"/b"), unix.O_CREAT|unix.O_RDWR, other)
			defer unix.Close(virt)
			defer unix.Close(other)
			defer unix.Close(free)
			h.inj.next, h.inj.err = free, tc.injErr
			args := platform.SyscallArgs{tc.args[0], tc.args[1], tc.args[2]}
			res := h.k.SyscallNotify(h.tid, tc.nr, &args, 1, 0)
			if res.Action != tc.action || (tc.action != platform.Passthrough && res.Ret != tc.ret) {
				t.Fatalf("result %+v, want action %v ret %d", res, tc.action, tc.ret)
			}
			fdt := h.k.Task(h.tid).FDTable()
			for fd, want := range tc.virtual {
				if got := fdt.Has(fd); got != want {
					t.Errorf("table has %d: %v, want %v", fd, got, want)
				}
			}
			if tc.action == platform.Responded && tc.virtual[int32(tc.ret)] {
				// The number is oldfd's description, and the host's
				// descriptor there is its placeholder.
				f, g := fdt.Get(int32(tc.args[0])), fdt.Get(int32(tc.ret))
				if f != g {
					t.Errorf("%d is not %d's description", tc.ret, tc.args[0])
				}
				var a, b unix.Stat_t
				unix.Fstat(f.HostFD, &a)
				unix.Fstat(int(tc.ret), &b)
				if a.Ino != b.Ino || a.Dev != b.Dev {
					t.Errorf("host descriptor %d is not the placeholder", tc.ret)
				}
				f.DecRef()
				g.DecRef()
			}
		})
	}
}
