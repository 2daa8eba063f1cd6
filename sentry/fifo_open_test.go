package sentry

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sentry/platform"
)

// fifoInjector keeps a copy of each descriptor installed, by notification,
// and each answer, from any goroutine.
type fifoInjector struct {
	mu        sync.Mutex
	installed map[uint64]int
	answers   map[uint64]int64
	changed   chan struct{}
}

func (f *fifoInjector) InstallFD(id uint64, fd int, cloexec bool) (int32, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	f.mu.Lock()
	f.installed[id] = dup
	f.mu.Unlock()
	f.changed <- struct{}{}
	return int32(dup), nil
}
func (f *fifoInjector) InstallFDAt(uint64, int, int32, bool) error { return unix.ENOSYS }
func (f *fifoInjector) Blocking()                                  {}
func (f *fifoInjector) Valid(uint64) bool                          { return true }
func (f *fifoInjector) Respond(id uint64, ret int64) {
	f.mu.Lock()
	f.answers[id] = ret
	f.mu.Unlock()
	f.changed <- struct{}{}
}

// nrFIFO opens FIFO number args[0] of the test's directory with flags
// args[1] (OpenFIFO).
const nrFIFO = 400

// TestFIFOOpensPastTheThreads: more opens wait than maxFIFOThreads, readers
// first and writers first; the first maxFIFOThreads wait on threads, the
// rest are parked, and each is answered once its other end opens through
// the sentry, with a descriptor of its own FIFO that carries a byte from
// its writer.
func TestFIFOOpensPastTheThreads(t *testing.T) {
	for _, first := range []int{unix.O_RDONLY, unix.O_WRONLY} {
		name := map[int]string{unix.O_RDONLY: "readers first", unix.O_WRONLY: "writers first"}[first]
		t.Run(name, func(t *testing.T) {
			testFIFOOpens(t, first)
		})
	}
}

// fifoKernel is a kernel whose call nrFIFO opens FIFO args[0] of a new
// directory of n FIFOs with flags args[1] (OpenFIFO), and open issues
// it from a new task.
func fifoKernel(t *testing.T, n int) (k *Kernel, inj *fifoInjector, dir string, open func(id uint64, i int, flags int)) {
	dir = t.TempDir()
	for i := 0; i < n; i++ {
		if err := unix.Mkfifo(filepath.Join(dir, strconv.Itoa(i)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var tb SyscallTable
	tb[nrFIFO] = Syscall{Name: "fifo", Notify: true, Fn: func(c *Call, args *platform.SyscallArgs) Result {
		p := filepath.Join(dir, strconv.Itoa(int(args[0])))
		flags := int(args[1])
		return c.OpenFIFO(FIFOOpen{
			FIFO:  p,
			Key:   p + "\x00" + strconv.Itoa(flags),
			Flags: flags,
			Open: func(fl int) (int, error) {
				return unix.Open(p, fl|unix.O_CLOEXEC, 0)
			},
			Cancel: func() {
				other := unix.O_RDONLY
				if flags&unix.O_ACCMODE == unix.O_RDONLY {
					other = unix.O_WRONLY
				}
				if fd, err := unix.Open(p, other|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
					unix.Close(fd)
				}
			},
		})
	}}
	k = NewKernel(Options{Cwd: "/"}, &tb)
	inj = &fifoInjector{installed: map[uint64]int{}, answers: map[uint64]int64{}, changed: make(chan struct{}, 4*n)}
	k.SetInjector(inj)
	t.Cleanup(k.Shutdown)
	// Task numbers past pid_max: no /proc entry, so no signal is ever
	// pending for them (blockedOp.watch).
	pidMax, _ := os.ReadFile("/proc/sys/kernel/pid_max")
	base, err := strconv.Atoi(strings.TrimSpace(string(pidMax)))
	if err != nil {
		t.Fatal(err)
	}
	open = func(id uint64, i int, flags int) {
		tid := int32(base + 1 + int(id))
		k.NewTask(0, tid, platform.NewTaskFork)
		args := platform.SyscallArgs{uintptr(i), uintptr(flags)}
		if res := k.SyscallNotify(tid, nrFIFO, &args, id, 0); res.Action != platform.Responded {
			t.Fatalf("open %d: %+v", i, res)
		}
	}
	return k, inj, dir, open
}

// answered waits until want opens are answered.
func (f *fifoInjector) answered(t *testing.T, want int) {
	deadline := time.After(30 * time.Second)
	for {
		f.mu.Lock()
		done := len(f.installed) + len(f.answers)
		f.mu.Unlock()
		if done == want {
			return
		}
		select {
		case <-f.changed:
		case <-deadline:
			t.Fatalf("%d of %d opens answered after 30 s", done, want)
		}
	}
}

func testFIFOOpens(t *testing.T, first int) {
	const n = maxFIFOThreads + 40
	k, inj, _, open := fifoKernel(t, n)
	second := unix.O_WRONLY
	if first == unix.O_WRONLY {
		second = unix.O_RDONLY
	}
	for i := 0; i < n; i++ {
		open(uint64(i), i, first)
	}
	k.blocked.mu.Lock()
	threads, parked := k.blocked.threads, 0
	for _, set := range k.blocked.parked {
		parked += len(set)
	}
	k.blocked.mu.Unlock()
	if threads != maxFIFOThreads || parked != n-maxFIFOThreads {
		t.Fatalf("%d opens waiting on threads and %d parked, want %d and %d", threads, parked, maxFIFOThreads, n-maxFIFOThreads)
	}
	inj.mu.Lock()
	early := len(inj.installed) + len(inj.answers)
	inj.mu.Unlock()
	if early != 0 {
		t.Fatalf("%d answered before the other ends", early)
	}
	for i := 0; i < n; i++ {
		open(uint64(n+i), i, second)
	}
	inj.answered(t, 2*n)
	if len(inj.answers) != 0 {
		t.Fatalf("opens failed: %v", inj.answers)
	}
	for i := 0; i < n; i++ {
		r, w := inj.installed[uint64(i)], inj.installed[uint64(n+i)]
		if first == unix.O_WRONLY {
			r, w = w, r
		}
		for _, fd := range []int{r, w} {
			if fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
				t.Errorf("FIFO %d: a descriptor kept O_NONBLOCK", i)
			}
		}
		b := []byte{byte(i)}
		if _, err := unix.Write(w, b); err != nil {
			t.Fatalf("FIFO %d: write: %v", i, err)
		}
		got := make([]byte, 2)
		if m, err := unix.Read(r, got); err != nil || m != 1 || got[0] != byte(i) {
			t.Errorf("FIFO %d: read %d %v %v, want the writer's byte", i, m, err, got[:1])
		}
		unix.Close(r)
		unix.Close(w)
	}
}

// TestParkedReaderSeesAWriterThere: past maxFIFOThreads, a reader whose
// FIFO has a writer the sentry did not open (the host's, one that has
// written nothing) opens without waiting, as Linux's reader does when
// writers are there (writerThere).
func TestParkedReaderSeesAWriterThere(t *testing.T) {
	const n = maxFIFOThreads + 8
	_, inj, dir, open := fifoKernel(t, n)
	for i := 0; i < maxFIFOThreads; i++ {
		open(uint64(i), i, unix.O_RDONLY)
	}
	// The host's writers, each with a reading end of the test's own
	// for the time it opens.
	for i := maxFIFOThreads; i < n; i++ {
		p := filepath.Join(dir, strconv.Itoa(i))
		r, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		w, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(r)
		defer unix.Close(w)
	}
	for i := maxFIFOThreads; i < n; i++ {
		open(uint64(i), i, unix.O_RDONLY)
	}
	inj.answered(t, n-maxFIFOThreads)
	for i := maxFIFOThreads; i < n; i++ {
		if _, ok := inj.installed[uint64(i)]; !ok {
			t.Errorf("reader %d: %v, want its descriptor", i, inj.answers[uint64(i)])
		}
	}
	// The readers on threads still wait: their writers never came.
	for i := 0; i < maxFIFOThreads; i++ {
		if _, ok := inj.installed[uint64(i)]; ok {
			t.Fatalf("reader %d answered without a writer", i)
		}
	}
}
