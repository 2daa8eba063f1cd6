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
	// Mounter makes the tmpfs mounts the guest asks for (mount(2)); nil
	// refuses them.
	Mounter vfs.Mounter
	// MountMax is fs.mount-max: the most mounts the guest's namespace
	// holds, its own and the host's it sees.
	MountMax int
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
	// guest process (Call.OpenFIFO).
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

	// passed are the descriptions in flight with SCM_RIGHTS
	// (scm_rights.go).
	passed passedFiles
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
