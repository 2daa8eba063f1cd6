package syscalls_test

import (
	"os"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/fs/tmpfs"
	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
	"sentry/syscalls"
)

// The in-process handler path, without a platform: the "guest" is this
// test process's own thread, whose memory the handlers read and write with
// process_vm_readv/writev exactly as they do a real guest's.

const mountPoint = "/sentry-test-mount"

type harness struct {
	// args is reused, as the platform's is.
	args platform.SyscallArgs
	// stack stands in for the guest's stack (the sentry writes below sp).
	stack [8192]byte
	k     *sentry.Kernel
	tid   int32
	fs    *tmpfs.Filesystem
	inj   *testInjector
}

// testInjector stands for the platform's ADDFD: the "guest" is this test
// process, and an install puts a copy of the sentry's descriptor at the
// number next says (real: dup3), or fails with err.
type testInjector struct {
	next int32
	err  error
	// real makes the copy; the fuzzer only models numbers.
	real bool
}

func (j *testInjector) InstallFD(_ uint64, fd int, cloexec bool) (int32, error) {
	if j.err != nil {
		return -1, j.err
	}
	if j.real {
		if err := unix.Dup3(fd, int(j.next), unix.O_CLOEXEC); err != nil {
			return -1, err
		}
	}
	return j.next, nil
}
func (j *testInjector) InstallFDAt(_ uint64, fd int, at int32, cloexec bool) error {
	if j.err != nil {
		return j.err
	}
	if j.real {
		return unix.Dup3(fd, int(at), unix.O_CLOEXEC)
	}
	return nil
}
func (j *testInjector) Blocking()             {}
func (j *testInjector) Respond(uint64, int64) {}
func (j *testInjector) Valid(uint64) bool     { return true }

func newHarness(tb testing.TB, opts sentry.Options) *harness {
	tb.Helper()
	fs, err := tmpfs.New(tmpfs.Options{Dev: unix.Mkdev(0, 250), RootMode: 01777})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(fs.Release)
	opts.Mounts = []*vfs.Mount{{Point: mountPoint, Root: fs.Root(), ID: 1, FS: fs}}
	opts.Cwd = "/"
	if opts.Creds.UID == 0 && opts.Creds.Caps == 0 {
		// Root, as the test process is.
		opts.Creds.Caps = vfs.AllCaps
	}
	k := sentry.NewKernel(opts, syscalls.NewTable())
	inj := &testInjector{real: true}
	k.SetInjector(inj)
	tid := int32(unix.Gettid())
	k.NewTask(0, tid, platform.NewTaskFork)
	return &harness{k: k, tid: tid, fs: fs, inj: inj}
}

// sp is the top of the stand-in stack.
func (h *harness) sp() uintptr { return uintptr(unsafe.Pointer(&h.stack[len(h.stack)-1])) + 1 }

func cstr(s string) []byte { return append([]byte(s), 0) }

// pinned keeps alive the buffers whose addresses tests pass as guest
// pointers: a uintptr does not, and a buffer the GC freed before the
// handler read it (process_vm_readv of this process) made a test fail at
// random with EFAULT or a garbage argument (TestCheckedHandlers' bpf
// cases, with a pointer inside another buffer). A ring: a test makes its
// table of buffers before its calls, never nearly this many, and the
// fuzzers make buffers without end. Tests are sequential.
var (
	pinned    [1 << 14][]byte
	pinnedPos int
)

// addr is b's address, as a guest passes a pointer; b stays alive for the
// next len(pinned) calls of addr.
func addr(b []byte) uintptr {
	pinned[pinnedPos%len(pinned)] = b
	pinnedPos++
	return uintptr(unsafe.Pointer(&b[0]))
}

// open serves openat as the ptrace platform does: the stop turns it into
// the install call, whose notification installs the placeholder, here at
// fd of this process (the file's backing itself, for a regular file).
func (h *harness) open(tb testing.TB, path []byte, flags int, fd int32) {
	tb.Helper()
	cwd := int64(unix.AT_FDCWD)
	args := platform.SyscallArgs{uintptr(cwd), addr(path), uintptr(flags), 0644}
	res := h.k.Syscall(h.tid, unix.SYS_OPENAT, &args, h.sp())
	if res.Action != platform.Install {
		tb.Fatalf("openat %s: %+v", path, res)
	}
	h.inj.next = fd
	res = h.k.SyscallNotify(h.tid, platform.SysInstallFD, &args, 1, 0)
	if res.Action != platform.Responded || res.Ret != int64(fd) {
		tb.Fatalf("openat %s install: %+v", path, res)
	}
}

func (h *harness) call(nr uintptr, a ...uintptr) platform.Result {
	h.args = platform.SyscallArgs{}
	copy(h.args[:], a)
	return h.k.Syscall(h.tid, nr, &h.args, h.sp())
}

// hostPipe is a pipe of this process's own, closed at the test's end: a
// host fd, which no handler may take for a virtual one.
func hostPipe(t *testing.T) [2]int {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Close(p[0])
		unix.Close(p[1])
	})
	return p
}

// guestFD is where the tests' "guest" (this process) gets its descriptors:
// far above the sentry's own, which live in the same process here.
const guestFD = 5000

func TestHandlersInProcess(t *testing.T) {
	h := newHarness(t, sentry.Options{FstatatShortcut: true})
	path := cstr(mountPoint + "/f")
	h.open(t, path, unix.O_CREAT|unix.O_RDWR, guestFD)
	data := []byte("hello")
	if r := h.call(unix.SYS_WRITE, guestFD, addr(data), 5); r.Action != platform.Passthrough {
		t.Fatalf("write is not the sentry's: %+v", r)
	}
	// The descriptor is the file's data itself.
	if n, err := unix.Write(guestFD, data); n != 5 || err != nil {
		t.Fatalf("write: %d %v", n, err)
	}
	var st unix.Stat_t
	if r := h.call(unix.SYS_FSTAT, guestFD, uintptr(unsafe.Pointer(&st))); r.Ret != 0 || st.Size != 5 || st.Mode != unix.S_IFREG|0644 {
		t.Fatalf("fstat: %+v %+v", r, st)
	}
	empty := cstr("")
	st = unix.Stat_t{}
	if r := h.call(unix.SYS_NEWFSTATAT, guestFD, addr(empty), uintptr(unsafe.Pointer(&st)), unix.AT_EMPTY_PATH); r.Ret != 0 || st.Size != 5 {
		t.Fatalf("newfstatat: %+v %+v", r, st)
	}
	if r := h.call(unix.SYS_FSTAT, guestFD, 8); r.Ret != -int64(unix.EFAULT) {
		t.Fatalf("fstat to a bad pointer: %+v", r)
	}
	if r := h.call(unix.SYS_CLOSE, guestFD); r.Action != platform.Passthrough {
		t.Fatalf("close: %+v", r)
	}
	unix.Close(guestFD)
	if c := h.k.Counters.Snapshot(h.k.Table()); c["close.sync"] != 1 || c["fstat"] != 2 || c["newfstatat.empty_path_shortcut"] != 1 {
		t.Fatalf("counters: %v", c)
	}
	if err := h.fs.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestHotPathsAllocateNothing: close, fstat and newfstatat on a virtual
// fd allocate nothing (the trap path's budget is a few microseconds).
func TestHotPathsAllocateNothing(t *testing.T) {
	for _, mode := range []sentry.ClosePath{sentry.CloseSync, sentry.CloseDeferred} {
		h := newHarness(t, sentry.Options{FstatatShortcut: true, ClosePath: mode})
		path := cstr(mountPoint + "/f")
		h.open(t, path, unix.O_CREAT|unix.O_RDWR, guestFD)
		var st unix.Stat_t
		stp := uintptr(unsafe.Pointer(&st))
		empty := cstr("")
		if n := testing.AllocsPerRun(1000, func() { h.call(unix.SYS_FSTAT, guestFD, stp) }); n != 0 {
			t.Errorf("fstat: %v allocs/op", n)
		}
		if n := testing.AllocsPerRun(1000, func() { h.call(unix.SYS_NEWFSTATAT, guestFD, addr(empty), stp, unix.AT_EMPTY_PATH) }); n != 0 {
			t.Errorf("newfstatat(fd, \"\", AT_EMPTY_PATH): %v allocs/op", n)
		}
		// Close numbers opened beforehand, so only close is measured.
		const runs = 200
		for i := int32(0); i <= runs; i++ {
			h.open(t, path, unix.O_RDONLY, guestFD+100+i)
		}
		next := int32(guestFD + 100)
		if n := testing.AllocsPerRun(runs, func() { h.call(unix.SYS_CLOSE, uintptr(next)); next++ }); n != 0 {
			t.Errorf("close (%v): %v allocs/op", mode, n)
		}
	}
}

func benchmarkOpenClose(b *testing.B, mode sentry.ClosePath) {
	h := newHarness(b, sentry.Options{FstatatShortcut: true, ClosePath: mode})
	path := cstr(mountPoint + "/f")
	h.open(b, path, unix.O_CREAT|unix.O_RDWR, guestFD)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.open(b, path, unix.O_RDONLY, guestFD+1)
		h.call(unix.SYS_CLOSE, guestFD+1)
	}
}

func BenchmarkOpenCloseSync(b *testing.B)     { benchmarkOpenClose(b, sentry.CloseSync) }
func BenchmarkOpenCloseDeferred(b *testing.B) { benchmarkOpenClose(b, sentry.CloseDeferred) }

func BenchmarkFstat(b *testing.B) {
	h := newHarness(b, sentry.Options{FstatatShortcut: true})
	h.open(b, cstr(mountPoint+"/f"), unix.O_CREAT|unix.O_RDWR, guestFD)
	var st unix.Stat_t
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.call(unix.SYS_FSTAT, guestFD, uintptr(unsafe.Pointer(&st)))
	}
}

func benchmarkFstatatEmpty(b *testing.B, shortcut bool) {
	h := newHarness(b, sentry.Options{FstatatShortcut: shortcut})
	h.open(b, cstr(mountPoint+"/f"), unix.O_CREAT|unix.O_RDWR, guestFD)
	var st unix.Stat_t
	empty := cstr("")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.call(unix.SYS_NEWFSTATAT, guestFD, addr(empty), uintptr(unsafe.Pointer(&st)), unix.AT_EMPTY_PATH)
	}
}

func BenchmarkFstatatEmptyShortcut(b *testing.B) { benchmarkFstatatEmpty(b, true) }
func BenchmarkFstatatEmptyLookup(b *testing.B)   { benchmarkFstatatEmpty(b, false) }

// BenchmarkStatHostPath is newfstatat of a host path: the walk proves the
// kernel's resolution meets no link, and the call passes through.
func BenchmarkStatHostPath(b *testing.B) {
	h := newHarness(b, sentry.Options{})
	path := cstr("/usr/include/stdio.h")
	var st unix.Stat_t
	b.ReportAllocs()
	for b.Loop() {
		if r := h.call(unix.SYS_NEWFSTATAT, atFDCWD, addr(path), uintptr(unsafe.Pointer(&st)), 0); r.Action != platform.Passthrough {
			b.Fatalf("newfstatat: %+v", r)
		}
	}
}

// BenchmarkStatTmpfsPath is newfstatat of a path in the sentry's mount.
func BenchmarkStatTmpfsPath(b *testing.B) {
	h := newHarness(b, sentry.Options{})
	path := cstr(mountPoint + "/f")
	h.open(b, path, unix.O_CREAT|unix.O_RDWR, 100)
	var st unix.Stat_t
	b.ReportAllocs()
	for b.Loop() {
		if r := h.call(unix.SYS_NEWFSTATAT, atFDCWD, addr(path), uintptr(unsafe.Pointer(&st)), 0); r.Ret != 0 {
			b.Fatalf("newfstatat: %+v", r)
		}
	}
}

// BenchmarkStatHostLinkPath is newfstatat of a host path through a host
// symlink: the walk follows it one component at a time.
func BenchmarkStatHostLinkPath(b *testing.B) {
	h := newHarness(b, sentry.Options{})
	link := "/dev/shm/sentry-bench-link-" + strconv.Itoa(unix.Getpid())
	os.Remove(link)
	if err := os.Symlink("/usr/include/stdio.h", link); err != nil {
		b.Fatal(err)
	}
	defer os.Remove(link)
	path := cstr(link)
	var st unix.Stat_t
	b.ReportAllocs()
	for b.Loop() {
		if r := h.call(unix.SYS_NEWFSTATAT, atFDCWD, addr(path), uintptr(unsafe.Pointer(&st)), 0); r.Action != platform.Passthrough {
			b.Fatalf("newfstatat: %+v", r)
		}
	}
}
