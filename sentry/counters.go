package sentry

import (
	"sync/atomic"
)

// Counter names that checks and users read (DESIGN.md fixes them).
const (
	CounterCloseSync        = "close.sync"
	CounterCloseDeferred    = "close.deferred"
	CounterTaskWorkRun      = "taskwork.run"
	CounterFstat            = "fstat"
	CounterFstatatShortcut  = "newfstatat.empty_path_shortcut"
	CounterFstatatLookup    = "newfstatat.lookup"
	CounterNotifyRewrite    = "unotify.rewrite_refused"
	CounterNotified         = "unotify.notified"
	CounterOrphanAdopted    = "task.orphan_adopted"
	CounterOrphanKilled     = "task.orphan_killed"
	counterSyscallPrefix    = "syscall."
	counterEmulatedSuffix   = ".emulated"
	counterPassthroughSuffx = ".passthrough"
)

// MaxSyscall bounds the syscall numbers the sentry knows (x86-64's table
// ends below it).
const MaxSyscall = 512

// Counters are the sentry's per-path and per-syscall event counts. They are
// atomics so that a concurrent platform can count without a lock.
type Counters struct {
	CloseSync       atomic.Uint64
	CloseDeferred   atomic.Uint64
	TaskWorkRun     atomic.Uint64
	Fstat           atomic.Uint64
	FstatatShortcut atomic.Uint64
	FstatatLookup   atomic.Uint64
	// NotifyRewrite counts notified calls whose handler wanted a register
	// rewrite (a sentry bug: they fail with ENOSYS).
	NotifyRewrite atomic.Uint64
	// Notified counts calls served by notification (the unotify
	// platform) rather than at a ptrace stop.
	Notified atomic.Uint64
	// OrphanAdopted counts new processes whose creator died in the clone
	// that made them, served as its forked children; OrphanKilled those
	// the platform killed instead, their creator's state gone
	// (platform.Supervisor.Orphaned).
	OrphanAdopted atomic.Uint64
	OrphanKilled  atomic.Uint64

	emulated    [MaxSyscall]atomic.Uint64
	passthrough [MaxSyscall]atomic.Uint64
}

// Snapshot returns every counter by name. Per-syscall counters of trapped
// calls appear even when zero, so a reader can tell "trapped, never called"
// from "not trapped".
func (c *Counters) Snapshot(table *SyscallTable) map[string]uint64 {
	m := map[string]uint64{
		CounterCloseSync:       c.CloseSync.Load(),
		CounterCloseDeferred:   c.CloseDeferred.Load(),
		CounterTaskWorkRun:     c.TaskWorkRun.Load(),
		CounterFstat:           c.Fstat.Load(),
		CounterFstatatShortcut: c.FstatatShortcut.Load(),
		CounterFstatatLookup:   c.FstatatLookup.Load(),
	}
	if n := c.NotifyRewrite.Load(); n > 0 {
		m[CounterNotifyRewrite] = n
	}
	if n := c.Notified.Load(); n > 0 {
		m[CounterNotified] = n
	}
	if n := c.OrphanAdopted.Load(); n > 0 {
		m[CounterOrphanAdopted] = n
	}
	if n := c.OrphanKilled.Load(); n > 0 {
		m[CounterOrphanKilled] = n
	}
	for nr := range table {
		s := &table[nr]
		if s.Fn == nil {
			continue
		}
		m[counterSyscallPrefix+s.Name+counterEmulatedSuffix] = c.emulated[nr].Load()
		m[counterSyscallPrefix+s.Name+counterPassthroughSuffx] = c.passthrough[nr].Load()
	}
	return m
}
