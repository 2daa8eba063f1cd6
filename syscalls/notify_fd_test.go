package syscalls_test

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/syscalls"
)

// TestNotifiedFDCalls: on a notifying platform fcntl, ioctl and the
// descriptor xattr calls are notified, but for the values the table says
// stop (StopValues). A notification cannot carry a rewrite, so each
// notified case must end as a pass or an answer, and the same as the call
// stopped; and the stop values of fcntl and the dedupe of ioctl (the ones
// that are not there for a wait on the host) must be ones whose stopped
// handling rewrites (else they need not stop).
func TestNotifiedFDCalls(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	const virt, dir = guestFD, guestFD + 1
	host := uintptr(p[0])
	name, value := cstr("user.k"), []byte("v")
	list := make([]byte, 64)
	flags := make([]byte, 4)
	cloneRange := make([]byte, 32) // struct file_clone_range: src_fd first
	binary.LittleEndian.PutUint64(cloneRange, virt)
	for _, tc := range []struct {
		name string
		nr   uintptr
		args []uintptr
	}{
		{"fcntl F_GETFL virtual", unix.SYS_FCNTL, []uintptr{virt, unix.F_GETFL}},
		{"fcntl F_SETFL virtual", unix.SYS_FCNTL, []uintptr{virt, unix.F_SETFL, unix.O_APPEND}},
		{"fcntl F_CREATED_QUERY virtual", unix.SYS_FCNTL, []uintptr{virt, unix.F_CREATED_QUERY}},
		{"fcntl F_NOTIFY virtual directory", unix.SYS_FCNTL, []uintptr{dir, unix.F_NOTIFY, 0x4 /* DN_CREATE */}},
		{"fcntl F_GETFL host", unix.SYS_FCNTL, []uintptr{host, unix.F_GETFL}},
		{"ioctl FIONREAD virtual", unix.SYS_IOCTL, []uintptr{virt, 0x541B /* FIONREAD */, addr(flags)}},
		{"ioctl FS_IOC_GETFLAGS virtual", unix.SYS_IOCTL, []uintptr{virt, unix.FS_IOC_GETFLAGS, addr(flags)}},
		{"ioctl FS_IOC_SETFLAGS virtual", unix.SYS_IOCTL, []uintptr{virt, unix.FS_IOC_SETFLAGS, addr(make([]byte, 4))}},
		{"ioctl FICLONE virtual from virtual", unix.SYS_IOCTL, []uintptr{virt, unix.FICLONE, virt}},
		{"ioctl FICLONE host from virtual", unix.SYS_IOCTL, []uintptr{host, unix.FICLONE, virt}},
		{"ioctl FICLONERANGE host from virtual", unix.SYS_IOCTL, []uintptr{host, unix.FICLONERANGE, addr(cloneRange)}},
		{"ioctl TCGETS host", unix.SYS_IOCTL, []uintptr{host, unix.TCGETS, addr(list)}},
		{"fsetxattr virtual", unix.SYS_FSETXATTR, []uintptr{virt, addr(name), addr(value), 1, 0}},
		{"fgetxattr virtual", unix.SYS_FGETXATTR, []uintptr{virt, addr(name), addr(list), 64}},
		{"flistxattr virtual", unix.SYS_FLISTXATTR, []uintptr{virt, addr(list), 64}},
		{"fremovexattr virtual", unix.SYS_FREMOVEXATTR, []uintptr{virt, addr(name)}},
		{"fgetxattr host", unix.SYS_FGETXATTR, []uintptr{host, addr(name), addr(list), 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]platform.Result
			for i, notified := range []bool{false, true} {
				h := newHarness(t, sentry.Options{Notifying: notified})
				h.open(t, cstr(mountPoint+"/a"), unix.O_CREAT|unix.O_RDWR, virt)
				h.open(t, cstr(mountPoint), unix.O_DIRECTORY, dir)
				if tc.nr == unix.SYS_FGETXATTR || tc.nr == unix.SYS_FREMOVEXATTR {
					// Something to get or remove.
					if r := h.call(unix.SYS_FSETXATTR, virt, addr(name), addr(value), 1, 0); r.Ret != 0 {
						t.Fatalf("fsetxattr: %+v", r)
					}
				}
				args := platform.SyscallArgs{}
				copy(args[:], tc.args)
				if notified {
					got[i] = h.k.SyscallNotify(h.tid, tc.nr, &args, 1, 0)
				} else {
					got[i] = h.k.Syscall(h.tid, tc.nr, &args, h.sp())
				}
				unix.Close(virt)
				unix.Close(dir)
			}
			stopped, notified := got[0], got[1]
			if a := notified.Action; a != platform.Passthrough && a != platform.Done {
				t.Fatalf("notified: %+v, want a pass or an answer", notified)
			}
			if stopped.Action != notified.Action || (stopped.Action == platform.Done && stopped.Ret != notified.Ret) {
				t.Errorf("stopped %+v, notified %+v", stopped, notified)
			}
		})
	}

	tb := syscalls.NewTable()
	for _, tc := range []struct {
		nr   uintptr
		args func(v uint32) []uintptr
	}{
		{unix.SYS_FCNTL, func(v uint32) []uintptr { return []uintptr{virt, uintptr(v), 0} }},
		{unix.SYS_IOCTL, func(v uint32) []uintptr {
			// A dedupe with a virtual destination.
			b := make([]byte, 64)
			binary.LittleEndian.PutUint16(b[16:], 1)    // dest_count
			binary.LittleEndian.PutUint64(b[24:], virt) // info[0].dest_fd
			return []uintptr{host, uintptr(v), addr(b)}
		}},
	} {
		s := tb[tc.nr]
		if !s.Notify || len(s.StopValues) == 0 {
			t.Fatalf("%s: Notify %v, StopValues %v", s.Name, s.Notify, s.StopValues)
		}
		for _, v := range s.StopValues {
			if tc.nr == unix.SYS_IOCTL && v != unix.FIDEDUPERANGE {
				// A terminal's or a console's wait (ioctlBlocking).
				continue
			}
			h := newHarness(t, sentry.Options{})
			h.open(t, cstr(mountPoint+"/a"), unix.O_CREAT|unix.O_RDWR, virt)
			if r := h.call(tc.nr, tc.args(v)...); r.Action != platform.Rewrite {
				t.Errorf("%s %#x stopped: %+v, want a rewrite (else it need not stop)", s.Name, v, r)
			}
			unix.Close(virt)
		}
	}
}
