package sentry

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry/vfs"
)

// Call numbers of the fake table (any number below MaxSyscall works).
const (
	nrRedirect = 1 + iota
	nrPlain
	nrObserve
	nrReissuer
	nrReissued
	nrInstall
	nrInstallThen
	nrFail
	nrQueue
	nrNotifiedRewrite
	nrReadPath
	nrReadPathRestartable
)

// recordExit is a Continuation that records what it saw and gives the
// guest v+ret.
type recordExit struct {
	v    int64
	seen *[]int64
}

func (r recordExit) Exit(c *Call, ret int64) int64 {
	*r.seen = append(*r.seen, r.v, int64(c.Sysno), ret)
	return r.v + ret
}

// reissueExit reissues nrReissued, whose own exit then returns 100+ret.
type reissueExit struct{}

func (reissueExit) Exit(c *Call, ret int64) int64 {
	c.Reissue(nrReissued, platform.SyscallArgs{7, 8}, offset(100))
	return ret
}

type offset int64

func (o offset) Exit(_ *Call, ret int64) int64 { return int64(o) + ret }

// fakeInjector records installs; the next install gets number next, or
// fails with err.
type fakeInjector struct {
	// gone makes Valid report every call gone; valids counts Valid.
	gone     bool
	valids   int
	next     int32
	err      error
	installs []fakeInstall
	answers  map[uint64]int64
}

type fakeInstall struct {
	id      uint64
	cloexec bool
}

func (f *fakeInjector) InstallFD(id uint64, fd int, cloexec bool) (int32, error) {
	if f.err != nil {
		return -1, f.err
	}
	f.installs = append(f.installs, fakeInstall{id, cloexec})
	n := f.next
	f.next++
	return n, nil
}
func (f *fakeInjector) InstallFDAt(id uint64, fd int, at int32, cloexec bool) error {
	if f.err != nil {
		return f.err
	}
	f.installs = append(f.installs, fakeInstall{id, cloexec})
	return nil
}
func (f *fakeInjector) Blocking()         {}
func (f *fakeInjector) Valid(uint64) bool { f.valids++; return !f.gone }
func (f *fakeInjector) Respond(id uint64, ret int64) {
	if f.answers == nil {
		f.answers = map[uint64]int64{}
	}
	f.answers[id] = ret
}

// dispatchEnv is a kernel over a fake table with one task.
type dispatchEnv struct {
	*fdEnv
	k     *Kernel
	tid   int32
	inj   *fakeInjector
	calls []uintptr
	seen  []int64
	// file is what the install handlers install; undone counts their
	// undos.
	file   *vfs.FileDescription
	undone int
	queued int
}

func newDispatchEnv(t *testing.T, opts Options) *dispatchEnv {
	e := &dispatchEnv{fdEnv: newFDEnv(t), tid: 1000, inj: &fakeInjector{next: 3}}
	var tb SyscallTable
	add := func(nr uintptr, notify bool, fn SyscallFn) {
		tb[nr] = Syscall{Name: "fake", Notify: notify, Fn: func(c *Call, args *platform.SyscallArgs) Result {
			e.calls = append(e.calls, c.Sysno)
			return fn(c, args)
		}}
	}
	add(nrRedirect, false, func(c *Call, args *platform.SyscallArgs) Result {
		c.RedirectPath(args[1], 0x5000)
		return Pass()
	})
	add(nrPlain, true, func(c *Call, args *platform.SyscallArgs) Result { return Pass() })
	add(nrObserve, false, func(c *Call, args *platform.SyscallArgs) Result {
		return Observe(c, c.Sysno, args, recordExit{v: int64(args[0]), seen: &e.seen}, true)
	})
	add(nrReissuer, false, func(c *Call, args *platform.SyscallArgs) Result {
		return Observe(c, c.Sysno, args, reissueExit{}, true)
	})
	add(nrReissued, true, func(c *Call, args *platform.SyscallArgs) Result { return Ret(55) })
	add(nrInstall, true, func(c *Call, args *platform.SyscallArgs) Result {
		return c.InstallFile(e.file, args[0] != 0, func() { e.undone++ })
	})
	add(nrInstallThen, false, func(c *Call, args *platform.SyscallArgs) Result {
		return c.InstallFileThen(e.file, false, nil, recordExit{v: 1000, seen: &e.seen})
	})
	add(nrFail, true, func(c *Call, args *platform.SyscallArgs) Result { return Err(unix.ENOENT) })
	add(nrQueue, false, func(c *Call, args *platform.SyscallArgs) Result {
		e.queued++
		f := e.open("queued" + strconv.Itoa(e.queued))
		c.QueueRelease(f)
		if args[0] != 0 {
			return Observe(c, c.Sysno, args, Identity{}, true)
		}
		return Ret(0)
	})
	add(nrNotifiedRewrite, true, func(c *Call, args *platform.SyscallArgs) Result {
		return Observe(c, c.Sysno, args, Identity{}, true)
	})
	readPath := func(c *Call, args *platform.SyscallArgs) Result {
		p, err := c.ReadPath(args[0])
		if err != nil {
			return ErrOf(err)
		}
		return Ret(int64(len(p)))
	}
	add(nrReadPath, true, readPath)
	add(nrReadPathRestartable, true, readPath)
	tb[nrReadPathRestartable].Restartable = true
	if opts.Cwd == "" {
		opts.Cwd = "/"
	}
	e.k = NewKernel(opts, &tb)
	e.k.NewTask(0, e.tid, platform.NewTaskFork)
	e.k.SetInjector(e.inj)
	e.file = e.open("installed")
	t.Cleanup(func() { e.file.DecRef() })
	t.Cleanup(e.k.Shutdown)
	return e
}

func (e *dispatchEnv) stop(nr uintptr, args ...uintptr) platform.Result {
	var a platform.SyscallArgs
	copy(a[:], args)
	return e.k.Syscall(e.tid, nr, &a, 0)
}

func (e *dispatchEnv) notify(nr uintptr, id uint64, args ...uintptr) platform.Result {
	var a platform.SyscallArgs
	copy(a[:], args)
	return e.k.SyscallNotify(e.tid, nr, &a, id, 0)
}

// TestCallStateDoesNotLeak: what one call records (path redirects, its
// continuation, how it arrived) is gone at the next call's entry, on
// either entry point.
func TestCallStateDoesNotLeak(t *testing.T) {
	e := newDispatchEnv(t, Options{})
	res := e.stop(nrRedirect, 1, 0x1000, 3)
	want := platform.Result{Action: platform.Rewrite, Sysno: nrRedirect, Args: platform.SyscallArgs{1, 0x5000, 3}}
	if res != want {
		t.Fatalf("redirected call: %+v, want %+v", res, want)
	}
	if got := e.k.SyscallExit(e.tid, 9); got != 9 {
		t.Errorf("redirected call's exit: %d, want the host's 9", got)
	}
	for _, step := range []struct {
		name string
		run  func() platform.Result
	}{
		{"stopped", func() platform.Result { return e.stop(nrPlain, 0x1000) }},
		{"notified", func() platform.Result { return e.notify(nrPlain, 1, 0x1000) }},
	} {
		if res := step.run(); res != (platform.Result{}) {
			t.Errorf("%s call after a redirect: %+v, want a plain pass", step.name, res)
		}
	}
	// A notified call's record does not make the next stopped call's
	// stack writes fail, nor the reverse.
	e.notify(nrPlain, 2)
	e.stop(nrPlain)
	if c := &e.k.Task(e.tid).call; c.notified || c.then != nil || c.nredirect != 0 {
		t.Errorf("stopped call after a notified one: %+v", c)
	}
}

// TestContinuationsAreTheirCalls: each task's rewritten call keeps its own
// continuation, whatever the order of the exits.
func TestContinuationsAreTheirCalls(t *testing.T) {
	e := newDispatchEnv(t, Options{})
	const other = 1001
	e.k.NewTask(e.tid, other, platform.NewTaskClone)
	a := platform.SyscallArgs{10}
	b := platform.SyscallArgs{20}
	if r := e.k.Syscall(e.tid, nrObserve, &a, 0); r.Action != platform.Rewrite {
		t.Fatalf("observe: %+v", r)
	}
	if r := e.k.Syscall(other, nrObserve, &b, 0); r.Action != platform.Rewrite {
		t.Fatalf("observe: %+v", r)
	}
	if got := e.k.SyscallExit(other, 2); got != 22 {
		t.Errorf("second task's exit: %d, want 22", got)
	}
	if got := e.k.SyscallExit(e.tid, 1); got != 11 {
		t.Errorf("first task's exit: %d, want 11", got)
	}
	// An exit stop without a rewrite in flight changes nothing.
	if got := e.k.SyscallExit(e.tid, 5); got != 5 {
		t.Errorf("stray exit: %d, want 5", got)
	}
	if len(e.seen) != 6 {
		t.Errorf("continuations ran %d times, want 2 (%v)", len(e.seen)/3, e.seen)
	}
}

// TestRewrittenCallIsTheSentrys: between a rewrite and its exit, the
// task's notified call is the rewritten one, the sentry's own: it passes
// without a handler.
func TestRewrittenCallIsTheSentrys(t *testing.T) {
	e := newDispatchEnv(t, Options{})
	e.stop(nrObserve, 1)
	if res := e.notify(nrFail, 1); res != (platform.Result{}) {
		t.Errorf("notified call during a rewrite: %+v, want a pass", res)
	}
	e.k.SyscallExit(e.tid, 0)
	if res := e.notify(nrFail, 2); res.Ret != -int64(unix.ENOENT) {
		t.Errorf("notified call after the exit: %+v, want ENOENT", res)
	}
	if want := []uintptr{nrObserve, nrFail}; !equalCalls(e.calls, want) {
		t.Errorf("handlers ran for %v, want %v", e.calls, want)
	}
}

// TestReissue: a continuation's reissued call is handed to the platform
// once, runs on the host without its handler, and its result goes through
// the continuation given; a notified one is answered with it; any other
// call first cancels it.
func TestReissue(t *testing.T) {
	tests := []struct {
		name    string
		run     func(e *dispatchEnv) int64
		want    int64
		handled []uintptr
	}{
		{"stopped", func(e *dispatchEnv) int64 {
			if r := e.stop(nrReissued, 7, 8); r.Action != platform.Rewrite || r.Args != (platform.SyscallArgs{7, 8}) {
				t.Errorf("reissued call: %+v, want it observed as issued", r)
			}
			return e.k.SyscallExit(e.tid, 3)
		}, 103, []uintptr{nrReissuer}},
		{"notified", func(e *dispatchEnv) int64 {
			return e.notify(nrReissued, 9, 7, 8).Ret
		}, 100, []uintptr{nrReissuer}},
		{"another call first", func(e *dispatchEnv) int64 {
			e.stop(nrPlain)
			return e.notify(nrReissued, 9, 7, 8).Ret
		}, 55, []uintptr{nrReissuer, nrPlain, nrReissued}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newDispatchEnv(t, Options{Notifying: true})
			e.stop(nrReissuer)
			if got := e.k.SyscallExit(e.tid, 0); got != 0 {
				t.Fatalf("reissuer's exit: %d", got)
			}
			nr, args, ok := e.k.Reissue(e.tid)
			if !ok || nr != nrReissued || args != (platform.SyscallArgs{7, 8}) {
				t.Fatalf("Reissue: %d %v %v", nr, args, ok)
			}
			if _, _, ok := e.k.Reissue(e.tid); ok {
				t.Fatalf("Reissue handed the call out twice")
			}
			if got := tc.run(e); got != tc.want {
				t.Errorf("guest's result %d, want %d", got, tc.want)
			}
			if !equalCalls(e.calls, tc.handled) {
				t.Errorf("handlers ran for %v, want %v", e.calls, tc.handled)
			}
		})
	}
}

// TestInstall: a descriptor installed on a notified call is installed at
// once; a stopped call becomes the install call, whose notification
// installs it; a failed install undoes; an install call with nothing
// pending, as a guest could issue, is ENOSYS.
func TestInstall(t *testing.T) {
	t.Run("notified", func(t *testing.T) {
		e := newDispatchEnv(t, Options{})
		res := e.notify(nrInstall, 41, 1)
		if res.Action != platform.Responded || res.Ret != 3 {
			t.Fatalf("install: %+v", res)
		}
		if len(e.inj.installs) != 1 || e.inj.installs[0] != (fakeInstall{41, true}) {
			t.Errorf("injector saw %v", e.inj.installs)
		}
		if f := e.k.Task(e.tid).FDTable().Get(3); f != e.file {
			t.Errorf("fd 3 is %v, want the installed file", f)
		} else {
			f.DecRef()
		}
	})
	t.Run("stopped", func(t *testing.T) {
		e := newDispatchEnv(t, Options{})
		if res := e.stop(nrInstall, 0); res.Action != platform.Install {
			t.Fatalf("stopped install: %+v", res)
		}
		if len(e.inj.installs) != 0 {
			t.Fatalf("installed before the install call")
		}
		res := e.notify(platform.SysInstallFD, 42)
		if res.Action != platform.Responded || res.Ret != 3 || len(e.inj.installs) != 1 || e.inj.installs[0] != (fakeInstall{42, false}) {
			t.Fatalf("install call: %+v, injector %v", res, e.inj.installs)
		}
		if res := e.notify(platform.SysInstallFD, 43); res.Ret != -int64(unix.ENOSYS) {
			t.Errorf("second install call: %+v, want ENOSYS", res)
		}
	})
	t.Run("then", func(t *testing.T) {
		e := newDispatchEnv(t, Options{})
		res := e.stop(nrInstallThen)
		if res.Action != platform.Rewrite || res.Sysno != platform.SysInstallFD {
			t.Fatalf("install then: %+v", res)
		}
		// The install call's notification leaves the call in flight
		// waiting for its exit.
		if res := e.notify(platform.SysInstallFD, 44); res.Ret != 3 {
			t.Fatalf("install call: %+v", res)
		}
		if got := e.k.SyscallExit(e.tid, 3); got != 1003 {
			t.Errorf("exit: %d, want the continuation's 1003", got)
		}
	})
	t.Run("fails", func(t *testing.T) {
		e := newDispatchEnv(t, Options{})
		e.inj.err = unix.EMFILE
		if res := e.notify(nrInstall, 45, 0); res.Ret != -int64(unix.EMFILE) || e.undone != 1 {
			t.Errorf("failed install: %+v, undone %d", res, e.undone)
		}
		if e.k.Task(e.tid).FDTable().Len() != 0 {
			t.Errorf("a failed install left an entry")
		}
	})
	t.Run("guest's own", func(t *testing.T) {
		e := newDispatchEnv(t, Options{})
		if res := e.notify(platform.SysInstallFD, 46); res.Ret != -int64(unix.ENOSYS) {
			t.Errorf("install call with nothing pending: %+v, want ENOSYS", res)
		}
	})
}

// TestServeCore: what both entry points share: a notified handler's
// rewrite is refused and counted, --inject-fault changes only answers the
// sentry gave, and task work runs when the call completes, at the exit for
// a rewritten one.
func TestServeCore(t *testing.T) {
	t.Run("notified rewrite", func(t *testing.T) {
		e := newDispatchEnv(t, Options{})
		if res := e.notify(nrNotifiedRewrite, 1); res.Action != platform.Done || res.Ret != -int64(unix.ENOSYS) {
			t.Errorf("notified rewrite: %+v, want ENOSYS", res)
		}
		if n := e.k.Counters.NotifyRewrite.Load(); n != 1 {
			t.Errorf("NotifyRewrite = %d, want 1", n)
		}
	})
	t.Run("fault", func(t *testing.T) {
		e := newDispatchEnv(t, Options{FaultSysno: nrFail, FaultErrno: unix.EXDEV})
		for _, run := range []func() platform.Result{
			func() platform.Result { return e.stop(nrFail) },
			func() platform.Result { return e.notify(nrFail, 1) },
		} {
			if res := run(); res.Ret != -int64(unix.EXDEV) {
				t.Errorf("faulted call: %+v, want EXDEV", res)
			}
		}
		e.k.Opts.FaultSysno = nrPlain
		if res := e.stop(nrPlain); res != (platform.Result{}) {
			t.Errorf("a pass-through is the host's: %+v", res)
		}
	})
	t.Run("task work", func(t *testing.T) {
		e := newDispatchEnv(t, Options{})
		before := e.inodes()
		e.stop(nrQueue, 0)
		if n := e.k.Counters.TaskWorkRun.Load(); n != 1 {
			t.Errorf("task work after a done call: %d, want 1", n)
		}
		e.stop(nrQueue, 1)
		if n := e.k.Counters.TaskWorkRun.Load(); n != 1 {
			t.Errorf("task work ran before the rewritten call's exit")
		}
		e.k.SyscallExit(e.tid, 0)
		if n := e.k.Counters.TaskWorkRun.Load(); n != 2 {
			t.Errorf("task work after the exit: %d, want 2", n)
		}
		if e.inodes() != before+2 {
			// Released descriptions of linked files: the inodes stay.
			t.Errorf("inodes %d, want %d", e.inodes(), before+2)
		}
	})
	t.Run("counters", func(t *testing.T) {
		e := newDispatchEnv(t, Options{})
		e.stop(nrPlain)
		e.notify(nrFail, 1)
		if p, s := e.k.Counters.passthrough[nrPlain].Load(), e.k.Counters.emulated[nrFail].Load(); p != 1 || s != 1 {
			t.Errorf("passthrough %d, emulated %d, want 1 and 1", p, s)
		}
	})
}

func equalCalls(a, b []uintptr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReadPathChecksTheCallWaits: a notified call's path, read from the
// guest's memory, is checked to still be its call's (ID_VALID) before a
// handler acts on it: a thread that left the call (a signal, or death and
// its id reused) must not have it served, as it will make it again. A
// Restartable call skips the check: served for nobody, it changes
// nothing.
func TestReadPathChecksTheCallWaits(t *testing.T) {
	path := append([]byte("/tmp/some/path"), 0)
	addr := uintptr(unsafe.Pointer(&path[0]))
	self := int32(os.Getpid())
	for _, tc := range []struct {
		name   string
		nr     uintptr
		gone   bool
		want   int64
		valids int
	}{
		{"waiting", nrReadPath, false, int64(len(path) - 1), 1},
		{"gone", nrReadPath, true, -int64(unix.EINTR), 1},
		{"restartable, waiting", nrReadPathRestartable, false, int64(len(path) - 1), 0},
		{"restartable, gone", nrReadPathRestartable, true, int64(len(path) - 1), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newDispatchEnv(t, Options{Notifying: true})
			e.k.NewTask(0, self, platform.NewTaskFork)
			e.inj.gone = tc.gone
			var a platform.SyscallArgs
			a[0] = addr
			res := e.k.SyscallNotify(self, tc.nr, &a, 7, 0)
			runtime.KeepAlive(path)
			if res.Action != platform.Done || res.Ret != tc.want {
				t.Errorf("result %+v, want Done %d", res, tc.want)
			}
			if e.inj.valids != tc.valids {
				t.Errorf("ID_VALID asked %d times, want %d", e.inj.valids, tc.valids)
			}
		})
	}
}
