// Package sentry is the sentry's kernel model: the Kernel that serves a
// guest's trapped system calls, its Tasks and ThreadGroups, descriptor
// tables, file system contexts and counters. It implements
// platform.Supervisor; handlers live in package syscalls.
package sentry

import (
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry/vfs"
)

// ClosePath selects how close(2) releases a file.
type ClosePath uint8

const (
	// CloseSync releases the last reference inside close, as Linux since
	// the __fput_sync patch.
	CloseSync ClosePath = iota
	// CloseDeferred queues the release as task work run on the return to
	// the guest, as the stock fput does.
	CloseDeferred
)

// Options configure a Kernel.
type Options struct {
	ClosePath ClosePath
	// FstatatShortcut answers newfstatat(fd, "", buf, AT_EMPTY_PATH) as
	// fstat(fd) without copying or walking the path (Linux's vfs_fstatat
	// shortcut).
	FstatatShortcut bool
	// Strace, if set, logs every trapped call.
	Strace *zap.Logger
	// Cwd and Umask are the first guest process's.
	Cwd   string
	Umask uint32
	// Mounts are the sentry's file systems.
	Mounts []*vfs.Mount
	// Scratch is an unmounted file system for files the sentry makes for
	// the guest (the /proc files it serves).
	Scratch *vfs.Mount
	// Creds are the guest's file system credentials.
	Creds vfs.Credentials
	// Notifying says the platform reports the table's notify set by
	// notification (the unotify platform) rather than stopping for it.
	Notifying bool
	// FaultSysno and FaultErrno, when FaultErrno is set, make every call
	// of FaultSysno that the sentry serves itself fail with FaultErrno: a
	// deliberate sandbox bug, for testing divergence reports.
	FaultSysno uintptr
	FaultErrno unix.Errno
}

// Kernel is the whole sentry state of one sandbox: no state lives outside
// it.
type Kernel struct {
	Counters Counters
	Opts     Options
	VFS      *vfs.VirtualFilesystem

	table *SyscallTable
	// inj is the platform's Injector (SetInjector), nil until the
	// platform has taken the filter's listener.
	inj atomic.Pointer[platform.Injector]

	// blocked are the calls waiting off the serving threads for another
	// guest process (Task.OpenBlocking).
	blocked blockedOps

	mu    sync.Mutex
	tasks map[int32]*Task
	// ntasks is len(tasks), readable without mu.
	ntasks atomic.Int32

	// specials is the registry of host FIFOs, device nodes and socket
	// names (host_specials.go).
	specials hostSpecials

	// ids is the identity the serving threads act with (ActAs).
	ids identities
}

// NewKernel returns a kernel serving table.
func NewKernel(opts Options, table *SyscallTable) *Kernel {
	k := &Kernel{
		Opts:  opts,
		VFS:   vfs.New(opts.Mounts),
		table: table,
		tasks: map[int32]*Task{},
	}
	k.ids.init()
	return k
}

// Table returns the syscall table.
func (k *Kernel) Table() *SyscallTable { return k.table }

// Task returns the task with tid, or nil.
func (k *Kernel) Task(tid int32) *Task {
	k.mu.Lock()
	t := k.tasks[tid]
	k.mu.Unlock()
	return t
}

// FDTableOf is the descriptor table of guest thread or process tid, nil
// if the sentry has no such task; for /proc/PID/fd of another guest
// process. It does not take that task's lock (its own call may hold it).
func (k *Kernel) FDTableOf(tid int32) *FDTable {
	t := k.Task(tid)
	if t == nil {
		return nil
	}
	return t.fdtOf.Load()
}

// Threads implements platform.NotifySupervisor.Threads.
func (k *Kernel) Threads() int { return int(k.ntasks.Load()) }

// SetInjector implements platform.NotifySupervisor.SetInjector.
// It is given from the goroutine that took the listener, while the tracer
// already serves stops: hence the atomic.
func (k *Kernel) SetInjector(inj platform.Injector) { k.inj.Store(&inj) }

// injector is the platform's Injector, nil before SetInjector.
func (k *Kernel) injector() platform.Injector {
	if p := k.inj.Load(); p != nil {
		return *p
	}
	return nil
}

// callingTask is tid's task, locked, for a call of the table; nil when
// the call is the host's: sysno is not in the table, or the sentry never
// saw the thread created (impossible unless the platform lost an event).
// Another platform thread may have served this thread's previous call;
// the lock orders the two for the race detector as the guest's own order
// does for the kernel.
func (k *Kernel) callingTask(tid int32, sysno uintptr) *Task {
	t := k.Task(tid)
	if t == nil || sysno >= MaxSyscall || k.table[sysno].Fn == nil {
		return nil
	}
	t.mu.Lock()
	return t
}

// SyscallNotify implements platform.NotifySupervisor.SyscallNotify: a call
// of the table's notify set (Syscall.Notify), whose handler finishes it
// without changing registers. A path the sentry resolved back to the host
// cannot be handed to the host's call (no register can point at it), so
// the table entry's Host serves such calls on the host itself.
func (k *Kernel) SyscallNotify(tid int32, sysno uintptr, args *platform.SyscallArgs, id uint64, ip uintptr) platform.Result {
	if sysno == platform.SysInstallFD {
		return k.completeInstall(tid, id)
	}
	t := k.callingTask(tid, sysno)
	if t == nil {
		return k.unknownNotified(tid, id)
	}
	defer t.mu.Unlock()
	if err := k.ThreadUsable(); err != nil {
		// This serving thread could not take the sentry's identity
		// back: it serves nothing with another one.
		return platform.Result{Action: platform.Done, Ret: -int64(err.(unix.Errno))}
	}
	if t.rewriting {
		// The call a stopped call was rewritten into (the seccomp filter
		// runs again on it): it is the sentry's own, for the host.
		return platform.Result{}
	}
	if exit := t.reissueExit; exit != nil && sysno == t.reissueSysno {
		// A reissued call (ReissueObserved) served by notification
		// cannot both run and be seen: it is answered with what its
		// ExitFn makes of it. (The sentry reissues only calls that
		// stop on every platform.)
		t.reissueExit = nil
		return platform.Result{Action: platform.Done, Ret: exit(t, 0)}
	}
	t.reissueExit = nil
	k.Counters.Notified.Add(1)
	t.notifID = id
	t.notify = true
	defer func() { t.notify = false }()
	t.sysno = sysno
	t.exit = nil
	t.sp, t.stackUsed, t.nredirect = 0, 0, 0
	res := k.table[sysno].Fn(t, args)
	if t.nredirect > 0 && res.Action == platform.Passthrough {
		if host := k.table[sysno].Host; host != nil {
			res = host(t, args, t.hostPath)
		} else {
			res = Result{Result: platform.Result{Action: platform.Rewrite}}
		}
	}
	if res.Action == platform.Rewrite {
		// A handler of the notify set asked for what only a stop can
		// do: a sentry bug, reported as such rather than run wrongly.
		k.Counters.NotifyRewrite.Add(1)
		res = Err(unix.ENOSYS)
	}
	k.account(sysno, &res)
	// The host runs a passed-through call now, and may be interrupted
	// doing so: a signal stop that finds this very call interrupted must
	// leave that to the host (Interrupted). Any other call of the task
	// makes that record stale.
	t.continued = continuedCall{sysno: sysno, args: *args, ip: ip, valid: res.Action == platform.Passthrough}
	if len(t.deferred) > 0 {
		t.runTaskWork()
	}
	if k.Opts.Strace != nil {
		ret := res.Ret
		if res.Action == platform.Passthrough {
			// The host's result is not seen on this platform.
			ret = retUnknown
		}
		k.trace(t, sysno, k.decodeArgs(t, sysno, args), ret, res.Served)
	}
	return res.Result
}

// unknownNotified answers a notified call of a thread the sentry never saw
// created (one that escaped tracing, CLONE_UNTRACED say): its calls would
// reach the host unseen, so it never gets a pass. It is killed, and its
// call fails with ENOSYS, as SECCOMP_RET_TRACE fails a call nobody traces.
// The kill goes through a pidfd taken while the call still waits
// (Injector.Valid), so that the id cannot name another process by then.
func (k *Kernel) unknownNotified(tid int32, id uint64) platform.Result {
	pidfd, err := unix.PidfdOpen(int(tid), unix.PIDFD_THREAD)
	if err == unix.EINVAL {
		// Before Linux 6.9 (no PIDFD_THREAD): a process's leader.
		pidfd, err = unix.PidfdOpen(int(tid), 0)
	}
	if err == nil {
		if inj := k.injector(); inj == nil || inj.Valid(id) {
			unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		}
		unix.Close(pidfd)
	}
	return platform.Result{Action: platform.Done, Ret: -int64(unix.ENOSYS)}
}

// Syscall implements platform.Supervisor.Syscall: dispatch through the
// table, count, run task work before the task goes back to the guest.
func (k *Kernel) Syscall(tid int32, sysno uintptr, args *platform.SyscallArgs, sp uintptr) platform.Result {
	t := k.callingTask(tid, sysno)
	if t == nil {
		return platform.Result{}
	}
	defer t.mu.Unlock()
	t.continued.valid = false
	t.sysno = sysno
	t.exit = nil
	t.sp, t.stackUsed, t.nredirect = sp, 0, 0
	if t.reissueExit != nil && sysno == t.reissueSysno {
		// The call ReissueObserved asked for: the host runs it, its
		// exit goes to the ExitFn given (FailAfterClose's close: the
		// host closes the placeholder, the guest sees the error).
		t.exit, t.reissueExit = t.reissueExit, nil
		t.rewriting = true
		return platform.Result{Action: platform.Rewrite, Sysno: sysno, Args: *args}
	}
	t.reissueExit = nil
	res := k.table[sysno].Fn(t, args)
	if t.nredirect > 0 && res.Action == platform.Passthrough {
		// The host must see the paths the sentry resolved, not the
		// guest's (they led through a sentry mount back to the host).
		res.Action = platform.Rewrite
		res.Sysno = sysno
		res.Args = *args
		for _, r := range t.redirect[:t.nredirect] {
			for i := range res.Args {
				if res.Args[i] == r[0] {
					res.Args[i] = r[1]
					break
				}
			}
		}
		if t.exit == nil {
			t.exit = identityExit
		}
	}
	if k.Opts.Strace != nil && res.Action == platform.Passthrough {
		// Tracing needs the host's result: observe the call's exit.
		res.Action = platform.Rewrite
		res.Sysno = sysno
		res.Args = *args
		if t.exit == nil {
			t.exit = identityExit
		}
	}
	k.account(sysno, &res)
	if res.Action == platform.Install {
		// Completed when the install call is notified
		// (completeInstall), which traces it.
		if k.Opts.Strace != nil {
			t.installs[len(t.installs)-1].traceArgs = k.decodeArgs(t, sysno, args)
		}
		return res.Result
	}
	if res.Action == platform.Rewrite {
		if k.Opts.Strace != nil {
			t.traceArgs = k.decodeArgs(t, sysno, args)
			t.traceServed = res.Served
		}
		t.rewriting = true
		return res.Result
	}
	if len(t.deferred) > 0 {
		t.runTaskWork()
	}
	if k.Opts.Strace != nil {
		k.trace(t, sysno, k.decodeArgs(t, sysno, args), res.Ret, res.Served)
	}
	return res.Result
}

// completeInstall serves the install call (platform.SysInstallFD) that a
// stopped call was turned into (Task.InstallFile): the newest pending
// install of the task is carried out, at the lowest free number, and its
// number (or the install's error, after the handler's undo) is the
// result of the guest's own call. A guest that issues the call itself
// gets ENOSYS, as from a kernel without such a call.
func (k *Kernel) completeInstall(tid int32, id uint64) platform.Result {
	enosys := platform.Result{Action: platform.Done, Ret: -int64(unix.ENOSYS)}
	t := k.Task(tid)
	if t == nil {
		return enosys
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.installs)
	if n == 0 {
		return enosys
	}
	in := t.installs[n-1]
	t.installs[n-1] = pendingInstall{}
	t.installs = t.installs[:n-1]
	t.continued.valid = false
	t.notifID = id
	t.notify = true
	res := t.installNow(in.file, in.cloexec, in.undo)
	t.notify = false
	in.file.DecRef()
	if k.Opts.Strace != nil && !in.inRewrite {
		k.trace(t, in.sysno, in.traceArgs, res.Ret, true)
	}
	return res.Result
}

// Interrupted implements platform.Supervisor.Interrupted.
func (k *Kernel) Interrupted(tid int32, sysno uintptr, args *platform.SyscallArgs, ip uintptr) bool {
	if sysno == platform.SysInstallFD {
		// Never run by the host: only the sentry completes it.
		return true
	}
	if !k.Opts.Notifying || sysno >= MaxSyscall || !k.table[sysno].Notify {
		// A stopped call the sentry let the host run: the host's
		// interruption is the guest's to see.
		return false
	}
	switch sysno {
	case unix.SYS_OPEN, unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_CREAT:
		// The one family the sentry passes through that blocks on the
		// host interruptibly: an open of a host FIFO or device.
	default:
		// The others cannot come back from the host with ERESTARTSYS
		// (close turns it into EINTR itself; the stat family, access,
		// readlink, getdents64 and fstatfs do not sleep
		// interruptibly on local file systems).
		return true
	}
	t := k.Task(tid)
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.continued
	// The sentry let the host run this very call (same number, arguments
	// and place, and no other call of the task since): the host was
	// interrupted, as it would be natively.
	return !(c.valid && c.sysno == sysno && c.args == *args && c.ip == ip)
}

// account applies --inject-fault to a call the sentry answered itself and
// counts the call on the path it took.
func (k *Kernel) account(sysno uintptr, res *Result) {
	if k.Opts.FaultErrno != 0 && sysno == k.Opts.FaultSysno && res.Served && res.Action == platform.Done {
		res.Ret = -int64(k.Opts.FaultErrno)
	}
	if res.Served {
		k.Counters.emulated[sysno].Add(1)
	} else {
		k.Counters.passthrough[sysno].Add(1)
	}
}

func identityExit(_ *Task, ret int64) int64 { return ret }

func failExit(t *Task, _ int64) int64 {
	ret := t.failWith
	t.failWith = 0
	return ret
}

// SyscallExit implements platform.Supervisor.SyscallExit.
func (k *Kernel) SyscallExit(tid int32, ret int64) int64 {
	t := k.Task(tid)
	if t == nil {
		return ret
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rewriting = false
	if t.exit != nil {
		exit := t.exit
		t.exit = nil
		ret = exit(t, ret)
	}
	if len(t.deferred) > 0 {
		t.runTaskWork()
	}
	if k.Opts.Strace != nil {
		k.trace(t, t.sysno, t.traceArgs, ret, t.traceServed)
	}
	return ret
}

// Reissue implements platform.Supervisor.Reissue.
func (k *Kernel) Reissue(tid int32) (uintptr, *platform.SyscallArgs, bool) {
	t := k.Task(tid)
	if t == nil {
		return 0, nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.reissue {
		return 0, nil, false
	}
	t.reissue = false
	return t.reissueSysno, &t.reissueArgs, true
}

// NewTask implements platform.Supervisor.NewTask, sharing or copying the
// parent's descriptor table and fs context as the clone flags the parent
// passed say (copy_files, copy_fs).
func (k *Kernel) NewTask(parentTID, childTID int32, kind int) {
	child := &Task{k: k, TID: childTID}
	parent := k.Task(parentTID)
	if parent == nil {
		c := k.Opts.Creds
		child.creds = &c
		// The first process.
		child.TG = &ThreadGroup{TGID: childTID, tasks: map[int32]*Task{}}
		child.setFDTable(newFDTable())
		// Held open (vfs.HostDir): a path relative to it is checked
		// where the kernel's cwd is, whatever is renamed later.
		cwd := vfs.HostLocation(k.Opts.Cwd)
		if w, err := k.VFS.WalkPath(&c, cwd, k.Opts.Cwd, true); err == nil && !w.IsHost() && w.Dentry != nil {
			// Started at a mount point: in the sentry's tmpfs.
			cwd = w.Location
		}
		child.fs = &FSContext{users: 1, cwd: cwd, umask: k.Opts.Umask & 0777}
	} else {
		parent.mu.Lock()
		flags := parent.cloneFlags
		before := parent.cloneFDs
		parent.cloneFlags, parent.cloneFDs = 0, nil
		// Credentials are copied (copy_creds); they are immutable once
		// made, so sharing the pointer until a set*id replaces it is a
		// copy.
		child.creds = parent.creds
		switch kind {
		case platform.NewTaskFork:
			flags &^= unix.CLONE_THREAD | unix.CLONE_FILES | unix.CLONE_FS
		case platform.NewTaskVfork:
			flags &^= unix.CLONE_THREAD
		}
		if flags&unix.CLONE_NEWUSER != 0 {
			// The child is in a new user namespace: every capability
			// there, none in the sentry's.
			child.RefreshCreds()
		}
		if flags&unix.CLONE_THREAD != 0 {
			child.TG = parent.TG
		} else {
			child.TG = &ThreadGroup{TGID: childTID, tasks: map[int32]*Task{}}
		}
		if flags&unix.CLONE_FILES != 0 {
			parent.fdt.IncUsers()
			child.setFDTable(parent.fdt)
		} else {
			// The kernel copied the host table at some moment since
			// the clone's entry: the child has what it holds.
			child.setFDTable(parent.fdt.ForkVerified(before, func(fd int32, f *vfs.FileDescription) bool {
				return sameFile(childTID, fd, f)
			}))
		}
		if before != nil {
			before.Release()
		}
		if flags&unix.CLONE_FS != 0 {
			parent.fs.mu.Lock()
			parent.fs.users++
			parent.fs.mu.Unlock()
			child.fs = parent.fs
		} else {
			child.fs = parent.fs.fork()
		}
		parent.mu.Unlock()
	}
	k.mu.Lock()
	child.TG.tasks[childTID] = child
	k.tasks[childTID] = child
	k.ntasks.Store(int32(len(k.tasks)))
	k.mu.Unlock()
}

// sameFile reports whether thread tid's descriptor fd is f's placeholder:
// the very open file the sentry holds as f.HostFD (kcmp KCMP_FILE). If
// that cannot be told (no host descriptor, kcmp refused), it is assumed.
func sameFile(tid, fd int32, f *vfs.FileDescription) bool {
	if f.HostFD < 0 {
		return true
	}
	r, _, e := unix.RawSyscall6(unix.SYS_KCMP, uintptr(unix.Getpid()), uintptr(tid), kcmpFile, uintptr(f.HostFD), uintptr(fd), 0)
	if e != 0 {
		return e != unix.EBADF
	}
	return r == 0
}

// kcmpFile is KCMP_FILE (linux/kcmp.h).
const kcmpFile = 0

// Exec implements platform.Supervisor.Exec: the other threads are gone, the
// table is unshared and its close-on-exec entries closed (Linux's
// begin_new_exec: unshare_files, do_close_on_exec).
func (k *Kernel) Exec(tid, formerTID int32) {
	k.mu.Lock()
	t := k.tasks[formerTID]
	if t == nil {
		k.mu.Unlock()
		return
	}
	var gone []*Task
	for otid, o := range t.TG.tasks {
		if o != t {
			gone = append(gone, o)
			k.unlinkTaskLocked(o)
		}
		delete(t.TG.tasks, otid)
	}
	delete(k.tasks, formerTID)
	t.TG.tasks[tid] = t
	k.tasks[tid] = t
	k.ntasks.Store(int32(len(k.tasks)))
	k.mu.Unlock()
	for _, o := range gone {
		o.release()
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	t.TID = tid
	if t.fdt.Shared() {
		n := t.fdt.Fork()
		t.fdt.DecUsers()
		t.setFDTable(n)
	}
	for _, f := range t.fdt.RemoveIf(func(_ int32, cloexec bool) bool { return cloexec }) {
		f.DecRef()
	}
	// Exec recomputes the capabilities (and a set-id binary the ids).
	t.RefreshCreds()
}

// Exit implements platform.Supervisor.Exit.
func (k *Kernel) Exit(tid int32) {
	k.blocked.cancel(tid, false)
	k.mu.Lock()
	t := k.tasks[tid]
	if t != nil {
		k.unlinkTaskLocked(t)
	}
	k.mu.Unlock()
	if t != nil {
		t.release()
	}
}

// unlinkTaskLocked drops t from the kernel's maps. k.mu is held.
func (k *Kernel) unlinkTaskLocked(t *Task) {
	if k.tasks[t.TID] == t {
		delete(k.tasks, t.TID)
	}
	if t.TG.tasks[t.TID] == t {
		delete(t.TG.tasks, t.TID)
	}
	k.ntasks.Store(int32(len(k.tasks)))
}

// release drops t's uses of shared state (exit_files, exit_fs) once it is
// gone. k.mu must not be held: a serving thread may still hold t.mu and
// want it.
func (t *Task) release() {
	t.mu.Lock()
	t.dropInstalls(0)
	if t.cloneFDs != nil {
		t.cloneFDs.Release()
		t.cloneFDs = nil
	}
	t.runTaskWork()
	t.fdt.DecUsers()
	t.mu.Unlock()
}

// Shutdown releases every task's files once the guest is gone.
func (k *Kernel) Shutdown() {
	k.blocked.cancel(0, true)
	k.specials.release()
	k.mu.Lock()
	var gone []*Task
	for _, t := range k.tasks {
		gone = append(gone, t)
		k.unlinkTaskLocked(t)
	}
	k.mu.Unlock()
	for _, t := range gone {
		t.release()
	}
}
