package syscalls_test

import (
	"os"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/syscalls"
)

// ioc is _IOC(dir, typ, nr, size).
func ioc(dir, typ, nr, size uint32) uint32 { return dir<<30 | size<<16 | typ<<8 | nr }

// TestIoctlRequests asks the running kernel which ioctl requests a tmpfs
// regular file or directory (in /dev/shm) answers with anything but ENOTTY,
// over the types the kernel's generic requests use (every number, every
// direction, sizes up to 160 bytes: their structs are 17 to 129) and an
// int's and a long's size of every other type,
// and checks them against FileIoctls, the requests a virtual fd's
// placeholder may be given: a request the kernel answers and the sentry
// refuses (ENOTTY on a virtual fd) is a difference from Linux to decide on,
// one the sentry passes that the kernel does not answer lets through
// what it need not.
func TestIoctlRequests(t *testing.T) {
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) != nil || st.Type != unix.TMPFS_MAGIC {
		t.Skip("/dev/shm is not a tmpfs")
	}
	dir, err := os.MkdirTemp("/dev/shm", "sentry-ioctl-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file, err := unix.Open(dir+"/f", unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(file)
	unix.Write(file, []byte("hello"))
	d, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(d)
	buf := make([]byte, 4096)
	known := map[uint32]bool{}
	try := func(req uint32) {
		for _, fd := range []int{file, d} {
			clear(buf)
			if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&buf[0]))); e != unix.ENOTTY {
				known[req] = true
			}
		}
	}
	generic := []uint32{0, 'f', 'X', 0x94, 0x15, 'T'}
	sizes := []uint32{4, 8}
	for typ := uint32(0); typ < 256; typ++ {
		for nr := uint32(0); nr < 256; nr++ {
			try(ioc(0, typ, nr, 0))
			for dir := uint32(1); dir < 4; dir++ {
				if slices.Contains(generic, typ) {
					for size := uint32(1); size <= 160; size++ {
						try(ioc(dir, typ, nr, size))
					}
					continue
				}
				for _, size := range sizes {
					try(ioc(dir, typ, nr, size))
				}
			}
		}
	}
	for req := range known {
		if !slices.Contains(syscalls.FileIoctls, req) {
			t.Errorf("the kernel answers ioctl %#x on a tmpfs file or directory; on a virtual fd the sentry says ENOTTY (fileIoctls)", req)
		}
	}
	for _, req := range syscalls.FileIoctls {
		if !known[req] {
			t.Errorf("ioctl %#x is in fileIoctls but the kernel answers ENOTTY on a tmpfs file and directory", req)
		}
	}
}

// TestIoctlOnVirtualFDs: a request tmpfs does not know is ENOTTY on a
// virtual regular file or directory, never given to the store's file; the
// known ones are the host's, on the placeholder.
func TestIoctlOnVirtualFDs(t *testing.T) {
	const file, dir = guestFD, guestFD + 1
	for _, tc := range []struct {
		name string
		args []uintptr
		want platform.Action
		ret  int64
	}{
		{"unknown on a file", []uintptr{file, 0x80811501 /* FS_IOC_GETFSSYSFSPATH */, 0}, platform.Done, -int64(unix.ENOTTY)},
		{"unknown on a directory", []uintptr{dir, 0x40086610, 0}, platform.Done, -int64(unix.ENOTTY)},
		{"terminal request on a file", []uintptr{file, unix.TCGETS, 0}, platform.Done, -int64(unix.ENOTTY)},
		{"unknown with the upper half of a known one", []uintptr{file, 1<<32 | 0x12345678, 0}, platform.Done, -int64(unix.ENOTTY)},
		{"FIONREAD on a file", []uintptr{file, 0x541B, 0}, platform.Passthrough, 0},
		{"FIOCLEX on a directory", []uintptr{dir, 0x5451 /* FIOCLEX */, 0}, platform.Passthrough, 0},
		{"FIONREAD with the upper half set", []uintptr{file, 1<<32 | 0x541B, 0}, platform.Passthrough, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, sentry.Options{})
			h.open(t, cstr(mountPoint+"/a"), unix.O_CREAT|unix.O_RDWR, file)
			defer unix.Close(file)
			h.open(t, cstr(mountPoint), unix.O_DIRECTORY, dir)
			defer unix.Close(dir)
			r := h.call(unix.SYS_IOCTL, tc.args...)
			if r.Action != tc.want || (r.Action == platform.Done && r.Ret != tc.ret) {
				t.Errorf("got %+v, want action %v ret %d", r, tc.want, tc.ret)
			}
		})
	}
}
