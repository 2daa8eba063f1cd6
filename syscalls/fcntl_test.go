package syscalls_test

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/syscalls"
)

// fcntlServed are the commands the sentry serves, follows or checks
// (Fcntl): the filter traps them on every descriptor.
var fcntlServed = []uint32{unix.F_DUPFD, unix.F_DUPFD_CLOEXEC, unix.F_GETFL, unix.F_SETFL,
	unix.F_NOTIFY, unix.F_CREATED_QUERY, unix.F_SETSIG, unix.F_SETLEASE}

// TestFcntlCommands asks the running kernel which fcntl commands it knows
// (any answer but EINVAL, on a shmem file or a pipe) and checks each
// against the filter's list of commands that run untrapped (PassValues)
// and the ones Fcntl serves. A command the kernel knows and the sentry
// does not is trapped and refused with EINVAL on a virtual fd (fail
// closed), so the sandbox stays safe; but the guest then sees a
// difference from Linux, and whether the command may run on a placeholder
// (pass it) or needs the sentry (serve it) is a decision to make, command
// by command: this test names it. A passed command the kernel does not know
// would be one the filter lets run unchecked for nothing.
func TestFcntlCommands(t *testing.T) {
	pass := syscalls.NewTable()[unix.SYS_FCNTL].PassValues
	if len(pass) == 0 {
		t.Fatal("fcntl has no PassValues: every command would be trapped")
	}
	for _, v := range pass {
		if slices.Contains(fcntlServed, v) {
			t.Errorf("fcntl command %d is served but the filter passes it", v)
		}
	}
	mfd, err := unix.MemfdCreate("fcntl", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(mfd)
	p := hostPipe(t)
	// known calls fcntl(fd, cmd, 0): arg 0 is harmless for every command
	// (no signal, no lock pointer, no seal, a pipe's least size) and
	// the dups' copies are closed.
	known := func(fd int, cmd uint32) bool {
		r, _, e := unix.Syscall(unix.SYS_FCNTL, uintptr(fd), uintptr(cmd), 0)
		if e == 0 && (cmd == unix.F_DUPFD || cmd == unix.F_DUPFD_CLOEXEC) {
			unix.Close(int(r))
		}
		return e != unix.EINVAL
	}
	// Commands are small numbers (1024 is F_LINUX_SPECIFIC_BASE); the
	// kernel reads 32 bits, and a scan of them all would take minutes.
	for cmd := uint32(0); cmd < 1<<16; cmd++ {
		k := known(mfd, cmd) || known(p[0], cmd)
		switch ours := slices.Contains(pass, cmd) || slices.Contains(fcntlServed, cmd); {
		case k && !ours:
			t.Errorf("the kernel knows fcntl command %d (%#x), which the sentry neither passes nor serves: "+
				"on a virtual fd it is EINVAL (fcntlUntrapped, Fcntl)", cmd, cmd)
		case !k && ours:
			t.Errorf("fcntl command %d (%#x) is not one the kernel knows, but the sentry lists it", cmd, cmd)
		}
	}
}

// TestFcntlOnVirtualFDs: what Fcntl decides for the commands the filter
// traps, and for the ones it passes should a platform ask (a stopped call
// is handled the same). On a virtual fd a command the sentry does not
// know is EINVAL, never run on the placeholder; on a virtual O_PATH fd
// check_fcntl_cmd's EBADF comes first, F_SETSIG's included; on a host fd
// the host answers.
func TestFcntlOnVirtualFDs(t *testing.T) {
	p := hostPipe(t)
	// untracked is a copy of virt's placeholder the table does not know.
	const virt, path, untracked = guestFD, guestFD + 1, guestFD + 2
	host := uintptr(p[0])
	const cancelLK = 1029 // F_CANCELLK: the kernel's own, EINVAL from fcntl
	type want struct {
		act platform.Action
		ret int64
	}
	pass, done := func() want { return want{platform.Passthrough, 0} },
		func(e unix.Errno) want { return want{platform.Done, -int64(e)} }
	for _, tc := range []struct {
		name string
		args []uintptr
		want want
	}{
		{"unknown virtual", []uintptr{virt, cancelLK}, done(unix.EINVAL)},
		{"unknown virtual, upper half set", []uintptr{virt, 1<<32 | cancelLK}, done(unix.EINVAL)},
		{"unknown virtual, gone file write hint", []uintptr{virt, 1037}, done(unix.EINVAL)},
		{"unknown host", []uintptr{host, cancelLK}, pass()},
		{"unknown O_PATH", []uintptr{path, cancelLK}, done(unix.EBADF)},
		{"F_SETSIG O_PATH", []uintptr{path, unix.F_SETSIG, 0}, done(unix.EBADF)},
		{"F_SETSIG virtual", []uintptr{virt, unix.F_SETSIG, 0}, pass()},
		{"F_NOTIFY O_PATH", []uintptr{path, unix.F_NOTIFY, 0}, done(unix.EBADF)},
		{"F_SETFL O_PATH", []uintptr{path, unix.F_SETFL, 0}, done(unix.EBADF)},
		{"F_GETFD O_PATH", []uintptr{path, unix.F_GETFD}, pass()},
		{"F_CREATED_QUERY O_PATH", []uintptr{path, unix.F_CREATED_QUERY}, want{platform.Done, 0}},
		{"F_CREATED_QUERY virtual", []uintptr{virt, unix.F_CREATED_QUERY}, want{platform.Done, 1}},
		{"F_SETLEASE virtual", []uintptr{virt, unix.F_SETLEASE, unix.F_RDLCK}, done(unix.EINVAL)},
		{"F_SETLEASE unlock virtual", []uintptr{virt, unix.F_SETLEASE, unix.F_UNLCK}, done(unix.EINVAL)},
		{"F_SETLEASE O_PATH", []uintptr{path, unix.F_SETLEASE, unix.F_RDLCK}, done(unix.EBADF)},
		{"F_SETLEASE placeholder behind the table's back", []uintptr{untracked, unix.F_SETLEASE, unix.F_RDLCK}, done(unix.EINVAL)},
		{"F_SETLEASE host", []uintptr{host, unix.F_SETLEASE, unix.F_RDLCK}, pass()},
		{"F_SETLK virtual (passed)", []uintptr{virt, unix.F_SETLK, 0}, pass()},
		{"F_GET_SEALS virtual (passed)", []uintptr{virt, unix.F_GET_SEALS}, pass()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, sentry.Options{})
			h.open(t, cstr(mountPoint+"/a"), unix.O_CREAT|unix.O_RDWR, virt)
			defer unix.Close(virt)
			h.open(t, cstr(mountPoint+"/a"), unix.O_PATH, path)
			defer unix.Close(path)
			if err := unix.Dup2(virt, untracked); err != nil {
				t.Fatal(err)
			}
			defer unix.Close(untracked)
			r := h.call(unix.SYS_FCNTL, tc.args...)
			if r.Action != tc.want.act || (r.Action == platform.Done && r.Ret != tc.want.ret) {
				t.Errorf("got %+v, want action %v ret %d", r, tc.want.act, tc.want.ret)
			}
		})
	}
}
