package syscalls_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
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
	p := hostPipe(t)
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

// TestNotifiedHostNames: a notified unlink, rmdir, mkdir or utimensat whose
// path leads through the sentry's mount back to the host is acted on by
// the sentry itself (the table's Host): no register can carry the resolved
// path. The host must then hold what the guest's own call would have left,
// errors included; a path that never entered the sentry's mount is the
// host's to run.
func TestNotifiedHostNames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("acts with the guest's credentials (asGuest): needs root")
	}
	dir := t.TempDir()
	via := mountPoint + "/.." + dir // enters the mount, leaves it by ".."
	if err := os.WriteFile(dir+"/f", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	times := []byte{}
	for _, v := range []int64{1, 0, 2, 0} { // atime 1 s, mtime 2 s
		times = binary.LittleEndian.AppendUint64(times, uint64(v))
	}
	// One locked thread with its own umask, as a serving thread (asGuest),
	// is also the "guest" whose memory the handlers read: it must live
	// until the last call.
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with it
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			t.Error(err)
			return
		}
		notifiedHostNames(t, dir, via, times)
	}()
	<-done
}

func notifiedHostNames(t *testing.T, dir, via string, times []byte) {
	cwd := uintptr(unix.AT_FDCWD & 0xffffffff)
	// Root with one capability: the test owns dir.
	h := newHarness(t, sentry.Options{Notifying: true, Umask: 0o22, Creds: vfs.Credentials{Caps: 1 << vfs.CapDacReadSearch}})
	for _, tc := range []struct {
		name   string
		nr     uintptr
		args   []uintptr
		action platform.Action
		ret    int64
		check  func() error
	}{
		{"mkdir", unix.SYS_MKDIR, []uintptr{addr(cstr(via + "/d")), 0o777}, platform.Done, 0, func() error {
			return wantMode(dir+"/d", unix.S_IFDIR|0o755)
		}},
		{"mkdirat exists", unix.SYS_MKDIRAT, []uintptr{cwd, addr(cstr(via + "/d")), 0o777}, platform.Done, -int64(unix.EEXIST), nil},
		{"utimensat", unix.SYS_UTIMENSAT, []uintptr{cwd, addr(cstr(via + "/d")), addr(times), 0}, platform.Done, 0, func() error {
			var st unix.Stat_t
			if err := unix.Stat(dir+"/d", &st); err != nil {
				return err
			}
			if st.Atim.Sec != 1 || st.Mtim.Sec != 2 {
				return fmt.Errorf("times %d %d, want 1 2", st.Atim.Sec, st.Mtim.Sec)
			}
			return nil
		}},
		{"utimensat, NULL times: now", unix.SYS_UTIMENSAT, []uintptr{cwd, addr(cstr(via + "/d")), 0, 0}, platform.Done, 0, func() error {
			var st unix.Stat_t
			if err := unix.Stat(dir+"/d", &st); err != nil {
				return err
			}
			if st.Mtim.Sec < 1e9 {
				return fmt.Errorf("mtime %d, want now", st.Mtim.Sec)
			}
			return nil
		}},
		{"unlinkat a directory", unix.SYS_UNLINKAT, []uintptr{cwd, addr(cstr(via + "/d")), 0}, platform.Done, -int64(unix.EISDIR), nil},
		{"rmdir", unix.SYS_RMDIR, []uintptr{addr(cstr(via + "/d"))}, platform.Done, 0, func() error {
			return gone(dir + "/d")
		}},
		{"unlink", unix.SYS_UNLINK, []uintptr{addr(cstr(via + "/f"))}, platform.Done, 0, func() error {
			return gone(dir + "/f")
		}},
		{"unlinkat missing", unix.SYS_UNLINKAT, []uintptr{cwd, addr(cstr(via + "/f")), 0}, platform.Done, -int64(unix.ENOENT), nil},
		{"unlink of a host path: the host's", unix.SYS_UNLINK, []uintptr{addr(cstr(dir + "/f"))}, platform.Passthrough, 0, nil},
	} {
		args := platform.SyscallArgs{}
		copy(args[:], tc.args)
		res := h.k.SyscallNotify(h.tid, tc.nr, &args, 1, 0)
		if res.Action != tc.action || (tc.action == platform.Done && res.Ret != tc.ret) {
			t.Errorf("%s: %+v, want action %v ret %d", tc.name, res, tc.action, tc.ret)
			continue
		}
		if tc.check != nil {
			if err := tc.check(); err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
	}
}

func wantMode(path string, mode uint32) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return err
	}
	if st.Mode != mode {
		return fmt.Errorf("%s: mode %o, want %o", path, st.Mode, mode)
	}
	return nil
}

func gone(path string) error {
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		return fmt.Errorf("%s is still there (%v)", path, err)
	}
	return nil
}
