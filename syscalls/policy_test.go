package syscalls_test

import (
	"encoding/binary"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/syscalls"
)

// TestPolicyCoversEverySyscall: every x86-64 number has exactly one
// decision with a reason, the trapped ones (served, checked, refused) have
// a handler in the table, the harmless ones have none, and nothing past
// LastSyscall is trapped.
func TestPolicyCoversEverySyscall(t *testing.T) {
	p := syscalls.Policies()
	if len(p) != syscalls.LastSyscall+1 {
		t.Fatalf("%d decisions for %d numbers", len(p), syscalls.LastSyscall+1)
	}
	tb := syscalls.NewTable()
	count := map[syscalls.Decision]int{}
	for nr, pol := range p {
		count[pol.Decision]++
		trapped := tb[nr].Fn != nil
		name := tb[nr].Name
		switch pol.Decision {
		case syscalls.Served, syscalls.Checked, syscalls.Refused:
			if !trapped {
				t.Errorf("syscall %d is %v but has no handler in NewTable()", nr, pol.Decision)
			}
		case syscalls.Harmless:
			if trapped {
				t.Errorf("syscall %d (%s) is harmless but trapped", nr, name)
			}
		default:
			t.Errorf("syscall %d (%s) has no decision", nr, name)
			continue
		}
		if !strings.HasPrefix(pol.Reason, pol.Decision.String()+":") || len(pol.Reason) < len("harmless: ")+10 {
			t.Errorf("syscall %d (%s): reason %q does not say %v and why", nr, name, pol.Reason, pol.Decision)
		}
		if (pol.Decision == syscalls.Refused) != (pol.Errno != 0) {
			t.Errorf("syscall %d (%s): %v with errno %v", nr, name, pol.Decision, pol.Errno)
		}
	}
	for nr := syscalls.LastSyscall + 1; nr < len(tb); nr++ {
		if tb[nr].Fn != nil {
			t.Errorf("syscall %d (%s) is trapped but past LastSyscall: it needs a decision", nr, tb[nr].Name)
		}
	}
	t.Logf("decisions: %d served, %d checked, %d refused, %d harmless", count[syscalls.Served],
		count[syscalls.Checked], count[syscalls.Refused], count[syscalls.Harmless])
}

// TestRefusedAnswerTheirErrno: each refused number is answered with its
// errno whatever its arguments, and never reaches the host.
func TestRefusedAnswerTheirErrno(t *testing.T) {
	h := newHarness(t, sentry.Options{})
	for nr, pol := range syscalls.Policies() {
		if pol.Decision != syscalls.Refused {
			continue
		}
		for _, args := range [][]uintptr{{}, {1, 2, 3, 4, 5, 6}, {^uintptr(0), 0, 0, 0, 0, 0}} {
			r := h.call(uintptr(nr), args...)
			if r.Action != platform.Done || r.Ret != -int64(pol.Errno) {
				t.Errorf("syscall %d%v: %+v, want -%v", nr, args, r, pol.Errno)
			}
		}
	}
}

// TestUnknownNotifiedTaskKilled: a notification from a thread the sentry
// never saw created is never passed through: the thread is killed and the
// call fails.
func TestUnknownNotifiedTaskKilled(t *testing.T) {
	h := newHarness(t, sentry.Options{})
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	p := []byte("/sentry-test-mount/x\x00")
	cwd := int64(unix.AT_FDCWD)
	args := platform.SyscallArgs{uintptr(cwd), uintptr(unsafe.Pointer(&p[0])), unix.O_CREAT | unix.O_WRONLY}
	r := h.k.SyscallNotify(int32(cmd.Process.Pid), unix.SYS_OPENAT, &args, 1, 0)
	if r.Action != platform.Done || r.Ret != -int64(unix.ENOSYS) {
		t.Fatalf("unknown task's openat: %+v, want ENOSYS", r)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(interface{ Signal() unix.Signal }); !ok || err == nil || ws.Signal() != unix.SIGKILL {
		t.Errorf("unknown task not killed: %v", err)
	}
}

// le builds little-endian struct bytes from fields of the given sizes.
func le(fields ...any) []byte {
	var b []byte
	for _, f := range fields {
		switch v := f.(type) {
		case uint16:
			b = binary.LittleEndian.AppendUint16(b, v)
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, v)
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, v)
		case []byte:
			b = append(b, v...)
		}
	}
	return b
}

// ifCap is errno if this process holds capability c, else a pass: the
// sentry leaves the capability check (EPERM) to the host, as Linux makes
// it before it looks at the descriptor.
func ifCap(c uint, errno int) int {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && n&(1<<c) != 0 {
				return errno
			}
		}
	}
	return -1
}

// capOr is with when the test runs with capability c, else without.
func capOr(c uint, with, without unix.Errno) int {
	if e := ifCap(c, int(with)); e >= 0 {
		return e
	}
	return int(without)
}

// TestCheckedHandlers: the checked calls in process, with virtual fd 100
// (a sentry file) and host fd 0: a virtual fd or a path into the mount is
// refused with the errno the policy gives, a host one passes.
func TestCheckedHandlers(t *testing.T) {
	h := newHarness(t, sentry.Options{})
	h.open(t, cstr(mountPoint+"/f"), unix.O_CREAT|unix.O_RDWR, 100)
	inMount, onHost := cstr(mountPoint+"/x"), cstr("/var/tmp")
	buf := func(b []byte) uintptr { return addr(append(b, make([]byte, 64)...)) }
	scm := func(fd uint32) uintptr {
		ctl := le(uint64(20), uint32(unix.SOL_SOCKET), uint32(unix.SCM_RIGHTS), uint32(fd), uint32(0))
		return buf(le(uint64(0), uint64(0), uint64(0), uint64(0), uint64(addr(ctl)), uint64(len(ctl)), uint64(0)))
	}
	const pass, observed = -1, -2
	ovl := cstr("lowerdir=/var/tmp:" + mountPoint + "/a,upperdir=/var/tmp/u")
	// /dev/userfaultfd where the machine has it (Linux 6.1), at a number of
	// its own; else fd 0 stands for it, and is passed.
	uffdDev, uffdDevWant := uintptr(0), pass
	if fd, err := unix.Open("/dev/userfaultfd", unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
		defer unix.Close(fd)
		uffdDev, uffdDevWant = uintptr(fd), int(unix.EPERM)
	}
	for _, c := range []struct {
		name string
		nr   uintptr
		args []uintptr
		want int // an errno, or pass
	}{
		{"LOOP_SET_FD virtual", unix.SYS_IOCTL, []uintptr{0, unix.LOOP_SET_FD, 100}, int(unix.EINVAL)},
		{"LOOP_SET_FD host", unix.SYS_IOCTL, []uintptr{0, unix.LOOP_SET_FD, 0}, pass},
		{"LOOP_CHANGE_FD virtual", unix.SYS_IOCTL, []uintptr{0, 0x4C06, 100}, int(unix.EINVAL)},
		{"LOOP_CONFIGURE virtual", unix.SYS_IOCTL, []uintptr{0, unix.LOOP_CONFIGURE, buf(le(uint32(100)))}, int(unix.EINVAL)},
		{"LOOP_CONFIGURE bad pointer", unix.SYS_IOCTL, []uintptr{0, unix.LOOP_CONFIGURE, 8}, int(unix.EFAULT)},
		{"FICLONE virtual", unix.SYS_IOCTL, []uintptr{0, unix.FICLONE, 100}, int(unix.EXDEV)},
		{"FICLONERANGE virtual", unix.SYS_IOCTL, []uintptr{0, unix.FICLONERANGE, buf(le(uint64(100)))}, int(unix.EXDEV)},
		{"FICLONERANGE host", unix.SYS_IOCTL, []uintptr{0, unix.FICLONERANGE, buf(le(uint64(0)))}, pass},
		{"NOTIF_ADDFD virtual", unix.SYS_IOCTL, []uintptr{0, unix.SECCOMP_IOCTL_NOTIF_ADDFD, buf(le(uint64(1), uint32(0), uint32(100)))}, int(unix.EOPNOTSUPP)},
		{"BTRFS_IOC_SEND virtual", unix.SYS_IOCTL, []uintptr{0, 0x40489426, buf(le(uint64(100)))}, int(unix.EOPNOTSUPP)},
		{"autofs OPENMOUNT in mount", unix.SYS_IOCTL, []uintptr{0, 0xC0189374, buf(le(uint32(1), uint32(0), uint32(24+32), uint32(0xffffffff), uint64(0), inMount))}, int(unix.EOPNOTSUPP)},
		{"ioctl on the virtual fd", unix.SYS_IOCTL, []uintptr{100, unix.FICLONE, 0}, pass},
		{"sendmsg SCM_RIGHTS virtual", unix.SYS_SENDMSG, []uintptr{0, scm(100), 0}, observed},
		{"sendmsg SCM_RIGHTS host", unix.SYS_SENDMSG, []uintptr{0, scm(0), 0}, pass},
		{"sendmsg bad pointer", unix.SYS_SENDMSG, []uintptr{0, 8, 0}, int(unix.EFAULT)},
		{"landlock parent virtual", unix.SYS_LANDLOCK_ADD_RULE, []uintptr{0, unix.LANDLOCK_RULE_PATH_BENEATH, buf(le(uint64(1), uint32(100))), 0}, int(unix.EBADFD)},
		{"landlock parent host", unix.SYS_LANDLOCK_ADD_RULE, []uintptr{0, unix.LANDLOCK_RULE_PATH_BENEATH, buf(le(uint64(1), uint32(0))), 0}, pass},
		{"prctl exe file virtual", unix.SYS_PRCTL, []uintptr{unix.PR_SET_MM, unix.PR_SET_MM_EXE_FILE, 100}, ifCap(unix.CAP_SYS_RESOURCE, int(unix.EACCES))},
		{"prctl other", unix.SYS_PRCTL, []uintptr{unix.PR_SET_NAME, 100}, pass},
		{"bpf OBJ_GET in mount", unix.SYS_BPF, []uintptr{7, buf(le(uint64(addr(inMount)))), 20}, int(unix.EOPNOTSUPP)},
		{"bpf OBJ_GET on host", unix.SYS_BPF, []uintptr{7, buf(le(uint64(addr(onHost)))), 20}, pass},
		{"bpf OBJ_PIN dirfd virtual", unix.SYS_BPF, []uintptr{6, buf(le(uint64(addr(cstr(""))), uint32(0), uint32(1<<14), uint32(100))), 20}, int(unix.ENOENT)},
		{"bpf uprobe-multi in mount", unix.SYS_BPF, []uintptr{28, buf(le(uint32(0), uint32(0), uint32(48), uint32(0), uint64(addr(inMount)))), 64}, int(unix.EOPNOTSUPP)},
		{"fsconfig SET_FD virtual", unix.SYS_FSCONFIG, []uintptr{0, 5, addr(cstr("source")), 0, 100}, int(unix.EOPNOTSUPP)},
		{"fsconfig source in mount", unix.SYS_FSCONFIG, []uintptr{0, 1, addr(cstr("source")), addr(inMount), 0}, int(unix.EOPNOTSUPP)},
		{"fsconfig other key", unix.SYS_FSCONFIG, []uintptr{0, 1, addr(cstr("size")), addr(inMount), 0}, pass},
		{"mount target missing in mount", unix.SYS_MOUNT, []uintptr{addr(cstr("none")), addr(inMount), addr(cstr("tmpfs")), 0, 0}, int(unix.ENOENT)},
		{"mount tmpfs in mount, no mounter", unix.SYS_MOUNT, []uintptr{addr(cstr("none")), addr(cstr(mountPoint)), addr(cstr("tmpfs")), 0, 0}, capOr(unix.CAP_SYS_ADMIN, unix.ENODEV, unix.EPERM)},
		{"mount ramfs in mount", unix.SYS_MOUNT, []uintptr{addr(cstr("none")), addr(cstr(mountPoint)), addr(cstr("ramfs")), 0, 0}, capOr(unix.CAP_SYS_ADMIN, unix.ENODEV, unix.EPERM)},
		{"mount bind onto mount", unix.SYS_MOUNT, []uintptr{addr(onHost), addr(cstr(mountPoint)), 0, 0x1000, 0}, capOr(unix.CAP_SYS_ADMIN, unix.EOPNOTSUPP, unix.EPERM)},
		{"remount the sandbox's mount", unix.SYS_MOUNT, []uintptr{0, addr(cstr(mountPoint)), 0, 0x21, 0}, capOr(unix.CAP_SYS_ADMIN, unix.EPERM, unix.EPERM)},
		{"umount2 of the sandbox's mount", unix.SYS_UMOUNT2, []uintptr{addr(cstr(mountPoint)), 0}, capOr(unix.CAP_SYS_ADMIN, unix.EINVAL, unix.EPERM)},
		{"umount2 lazy of the sandbox's mount", unix.SYS_UMOUNT2, []uintptr{addr(cstr(mountPoint)), 2}, capOr(unix.CAP_SYS_ADMIN, unix.EINVAL, unix.EPERM)},
		{"umount2 bad flags", unix.SYS_UMOUNT2, []uintptr{addr(cstr(mountPoint)), 0x100}, int(unix.EINVAL)},
		{"mount tmpfs on host", unix.SYS_MOUNT, []uintptr{addr(cstr("x")), addr(onHost), addr(cstr("tmpfs")), 0, 0}, pass},
		{"mount bind source in mount", unix.SYS_MOUNT, []uintptr{addr(inMount), addr(onHost), 0, 0x1000, 0}, int(unix.EOPNOTSUPP)},
		{"mount ext4 source in mount", unix.SYS_MOUNT, []uintptr{addr(inMount), addr(onHost), addr(cstr("ext4")), 0, 0}, int(unix.EOPNOTSUPP)},
		{"mount overlay layer in mount", unix.SYS_MOUNT, []uintptr{addr(cstr("o")), addr(onHost), addr(cstr("overlay")), 0, addr(ovl)}, int(unix.EOPNOTSUPP)},
		{"mount remount", unix.SYS_MOUNT, []uintptr{addr(inMount), addr(onHost), 0, 0x20, 0}, pass},
		{"open_tree virtual", unix.SYS_OPEN_TREE, []uintptr{100, addr(cstr("")), unix.AT_EMPTY_PATH}, int(unix.EOPNOTSUPP)},
		// Linux's answers for a tmpfs without quota options.
		{"quotactl_fd virtual", unix.SYS_QUOTACTL_FD, []uintptr{100}, int(unix.ENOSYS)},
		{"quotactl_fd virtual bad type", unix.SYS_QUOTACTL_FD, []uintptr{100, 3}, int(unix.EINVAL)},
		{"quotactl_fd host", unix.SYS_QUOTACTL_FD, []uintptr{0}, pass},
		{"quotactl special in mount", unix.SYS_QUOTACTL, []uintptr{0x800005 << 8, addr(cstr(mountPoint + "/f"))}, int(unix.ENOTBLK)},
		{"quotactl special missing in mount", unix.SYS_QUOTACTL, []uintptr{0x800005 << 8, addr(inMount)}, int(unix.ENOENT)},
		{"quotactl special on host", unix.SYS_QUOTACTL, []uintptr{0x800005 << 8, addr(onHost)}, pass},
		{"quotactl quota file in mount", unix.SYS_QUOTACTL, []uintptr{0x800002 << 8, addr(onHost), 0, addr(cstr(mountPoint + "/f"))}, int(unix.EXDEV)},
		// A tmpfs file cannot back swap (no swap_activate, no bmap).
		{"swapon file in mount", unix.SYS_SWAPON, []uintptr{addr(cstr(mountPoint + "/f"))}, ifCap(unix.CAP_SYS_ADMIN, int(unix.EINVAL))},
		{"swapon directory in mount", unix.SYS_SWAPON, []uintptr{addr(cstr(mountPoint))}, ifCap(unix.CAP_SYS_ADMIN, int(unix.EISDIR))},
		{"swapoff missing in mount", unix.SYS_SWAPOFF, []uintptr{addr(inMount)}, ifCap(unix.CAP_SYS_ADMIN, int(unix.ENOENT))},
		{"swapon on host", unix.SYS_SWAPON, []uintptr{addr(onHost)}, ifCap(unix.CAP_SYS_ADMIN, pass)},
		{"uselib", unix.SYS_USELIB, []uintptr{addr(onHost)}, int(unix.ENOSYS)},
		{"clone CLONE_NEWNS", unix.SYS_CLONE, []uintptr{unix.CLONE_NEWNS}, int(unix.EPERM)},
		{"unshare CLONE_NEWNS", unix.SYS_UNSHARE, []uintptr{unix.CLONE_NEWNS | unix.CLONE_NEWUSER}, int(unix.EPERM)},
		{"unshare net", unix.SYS_UNSHARE, []uintptr{unix.CLONE_NEWNET}, pass},
		{"setns CLONE_NEWNS", unix.SYS_SETNS, []uintptr{0, unix.CLONE_NEWNS}, int(unix.EPERM)},
		{"seccomp NEW_LISTENER", unix.SYS_SECCOMP, []uintptr{unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER}, int(unix.EINVAL)},
		{"seccomp TSYNC", unix.SYS_SECCOMP, []uintptr{unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC}, pass},
		{"userfaultfd of kernel faults", unix.SYS_USERFAULTFD, []uintptr{unix.O_CLOEXEC}, int(unix.EPERM)},
		{"userfaultfd user-mode-only", unix.SYS_USERFAULTFD, []uintptr{unix.O_CLOEXEC | 1}, pass},
		{"USERFAULTFD_IOC_NEW on another file", unix.SYS_IOCTL, []uintptr{0, 0xAA00, 0}, pass},
		{"USERFAULTFD_IOC_NEW on /dev/userfaultfd", unix.SYS_IOCTL, []uintptr{uffdDev, 0xAA00, unix.O_CLOEXEC}, uffdDevWant},
		{"USERFAULTFD_IOC_NEW user-mode-only", unix.SYS_IOCTL, []uintptr{uffdDev, 0xAA00, 1}, pass},
	} {
		r := h.call(c.nr, c.args...)
		switch {
		case c.want == observed && (r.Action != platform.Rewrite || r.Sysno != c.nr || r.Args[1] != c.args[1]):
			t.Errorf("%s: %+v, want the call observed", c.name, r)
		case c.want == observed:
			h.k.SyscallExit(h.tid, -int64(unix.EPIPE))
		case c.want == pass && r.Action != platform.Passthrough:
			t.Errorf("%s: %+v, want a pass", c.name, r)
		case c.want != pass && (r.Action != platform.Done || r.Ret != -int64(c.want)):
			t.Errorf("%s: %+v, want %v", c.name, r, unix.Errno(c.want))
		}
	}
}

// TestCloneStripsUntraced: clone runs on the host without CLONE_UNTRACED.
func TestCloneStripsUntraced(t *testing.T) {
	h := newHarness(t, sentry.Options{})
	r := h.call(unix.SYS_CLONE, unix.CLONE_UNTRACED|unix.CLONE_VM|uintptr(unix.SIGCHLD), 1, 2, 3, 4)
	if r.Action != platform.Rewrite || r.Sysno != unix.SYS_CLONE || r.Args[0] != unix.CLONE_VM|uintptr(unix.SIGCHLD) || r.Args[4] != 4 {
		t.Fatalf("clone: %+v", r)
	}
	h.k.SyscallExit(h.tid, 1234)
}

// TestDedupeVirtualDestinations: FIDEDUPERANGE from a host file to a
// virtual destination and a host one: the host gets a copy without the
// virtual one, and the guest's struct comes back with EXDEV for it and
// the host's status for the other.
func TestDedupeVirtualDestinations(t *testing.T) {
	h := newHarness(t, sentry.Options{})
	h.open(t, cstr(mountPoint+"/f"), unix.O_CREAT|unix.O_RDWR, 100)
	arg := le(uint64(0), uint64(4096), uint16(2), uint16(0), uint32(0),
		uint64(100), uint64(0), uint64(77), uint32(0), uint32(0),
		uint64(0), uint64(0), uint64(0), uint32(0), uint32(0))
	r := h.call(unix.SYS_IOCTL, 0, unix.FIDEDUPERANGE, addr(arg))
	if r.Action != platform.Rewrite || r.Args[2] == addr(arg) {
		t.Fatalf("FIDEDUPERANGE: %+v, want the host to read a copy", r)
	}
	// The copy is below the harness's stand-in stack pointer.
	off := r.Args[2] - addr(h.stack[:])
	copyBuf := h.stack[off : off+uintptr(len(arg))]
	if fd := int64(binary.LittleEndian.Uint64(copyBuf[24:])); fd != -1 {
		t.Fatalf("the host's copy names destination %d", fd)
	}
	if fd := binary.LittleEndian.Uint64(copyBuf[56:]); fd != 0 {
		t.Fatalf("the host destination became %d", fd)
	}
	// The host deduplicated the other destination: 4096 bytes, status 0.
	binary.LittleEndian.PutUint64(copyBuf[56+16:], 4096)
	if ret := h.k.SyscallExit(h.tid, 0); ret != 0 {
		t.Fatalf("exit: %d", ret)
	}
	if fd, st, n := binary.LittleEndian.Uint64(arg[24:]), int32(binary.LittleEndian.Uint32(arg[24+24:])), binary.LittleEndian.Uint64(arg[24+16:]); fd != 100 || st != -int32(unix.EXDEV) || n != 0 {
		t.Errorf("virtual destination: fd %d status %d bytes %d, want 100, -EXDEV, 0", fd, st, n)
	}
	if n := binary.LittleEndian.Uint64(arg[56+16:]); n != 4096 {
		t.Errorf("host destination: %d bytes, want the host's 4096", n)
	}
}
