package syscalls

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// onThread runs f on a fresh thread of its own, as a serving thread: f
// changes the thread's credentials, and the thread dies with its
// goroutine (locked, never unlocked) so that no other test runs on it.
func onThread(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("changes a thread's credentials: needs root")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		// Its own umask, as a serving thread has.
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			t.Error(err)
			return
		}
		f()
	}()
	<-done
}

// threadGroups, threadFS and threadCaps read the calling thread's groups,
// fsuid and fsgid, and capability sets.
func threadGroups(t *testing.T) []uint32 {
	n, _, e := unix.RawSyscall(unix.SYS_GETGROUPS, 0, 0, 0)
	if e != 0 {
		t.Fatal(e)
	}
	g := make([]uint32, n+1)
	n, _, e = unix.RawSyscall(unix.SYS_GETGROUPS, n, uintptr(unsafe.Pointer(&g[0])), 0)
	if e != 0 {
		t.Fatal(e)
	}
	return g[:n]
}

func setThreadGroups(t *testing.T, g []uint32) {
	var p uintptr
	if len(g) > 0 {
		p = uintptr(unsafe.Pointer(&g[0]))
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(g)), p, 0); e != 0 {
		t.Fatal(e)
	}
}

func threadFS() (uid, gid uint32) {
	u, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, 1<<32-1, 0, 0)
	g, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, 1<<32-1, 0, 0)
	return uint32(u), uint32(g)
}

func threadCaps(t *testing.T) [2]unix.CapUserData {
	var d [2]unix.CapUserData
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if _, _, e := unix.RawSyscall(unix.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&d[0])), 0); e != 0 {
		t.Fatal(e)
	}
	return d
}

func setThreadCaps(t *testing.T, d [2]unix.CapUserData) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if _, _, e := unix.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&d[0])), 0); e != 0 {
		t.Fatal(e)
	}
}

// identity is a thread's whole identity, for comparing before and after.
type identity struct {
	uid, gid uint32
	euid     uint32
	groups   []uint32
	caps     [2]unix.CapUserData
	umask    int
}

func threadIdentity(t *testing.T) identity {
	uid, gid := threadFS()
	umask := unix.Umask(0)
	unix.Umask(umask)
	var r, e, su uint32
	unix.RawSyscall(unix.SYS_GETRESUID, uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&e)), uintptr(unsafe.Pointer(&su)))
	return identity{uid, gid, e, threadGroups(t), threadCaps(t), umask}
}

func (a identity) equal(b identity) bool {
	return a.uid == b.uid && a.gid == b.gid && a.euid == b.euid && slices.Equal(a.groups, b.groups) && a.caps == b.caps && a.umask == b.umask
}

// guestTask makes a kernel whose serving thread is the calling one (its
// identity now is the sentry's own) and a task with credentials c.
func guestTask(t *testing.T, c vfs.Credentials) *sentry.Task {
	k := sentry.NewKernel(sentry.Options{Creds: c, Umask: 027}, NewTable())
	tid := int32(unix.Gettid())
	k.NewTask(0, tid, platform.NewTaskFork)
	return k.Task(tid)
}

func manyGroups(n int) []uint32 {
	g := make([]uint32, n)
	for k := range g {
		g[k] = uint32(5000 + k)
	}
	return g
}

// TestAsGuest: the serving thread acts with exactly the guest's fsuid,
// fsgid, groups, capabilities and umask, and afterwards has exactly its
// own again, whatever the number of groups on either side; what cannot be
// set fails the call without acting.
func TestAsGuest(t *testing.T) {
	nobody := vfs.Credentials{UID: 65534, GID: 65534}
	for _, tc := range []struct {
		name string
		// own is the serving thread's group list (nil: the test
		// process's).
		own   []uint32
		guest vfs.Credentials
		// fail is the errno asGuest must return without running fn.
		fail unix.Errno
		// inode: the guest's capabilities count on the host only as
		// far as capable_wrt_inode_uidgid grants them.
		inode bool
	}{
		{name: "nobody", guest: nobody},
		{name: "serving thread with 100 groups", own: manyGroups(100), guest: nobody},
		{name: "serving thread with 65536 groups", own: manyGroups(65536), guest: nobody},
		{name: "guest with 100 groups", guest: vfs.Credentials{UID: 1000, GID: 1000, Groups: manyGroups(100)}},
		{name: "guest with more groups than NGROUPS_MAX", guest: vfs.Credentials{UID: 1000, GID: 1000, Groups: manyGroups(65537)}, fail: unix.EINVAL},
		{name: "root without capabilities", guest: vfs.Credentials{}},
		{name: "root with CAP_DAC_READ_SEARCH", guest: vfs.Credentials{Caps: 1 << vfs.CapDacReadSearch}},
		{name: "nobody with CAP_DAC_OVERRIDE", guest: vfs.Credentials{UID: 65534, GID: 65534, Caps: 1 << vfs.CapDacOverride}},
		{name: "root in another user namespace", guest: vfs.Credentials{Caps: vfs.AllCaps, Foreign: true}},
		{name: "root in another user namespace mapping half the ids", guest: vfs.Credentials{Caps: vfs.AllCaps, Foreign: true,
			UIDMap: vfs.IDMap{{First: 0, Count: 1 << 31}}, GIDMap: vfs.IDMap{{First: 0, Count: 1 << 31}}}},
		// The sandbox's own namespace (launch/userns.go): the five
		// capabilities capable_wrt_inode_uidgid grants over every file,
		// never CAP_SYS_PTRACE and the rest.
		{name: "root in a user namespace mapping every id", guest: vfs.Credentials{Caps: vfs.AllCaps, Foreign: true,
			UIDMap: vfs.IDMap{{First: 0, Count: 1<<32 - 1}}, GIDMap: vfs.IDMap{{First: 0, Count: 1<<32 - 1}}}, inode: true},
		{name: "root without CAP_SYS_PTRACE in a user namespace mapping every id", guest: vfs.Credentials{Caps: vfs.AllCaps &^ (1 << vfs.CapSysPtrace), Foreign: true,
			UIDMap: vfs.IDMap{{First: 0, Count: 1<<32 - 1}}, GIDMap: vfs.IDMap{{First: 0, Count: 1<<32 - 1}}}, inode: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onThread(t, func() {
				if tc.own != nil {
					setThreadGroups(t, tc.own)
				}
				task := guestTask(t, tc.guest)
				before := threadIdentity(t)
				ran := false
				var during identity
				err := asGuest(task, true, func() error {
					ran = true
					during = threadIdentity(t)
					return nil
				})
				if after := threadIdentity(t); !after.equal(before) {
					t.Errorf("thread identity not restored:\nbefore %+v\nafter  %+v", before, after)
				}
				if tc.fail != 0 {
					if err != tc.fail || ran {
						t.Fatalf("asGuest = %v, ran %v; want %v without running", err, ran, tc.fail)
					}
					return
				}
				if err != nil || !ran {
					t.Fatalf("asGuest = %v, ran %v", err, ran)
				}
				g := tc.guest
				caps := g.Caps
				if g.Foreign {
					caps = 0
				}
				if tc.inode {
					caps = 1<<vfs.CapChown | 1<<vfs.CapDacOverride | 1<<vfs.CapDacReadSearch | 1<<vfs.CapFowner | 1<<vfs.CapFsetid
				}
				eff := vfs.CapSet(during.caps[0].Effective) | vfs.CapSet(during.caps[1].Effective)<<32
				if during.uid != g.UID || during.gid != g.GID || !slices.Equal(during.groups, g.Groups) || eff != caps || during.umask != 027 {
					t.Errorf("acted as uid %d gid %d groups %d caps %#x umask %o; want %d %d %d %#x 027",
						during.uid, during.gid, len(during.groups), eff, during.umask, g.UID, g.GID, len(g.Groups), caps)
				}
				// The effective uid is the guest's: it decides which
				// user namespaces the thread owns (cap_capable); root
				// of a namespace of its own without CAP_SYS_PTRACE
				// there owns none.
				euid := g.UID
				if g.Foreign && g.UID == 0 && !g.Caps.Has(vfs.CapSysPtrace) {
					euid = 1<<32 - 2
				}
				if during.euid != euid {
					t.Errorf("acted with euid %d, want %d", during.euid, euid)
				}
			})
		})
	}
}

// TestAsGuestCaplessRootDenied: root without capabilities cannot read a
// mode-000 host file the serving thread could (issue 12, item 10).
func TestAsGuestCaplessRootDenied(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s"), 0); err != nil {
		t.Fatal(err)
	}
	onThread(t, func() {
		task := guestTask(t, vfs.Credentials{})
		err := asGuest(task, false, func() error {
			fd, err := unix.Open(secret, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
			}
			return err
		})
		if err != unix.EACCES {
			t.Errorf("capless root opened a mode-000 file: %v, want EACCES", err)
		}
		if fd, err := unix.Open(secret, unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			t.Errorf("the serving thread lost its own capabilities: %v", err)
		} else {
			unix.Close(fd)
		}
	})
}

// TestAsGuestWithoutSetuid: a serving thread that cannot take the guest's
// fsuid (no CAP_SETUID: setfsuid fails without saying so) does not act
// with its own instead.
func TestAsGuestWithoutSetuid(t *testing.T) {
	onThread(t, func() {
		caps := threadCaps(t)
		caps[0].Effective &^= 1 << vfs.CapSetuid
		setThreadCaps(t, caps)
		task := guestTask(t, vfs.Credentials{UID: 65534, GID: 65534})
		before := threadIdentity(t)
		ran := false
		err := asGuest(task, false, func() error {
			ran = true
			return nil
		})
		if err == nil || ran {
			t.Errorf("asGuest = %v, ran %v: acted with fsuid %d", err, ran, before.uid)
		}
		if after := threadIdentity(t); !after.equal(before) {
			t.Errorf("thread identity not restored:\nbefore %+v\nafter  %+v", before, after)
		}
	})
}

// TestAsGuestRestoreFails: when the serving thread cannot take its own
// identity back (here the call removed its permitted capabilities, so
// capset and setfsuid fail), the call fails, and the thread serves
// nothing more: neither asGuest nor a notified call runs on it.
func TestAsGuestRestoreFails(t *testing.T) {
	onThread(t, func() {
		task := guestTask(t, vfs.Credentials{UID: 65534, GID: 65534})
		err := asGuest(task, false, func() error {
			var none [2]unix.CapUserData
			setThreadCaps(t, none)
			return nil
		})
		if err == nil {
			t.Fatalf("asGuest = nil with the thread left as fsuid %d", func() uint32 { u, _ := threadFS(); return u }())
		}
		ran := false
		if err := asGuest(task, false, func() error { ran = true; return nil }); err == nil || ran {
			t.Errorf("second asGuest = %v, ran %v on a thread with another identity", err, ran)
		}
		args := platform.SyscallArgs{}
		res := task.Kernel().SyscallNotify(task.TID, unix.SYS_CLOSE, &args, 1, 0)
		if res.Action != platform.Done || res.Ret >= 0 {
			t.Errorf("a notified call on the tainted thread = %+v, want an error", res)
		}
	})
}
