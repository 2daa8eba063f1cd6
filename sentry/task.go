package sentry

import (
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry/vfs"
)

// ThreadGroup is a guest process: the threads that share a tgid.
type ThreadGroup struct {
	TGID int32
	// tasks are the live threads, guarded by Kernel.mu.
	tasks map[int32]*Task
}

// FSContext is a task's file system context (Linux's fs_struct): working
// directory and umask, shared by tasks cloned with CLONE_FS.
type FSContext struct {
	mu    sync.Mutex
	users int32
	// cwd is the working directory: a host directory (cwd.Host, the
	// kernel's own cwd, even when a sentry mount now hides its path) or a
	// directory of the sentry's (the kernel's cwd then stays where it was).
	cwd   vfs.Location
	umask uint32
}

// Cwd returns the working directory.
func (f *FSContext) Cwd() vfs.Location {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cwd
}

// SetCwd changes the working directory.
func (f *FSContext) SetCwd(l vfs.Location) {
	f.mu.Lock()
	f.cwd = l
	f.mu.Unlock()
}

// Umask returns the umask.
func (f *FSContext) Umask() uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.umask
}

// SetUmask sets the umask (umask(2)) and returns the old one.
func (f *FSContext) SetUmask(m uint32) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.umask
	f.umask = m & 0777
	return old
}

func (f *FSContext) fork() *FSContext {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &FSContext{users: 1, cwd: f.cwd, umask: f.umask}
}

// Task is one guest thread as the sentry sees it.
type Task struct {
	k   *Kernel
	TID int32
	TG  *ThreadGroup

	// mu is held while one of the task's calls is served: on a platform
	// with several serving threads, consecutive calls of one guest thread
	// may be served by different ones.
	mu sync.Mutex
	// notify is set while a notified call is served (no registers, no
	// stack writes); notifID names it for the platform's Injector.
	notify   bool
	notifID  uint64
	hostPath string
	// rewriting is set from a rewrite to its syscall-exit stop: a
	// notification of the task meanwhile is for the rewritten call.
	rewriting bool
	// continued is the last notified call the sentry let the host run
	// (Kernel.Interrupted).
	continued continuedCall
	// installs are descriptors the sentry gives the guest once the call
	// a stop turned into the install call is notified (InstallFile): a
	// stack, since a signal handler's own opens may run between a call
	// and its restarted install call.
	installs []pendingInstall

	fdt *FDTable
	fs  *FSContext
	// fdtOf is fdt, readable by other tasks' calls without mu.
	fdtOf atomic.Pointer[FDTable]

	// exit completes a rewritten call at its syscall-exit stop.
	exit ExitFn
	// creds are the task's file system credentials (Linux's cred:
	// fsuid, fsgid, groups, effective capabilities), copied at clone,
	// refreshed after set*id, capset and exec.
	creds *vfs.Credentials
	// sysno is the call being served, for --strace and counters.
	sysno uintptr
	// reissue asks the platform to issue reissueSysno with reissueArgs
	// right after the current call's exit (SetReissue).
	reissue      bool
	reissueSysno uintptr
	reissueArgs  platform.SyscallArgs
	// sp is the guest's stack pointer at the current call; stackUsed is
	// how much below its red zone the sentry has written.
	sp, stackUsed uintptr
	// redirect are path arguments (guest address -> replacement address)
	// for the host to use if the call passes through.
	redirect  [2][2]uintptr
	nredirect int
	// failWith is what the guest's call returns once the close
	// FailAfterClose reissued has run.
	failWith int64
	// reissueExit, when set, is the ExitFn of the reissued call
	// ReissueObserved asked for (reissueSysno), which stops to be seen.
	reissueExit ExitFn
	// nul is the empty string WriteStackString copies out.
	nul [1]byte
	// cloneFlags are the flags of the clone this task is in, recorded at
	// the call's entry for the clone event that follows; cloneFDs is the
	// descriptor table then.
	cloneFlags uint64
	cloneFDs   FDSnapshot
	// deferred are descriptions whose release was queued as task work by
	// close in deferred mode (Linux's fput -> task_work_add); they are
	// released when the task returns to the guest.
	deferred []*vfs.FileDescription

	// traceArgs and traceServed hold a rewritten call's decoded
	// arguments until its exit, for --strace.
	traceArgs   string
	traceServed bool

	// pathBuf is reused for guest path strings, ioBuf for data.
	pathBuf []byte
	ioBuf   []byte
	// stat and statx are reused result buffers: filled through the Inode
	// interface, a local one would escape to the heap on every call.
	stat  unix.Stat_t
	statx unix.Statx_t
	// scratch holds per-call state between a rewrite and its exit.
	scratch Scratch
}

// continuedCall identifies a notified call the host was let run.
type continuedCall struct {
	sysno uintptr
	args  platform.SyscallArgs
	ip    uintptr
	valid bool
}

// pendingInstall is a descriptor InstallFile promised the guest's call.
type pendingInstall struct {
	file    *vfs.FileDescription
	cloexec bool
	undo    func()
	// sysno and traceArgs are the guest's call, for --strace; a call
	// that went on to a rewrite's exit (InstallFileThen) is traced there.
	sysno     uintptr
	traceArgs string
	inRewrite bool
}

// maxPendingInstalls bounds the installs a task may have waiting: each
// holds a file, and a signal handler that never returns to its
// interrupted call leaves its install waiting forever.
const maxPendingInstalls = 8

// dropInstalls cancels all but the newest keep pending installs.
func (t *Task) dropInstalls(keep int) {
	for len(t.installs) > keep {
		in := t.installs[0]
		if in.undo != nil {
			in.undo()
		}
		in.file.DecRef()
		t.installs = append(t.installs[:0], t.installs[1:]...)
	}
}

// InstallFile gives the guest a descriptor for f: a copy of f.HostFD, the
// file's placeholder, at the lowest free number, with FD_CLOEXEC if
// cloexec; f is installed in the task's FDTable at that number, and that
// number is the result of the guest's call. On a notified call this
// happens now (the platform's ADDFD); a stopped call becomes the install
// call (platform.Install) and it happens when that call is notified. If
// no number is free (EMFILE), undo runs and the call fails. The caller
// keeps its own reference on f.
func (t *Task) InstallFile(f *vfs.FileDescription, cloexec bool, undo func()) Result {
	if t.notify {
		return t.installNow(f, cloexec, undo)
	}
	if t.k.injector() == nil {
		if undo != nil {
			undo()
		}
		return Err(unix.ENOSYS)
	}
	f.IncRef()
	t.installs = append(t.installs, pendingInstall{file: f, cloexec: cloexec, undo: undo, sysno: t.sysno})
	t.dropInstalls(maxPendingInstalls)
	return Result{Result: platform.Result{Action: platform.Install}, Served: true}
}

// InstallFileThen is InstallFile for a stopped call whose handler goes on
// at the call's exit: the call becomes the install call with an exit stop
// (a Rewrite), and exit sees the installed number (or the install's
// error), free to reissue further calls (exec: execveat of the number).
func (t *Task) InstallFileThen(f *vfs.FileDescription, cloexec bool, undo func(), exit ExitFn) Result {
	if t.notify || t.k.injector() == nil {
		if undo != nil {
			undo()
		}
		return Err(unix.ENOSYS)
	}
	f.IncRef()
	t.installs = append(t.installs, pendingInstall{file: f, cloexec: cloexec, undo: undo, sysno: t.sysno, inRewrite: true})
	t.dropInstalls(maxPendingInstalls)
	return RewriteTo(t, platform.SysInstallFD, platform.SyscallArgs{}, exit)
}

// installNow is InstallFile on a notified call.
func (t *Task) installNow(f *vfs.FileDescription, cloexec bool, undo func()) Result {
	fd, old, err := t.fdt.InstallWith(func() (int32, error) {
		return t.k.injector().InstallFD(t.notifID, f.HostFD, cloexec)
	}, f, cloexec)
	if old != nil {
		old.DecRef()
	}
	if err != nil {
		if undo != nil {
			undo()
		}
		return ErrOf(err)
	}
	return Result{Result: platform.Result{Action: platform.Responded, Ret: int64(fd)}, Served: true}
}

// Scratch is a handler's state carried from a call's entry to its exit.
type Scratch struct {
	FD    int32
	FD2   int32
	Flags uint32
	Mode  uint32
	Name  string
	File  *vfs.FileDescription
	Aux   uint64
	Mount *vfs.Mount
	Dir   vfs.Dentry
	Found vfs.Dentry
	Args  platform.SyscallArgs
	// Shadow is a shadow made for a file an open is creating;
	// Placeholder is the shadow the open's placeholder opens.
	Shadow      string
	Placeholder string
}

// Kernel returns the task's kernel.
func (t *Task) Kernel() *Kernel { return t.k }

// setFDTable replaces the task's descriptor table.
func (t *Task) setFDTable(f *FDTable) {
	t.fdt = f
	t.fdtOf.Store(f)
}

// FDTable returns the task's descriptor table.
func (t *Task) FDTable() *FDTable { return t.fdt }

// FSContext returns the task's cwd and umask.
func (t *Task) FSContext() *FSContext { return t.fs }

// QueueRelease queues the release of f as task work (deferred close).
func (t *Task) QueueRelease(f *vfs.FileDescription) {
	t.deferred = append(t.deferred, f)
}

// runTaskWork releases what close deferred, as Linux's task_work_run on
// return to user mode.
func (t *Task) runTaskWork() {
	for i, f := range t.deferred {
		f.DecRef()
		t.deferred[i] = nil
		t.k.Counters.TaskWorkRun.Add(1)
	}
	t.deferred = t.deferred[:0]
}

// SetCloneFlags records the flags of the clone the task is entering and,
// when the child may get a copy of the descriptor table, the table as it
// is now (Kernel.NewTask).
func (t *Task) SetCloneFlags(f uint64) {
	t.cloneFlags = f
	if t.cloneFDs != nil {
		t.cloneFDs.Release()
		t.cloneFDs = nil
	}
	if f&unix.CLONE_FILES == 0 || f&unix.CLONE_VFORK != 0 {
		t.cloneFDs = t.fdt.Snapshot()
	}
}

// ReadPath copies a path argument from the guest (getname): EFAULT,
// ENAMETOOLONG past PATH_MAX. The bytes are valid until the next call.
func (t *Task) ReadPath(addr uintptr) ([]byte, error) {
	if t.pathBuf == nil {
		t.pathBuf = make([]byte, 0, 256)
	}
	p, err := platform.ReadString(t.TID, addr, unix.PathMax-1, t.pathBuf)
	if p != nil && cap(p) > cap(t.pathBuf) {
		t.pathBuf = p[:0]
	}
	if err == nil && !t.CallValid() {
		// The thread left the call (or died, and its id may name
		// another process now): what was read is not its path. The
		// answer is never delivered.
		return nil, unix.EINTR
	}
	return p, err
}

// Creds are the credentials the task acts with on the sentry's files.
func (t *Task) Creds() *vfs.Credentials { return t.creds }

// RefreshCreds re-reads the task's credentials from the kernel
// (/proc/TID/status and its user namespace) after a call that may have
// changed them (set*id, capset, exec): the kernel applied its own rules,
// including that a setfsuid away from 0 drops the file system
// capabilities (cap_task_fix_setuid), and the sentry takes the outcome.
// If they cannot be read (the thread is gone), the old ones stay.
func (t *Task) RefreshCreds() {
	if c, err := readCreds("/proc/" + strconv.Itoa(int(t.TID))); err == nil {
		t.creds = c
	}
}

// CopyOut writes src to the guest at addr: EFAULT unless all of it fits.
func (t *Task) CopyOut(addr uintptr, src []byte) error {
	return platform.WriteMemory(t.TID, addr, src)
}

// CopyIn reads len(dst) bytes of the guest at addr.
func (t *Task) CopyIn(addr uintptr, dst []byte) error {
	return platform.ReadMemory(t.TID, addr, dst)
}

// Scratch is the handler state carried from a call's entry to its exit.
func (t *Task) Scratch() *Scratch { return &t.scratch }

// UnshareFDTable gives the task a private copy of a shared table
// (unshare(CLONE_FILES), close_range's CLOSE_RANGE_UNSHARE).
func (t *Task) UnshareFDTable() {
	if !t.fdt.Shared() {
		return
	}
	n := t.fdt.Fork()
	t.fdt.DecUsers()
	t.setFDTable(n)
}

// UnshareFSContext gives the task a private copy of its fs context
// (unshare(CLONE_FS), and CLONE_NEWUSER, which implies it): Linux's
// unshare_fs copies a shared fs_struct; a copy of an unshared one is the
// same thing.
func (t *Task) UnshareFSContext() {
	old := t.fs
	t.fs = old.fork()
	old.mu.Lock()
	old.users--
	old.mu.Unlock()
}

// ioBufSize bounds the buffer one read or write copies through at a time.
const ioBufSize = 128 << 10

// IOBuf returns the task's I/O buffer, at most n bytes long.
func (t *Task) IOBuf(n int) []byte {
	if n > ioBufSize {
		n = ioBufSize
	}
	if cap(t.ioBuf) < n {
		c := 4096
		for c < n {
			c *= 2
		}
		t.ioBuf = make([]byte, c)
	}
	return t.ioBuf[:n]
}

// StatBuf returns the task's reusable stat buffer, zeroed.
func (t *Task) StatBuf() *unix.Stat_t {
	t.stat = unix.Stat_t{}
	return &t.stat
}

// StatxBuf returns the task's reusable statx buffer, zeroed.
func (t *Task) StatxBuf() *unix.Statx_t {
	t.statx = unix.Statx_t{}
	return &t.statx
}

// SetReissue makes the guest issue sysno with args as soon as the current
// (rewritten) call returns, instead of returning from it.
func (t *Task) SetReissue(sysno uintptr, args platform.SyscallArgs) {
	t.reissue = true
	t.reissueSysno = sysno
	t.reissueArgs = args
}

// ReissueObserved makes the guest issue sysno with args as soon as the
// current (rewritten) call returns, as SetReissue, and exit then sees that
// call's result: what exit returns is what the guest's own call returns.
// sysno must be in the table; if the platform serves it by notification,
// it does not run and exit's result (given 0) answers it.
func (t *Task) ReissueObserved(sysno uintptr, args platform.SyscallArgs, exit ExitFn) {
	t.SetReissue(sysno, args)
	t.reissueExit = exit
}

// redZone is the x86-64 ABI's red zone below the stack pointer, which a
// leaf function may use without moving the stack pointer.
const redZone = 128

// WriteStackString writes s and a NUL below the guest's stack pointer (past
// the red zone) and returns its address. The guest is stopped in a system
// call, so nothing of its own lives there.
func (t *Task) WriteStackString(s string) (uintptr, error) {
	if t.notify {
		// No register can point at it: RedirectHost records the path
		// for the table's Host instead.
		return 0, unix.EFAULT
	}
	if t.sp == 0 {
		return 0, unix.EFAULT
	}
	addr := (t.sp - redZone - t.stackUsed - uintptr(len(s)) - 1) &^ 15
	var b []byte
	if s == "" {
		b = t.nul[:]
	} else {
		b = make([]byte, len(s)+1)
		copy(b, s)
	}
	if err := t.CopyOut(addr, b); err != nil {
		return 0, err
	}
	t.stackUsed = t.sp - redZone - addr
	return addr, nil
}

// Notified reports whether the current call is served by notification:
// it cannot be rewritten, and a descriptor it creates is installed with
// InstallFD.
func (t *Task) Notified() bool { return t.notify }

// RedirectHost records that a passed-through notified call must act on
// host path p instead of the guest's path: the table entry's Host serves
// it on the host for the guest.
func (t *Task) RedirectHost(p string) {
	t.hostPath = p
	t.nredirect = 1
}

// InstallFD installs a copy of the sentry's descriptor fd in the guest's
// table at the lowest free number and completes the notified call with
// that number (everything else must be done first). The sentry's fd stays
// the caller's to close.
func (t *Task) InstallFD(fd int, cloexec bool) (int32, error) {
	if t.k.injector() == nil || !t.notify {
		return -1, unix.ENOSYS
	}
	return t.k.injector().InstallFD(t.notifID, fd, cloexec)
}

// OpenBlocking answers a notified call with the host descriptor open
// returns, where open may block until another guest process acts (a
// FIFO's other end): it runs on a goroutine of its own, without the
// task's lock and off the platform's serving threads, so that a guest
// waiting in a FIFO's open holds up nothing else, however many do. The
// call is answered when open returns; if the task or the sandbox goes
// first, cancel must make open return (it opens the FIFO's other end).
// Only for notified calls.
func (t *Task) OpenBlocking(open func() (int, error), cancel func(), cloexec bool) Result {
	if !t.notify || t.k.injector() == nil {
		return Err(unix.ENOSYS)
	}
	op := &blockedOp{cancel: cancel}
	// The number it was added under: the goroutine must not read t.TID,
	// which an exec changes under t.mu (a data race on main).
	tid := t.TID
	t.k.blocked.add(tid, op)
	id, inj := t.notifID, t.k.injector()
	go func() {
		fd, err := open()
		op.done.Store(true)
		t.k.blocked.remove(tid, op)
		switch {
		case err != nil:
			inj.Respond(id, -int64(errnoOf(err)))
		case op.cancelled.Load():
			// The guest is gone; the descriptor was only the way out.
			unix.Close(fd)
		default:
			if _, ierr := inj.InstallFD(id, fd, cloexec); ierr != nil {
				// Gone meanwhile.
				inj.Respond(id, -int64(errnoOf(ierr)))
			}
			unix.Close(fd)
		}
	}()
	return Result{Result: platform.Result{Action: platform.Responded}, Served: true}
}

// errnoOf is err as an errno (EIO for anything else).
func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}

// Blocking tells a concurrent platform that the handler is about to wait
// for something the guest may do, so that other calls are served
// meanwhile.
func (t *Task) Blocking() {
	if t.notify && t.k.injector() != nil {
		t.k.injector().Blocking()
	}
}

// CallValid reports whether the notified call is still waiting: a guest
// thread that died or was interrupted meanwhile is not answered with what
// the sentry read of memory that may no longer be its own. Always true on
// a stopping platform (the thread cannot leave its stop).
func (t *Task) CallValid() bool {
	if !t.notify || t.k.injector() == nil {
		return true
	}
	return t.k.injector().Valid(t.notifID)
}

// RedirectPath makes a passed-through call use the string at newAddr
// where the guest passed oldAddr.
func (t *Task) RedirectPath(oldAddr, newAddr uintptr) {
	if t.nredirect < len(t.redirect) {
		t.redirect[t.nredirect] = [2]uintptr{oldAddr, newAddr}
		t.nredirect++
	}
}

// FailAfterClose makes the guest's call fail with errno after closing its
// descriptor fd, which the call made and the sentry installed (exec of a
// sentry file: the installed descriptor of its backing, when the execveat
// of it failed): fd leaves the task's table, and the guest closes it by a
// reissued close_range(fd, fd, 0), which stops on every platform (close
// itself may be notified, and a notified call cannot both run and be
// seen). Call it from an ExitFn, and return ret.
func (t *Task) FailAfterClose(fd int32, errno unix.Errno) {
	if f := t.fdt.Remove(fd); f != nil {
		f.DecRef()
	}
	t.failWith = -int64(errno)
	t.ReissueObserved(unix.SYS_CLOSE_RANGE, platform.SyscallArgs{uintptr(fd), uintptr(fd), 0}, failExit)
}

// StackBuffer reserves n bytes below the guest's stack pointer (past the
// red zone and what this call already wrote there) and, if data is not
// nil, copies it there. It returns the address. Only memory the guest's
// stack mapping already covers can be used: the kernel does not grow a
// stack for another process's writes.
func (t *Task) StackBuffer(n int, data []byte) (uintptr, error) {
	if t.sp == 0 {
		return 0, unix.EFAULT
	}
	addr := (t.sp - redZone - t.stackUsed - uintptr(n)) &^ 15
	if data != nil {
		if err := t.CopyOut(addr, data); err != nil {
			return 0, err
		}
	} else {
		// Probe that the range is mapped and writable.
		var probe [1]byte
		if t.CopyIn(addr, probe[:]) != nil || t.CopyOut(addr, probe[:]) != nil {
			return 0, unix.EFAULT
		}
	}
	t.stackUsed = t.sp - redZone - addr
	return addr, nil
}

// Sysno is the number of the call the task is in.
func (t *Task) Sysno() uintptr { return t.sysno }

// SetCreds replaces the task's credentials (as commit_creds).
func (t *Task) SetCreds(c vfs.Credentials) { t.creds = &c }
