package platform

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// guardedPages maps two pages and unmaps the second, so that the end of
// the first is the end of readable memory: the case where a guest's string
// or buffer runs into an unmapped page.
func guardedPages(t *testing.T) []byte {
	t.Helper()
	m, err := unix.Mmap(-1, 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	// unix.Munmap only takes whole mappings it made: unmap by hand.
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, addrOf(m)+pageSize, pageSize, 0); e != 0 {
		t.Fatal(e)
	}
	t.Cleanup(func() { unix.Syscall(unix.SYS_MUNMAP, addrOf(m), pageSize, 0) })
	return m[:pageSize]
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// The sentry reads a guest's memory with process_vm_readv; here the
// "guest" is this process, which has the same semantics for the calls.
func TestReadString(t *testing.T) {
	tid := int32(unix.Gettid())
	page := guardedPages(t)
	end := addrOf(page) + pageSize

	// put writes s at the very end of the mapped page.
	put := func(s string) uintptr {
		copy(page[pageSize-len(s):], s)
		return end - uintptr(len(s))
	}
	long := bytes.Repeat([]byte("a"), 3*pageSize)
	long[len(long)-1] = 0

	for _, tc := range []struct {
		name    string
		addr    func() uintptr
		max     int
		want    string
		wantErr error
	}{
		{"null pointer", func() uintptr { return 0 }, 10, "", unix.EFAULT},
		{"ends at the page's last byte", func() uintptr { return put("abc\x00") }, 10, "abc", nil},
		{"empty", func() uintptr { return put("\x00") }, 10, "", nil},
		{"runs into an unmapped page", func() uintptr { return put("abcd") }, 100, "", unix.EFAULT},
		// Linux's getname: a string of exactly max bytes fits, one
		// more without a NUL is ENAMETOOLONG, even when the memory
		// after it is unmapped (the limit is met first).
		{"exactly max", func() uintptr { return put("abcde\x00") }, 5, "abcde", nil},
		{"max exceeded before the unmapped page", func() uintptr { return put("abcdef") }, 4, "", unix.ENAMETOOLONG},
		{"spans pages", func() uintptr { return addrOf(long) }, len(long), string(long[:len(long)-1]), nil},
		{"spans pages, too long", func() uintptr { return addrOf(long) }, pageSize, "", unix.ENAMETOOLONG},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadString(tid, tc.addr(), tc.max, make([]byte, 0, 16))
			if !errors.Is(err, tc.wantErr) || (err == nil && tc.wantErr != nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err == nil && string(got) != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReadWriteMemory(t *testing.T) {
	tid := int32(unix.Gettid())
	page := guardedPages(t)
	end := addrOf(page) + pageSize
	for _, tc := range []struct {
		name    string
		addr    uintptr
		n       int
		wantErr error
	}{
		{"inside", end - 8, 8, nil},
		{"nothing", 0, 0, nil},
		// A range that is only partly mapped is EFAULT as a whole: the
		// sentry never acts on half a buffer.
		{"partly mapped", end - 4, 8, unix.EFAULT},
		{"unmapped", end, 1, unix.EFAULT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := bytes.Repeat([]byte{0x5a}, tc.n)
			if err := WriteMemory(tid, tc.addr, src); err != tc.wantErr {
				t.Fatalf("write: %v, want %v", err, tc.wantErr)
			}
			dst := make([]byte, tc.n)
			if err := ReadMemory(tid, tc.addr, dst); err != tc.wantErr {
				t.Fatalf("read: %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && !bytes.Equal(dst, src) {
				t.Fatalf("read %x after writing %x", dst, src)
			}
		})
	}
	// A failed partial write must not be reported as done; what it
	// changed is the kernel's business, but a later full read still
	// sees memory, not garbage from the sentry.
	if err := ReadMemory(tid, end-4, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
}

func TestIsRestart(t *testing.T) {
	for _, tc := range []struct {
		ret  int64
		want bool
	}{
		{-ERESTARTSYS, true},
		{-ERESTARTNOINTR, true},
		{-ERESTARTNOHAND, true},
		{-ERESTART_RESTARTBLOCK, true},
		{-515, false}, // ENOIOCTLCMD: kernel-internal, not a restart
		{-int64(unix.EINTR), false},
		{ERESTARTSYS, false}, // a positive result that happens to be 512
		{0, false},
	} {
		if got := IsRestart(tc.ret); got != tc.want {
			t.Errorf("IsRestart(%d) = %v, want %v", tc.ret, got, tc.want)
		}
	}
}

// GetFD is how the sentry acts on a guest's socket or pipe: it must give
// the same open file description (shared offset), and EBADF for a number
// that is not open.
func TestGetFD(t *testing.T) {
	tid := int32(unix.Gettid())
	f, err := unix.MemfdCreate("getfd", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(f)
	if _, err := unix.Write(f, []byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	g, err := GetFD(tid, int32(f))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(g)
	if off, _ := unix.Seek(g, 0, 1); off != 10 {
		t.Errorf("offset through the copy %d, want the original's 10", off)
	}
	unix.Seek(g, 3, 0)
	if off, _ := unix.Seek(f, 0, 1); off != 3 {
		t.Errorf("offset moved through the copy shows %d in the original, want 3", off)
	}
	if flags, _ := unix.FcntlInt(uintptr(g), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC == 0 {
		t.Error("the sentry's copy is not close-on-exec")
	}
	if _, err := GetFD(tid, 1<<20); err != unix.EBADF {
		t.Errorf("GetFD of a closed number: %v, want EBADF", err)
	}
}
