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

// Task is one guest thread as the sentry sees it: its identity and the
// state that outlives a call. What belongs to one call is in its Call.
type Task struct {
	k   *Kernel
	TID int32
	TG  *ThreadGroup

	// mu is held while one of the task's calls is served: on a platform
	// with several serving threads, consecutive calls of one guest thread
	// may be served by different ones.
	mu sync.Mutex
	// call is the call in flight (begin makes it anew at every entry).
	call Call
	// next is a call the thread is to issue once its current one returns
	// (Call.Reissue).
	next reissue
	// closing is the number whose close, in a shared table, the sentry
	// last let the kernel run for this thread (its mark in the table's
	// closing, which the thread's next call clears: the close has run),
	// or -1.
	closing int32
	// continued is the last notified call the sentry let the host run
	// (Kernel.Interrupted).
	continued continuedCall
	// installs are descriptors the sentry gives the guest once the call
	// a stop turned into the install call is notified (InstallFile): a
	// stack, since a signal handler's own opens may run between a call
	// and its restarted install call.
	installs []pendingInstall
	// forking is the clone the thread is in, from the call's entry to the
	// clone event that names the child (SetCloneFlags, Kernel.NewTask):
	// the clone may pass through without an exit stop, so this outlives
	// the call's Call.
	forking forkRecord
	// copying is the table at the entry of a call in which the kernel
	// may give the task its own copy of a shared table (BeginTableCopy),
	// until the call's exit (or exec's event) takes it, or the task's
	// next call that is not part of it drops it.
	copying *CopyWindow

	fdt *FDTable
	// fs is read by other tasks' calls (MountBusy).
	fs atomic.Pointer[FSContext]
	// fdtOf is fdt, readable by other tasks' calls without mu.
	fdtOf atomic.Pointer[FDTable]

	// creds are the task's file system credentials (Linux's cred:
	// fsuid, fsgid, groups, effective capabilities), copied at clone,
	// refreshed after set*id, capset and exec.
	creds *vfs.Credentials
	// deferred are descriptions whose release was queued as task work by
	// close in deferred mode (Linux's fput -> task_work_add); they are
	// released when the task returns to the guest.
	deferred []*vfs.FileDescription

	// bufs is memory the task's calls reuse so that a call allocates
	// nothing; nothing in it is read across calls.
	bufs callBuffers
}

// callBuffers are a task's reusable buffers.
type callBuffers struct {
	// path is for guest path strings (ReadPath), io for data (IOBuf).
	path []byte
	io   []byte
	// stat and statx are result buffers: filled through the Inode
	// interface, a local one would escape to the heap on every call.
	stat  unix.Stat_t
	statx unix.Statx_t
}

// forkRecord is the clone a thread is in.
type forkRecord struct {
	// flags are the clone's flags; fds is the window on the descriptor
	// table from the clone's entry, when the child may get a copy of it.
	flags uint64
	fds   *CopyWindow
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

// pushInstall queues in (taking a reference on its file) for the install
// call.
func (t *Task) pushInstall(in pendingInstall) {
	in.file.IncRef()
	t.installs = append(t.installs, in)
	t.dropInstalls(maxPendingInstalls)
}

// install installs f in the guest that made notified call id (InstallFile).
func (t *Task) install(id uint64, f *vfs.FileDescription, cloexec bool, undo func()) Result {
	inj := t.k.injector()
	fd, old, err := t.fdt.InstallWith(func() (int32, error) {
		return inj.InstallFD(id, f.HostFD, cloexec)
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

// release drops the record's snapshot.
func (r *forkRecord) release() {
	r.fds.Close()
	*r = forkRecord{}
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
func (t *Task) FSContext() *FSContext { return t.fs.Load() }

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
// when the child may get a copy of the descriptor table, opens a window on
// it (Kernel.NewTask).
func (t *Task) SetCloneFlags(f uint64) {
	t.forking.release()
	t.forking.flags = f
	if f&unix.CLONE_FILES == 0 || f&unix.CLONE_VFORK != 0 {
		shared := t.fdt.Shared()
		if shared {
			t.fdt.waitCloses(t.TID)
		}
		t.forking.fds = t.fdt.OpenCopyWindow(shared)
	}
}

// RecordingWindow reports whether the task's call opened a window that
// keeps what leaves a shared table (SetCloneFlags, BeginTableCopy): the
// call must then be seen at its exit, where a window its event did not
// take is closed (Kernel.SyscallExit). Left to the thread's next call, a
// clone that failed or an exec that failed, by a thread that then made
// no trapped call for as long as it liked (a sleep), kept every file the
// other threads closed open in the sentry: their locks held, and the
// sentry's descriptors used up (a red-team probe: EMFILE for every open
// of the sandbox after 20,000 closes).
func (t *Task) RecordingWindow() bool {
	return t.copying != nil || (t.forking.fds != nil && t.fdt.Shared())
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

// UnshareFDTable gives the task a private copy of a shared table
// (unshare(CLONE_FILES), close_range's CLOSE_RANGE_UNSHARE).
func (t *Task) UnshareFDTable() {
	before := t.takeTableCopy()
	defer before.Close()
	if !t.fdt.Shared() && before == nil {
		return
	}
	t.copyTable(t.TID, before)
}

// BeginTableCopy records the task's table, if shared, at the entry of a
// call in which the kernel may give the task a copy of it: unshare_fd
// (unshare(CLONE_FILES), close_range with CLOSE_RANGE_UNSHARE) and exec's
// unshare_files copy the table at some moment inside the call, while
// other threads (or processes sharing it) open and close; the table the
// sentry has at the call's exit is not that copy. Copied then, a task
// kept entries another thread had closed meanwhile and lost ones the
// kernel gave it: a placeholder of the store the table did not know
// (unshare: about 2,000 of 18,000 descriptors checked on unotify in a
// red-team probe, exec 1 in 100). The copy is made as a fork's is
// (copyTable).
func (t *Task) BeginTableCopy() {
	t.DropTableCopy()
	if t.fdt.Shared() {
		t.fdt.waitCloses(t.TID)
		t.copying = t.fdt.OpenCopyWindow(true)
	}
}

// endWindows closes, at a new call of the task (not a reissue, not an
// install call), the copy windows its last call left open: a clone that
// failed (no event consumed its record) or an exec of a host file that
// failed (no event took its window). Left open, a window keeps every
// description that leaves the table: their release, and what Linux does
// at a file's last close (locks, space, close events), waited for the
// thread's next clone or exec.
func (t *Task) endWindows() {
	if t.forking.fds != nil {
		t.forking.release()
	}
	t.DropTableCopy()
}

// DropTableCopy releases what BeginTableCopy recorded (the call failed,
// or never reached its exit).
func (t *Task) DropTableCopy() {
	t.takeTableCopy().Close()
}

func (t *Task) takeTableCopy() *CopyWindow {
	s := t.copying
	t.copying = nil
	return s
}

// copyTable gives the task a table of its own: the entries of its table
// now or of before (the table at the call's entry) whose placeholder
// thread tid, whose kernel table is its own now, holds at that number
// (ForkVerified, as a fork's child).
func (t *Task) copyTable(tid int32, before *CopyWindow) {
	n := t.fdt.ForkVerified(before, func(fd int32, f *vfs.FileDescription) bool {
		return sameFile(tid, fd, f)
	})
	t.fdt.DecUsers()
	t.setFDTable(n)
}

// UnshareFSContext gives the task a private copy of its fs context
// (unshare(CLONE_FS), and CLONE_NEWUSER, which implies it): Linux's
// unshare_fs copies a shared fs_struct; a copy of an unshared one is the
// same thing.
func (t *Task) UnshareFSContext() {
	old := t.fs.Load()
	t.fs.Store(old.fork())
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
	if cap(t.bufs.io) < n {
		c := 4096
		for c < n {
			c *= 2
		}
		t.bufs.io = make([]byte, c)
	}
	return t.bufs.io[:n]
}

// StatBuf returns the task's reusable stat buffer, zeroed.
func (t *Task) StatBuf() *unix.Stat_t {
	t.bufs.stat = unix.Stat_t{}
	return &t.bufs.stat
}

// StatxBuf returns the task's reusable statx buffer, zeroed.
func (t *Task) StatxBuf() *unix.Statx_t {
	t.bufs.statx = unix.Statx_t{}
	return &t.bufs.statx
}

// SetCreds replaces the task's credentials (as commit_creds).
func (t *Task) SetCreds(c vfs.Credentials) { t.creds = &c }
