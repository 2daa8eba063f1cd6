package vfs

import (
	"math"
	"sync"

	"golang.org/x/sys/unix"
)

// RecordLocks holds the fcntl byte-range locks of one mount's files
// (fs/locks.c). A lock's owner is an opaque value: the process's
// descriptor table for classic POSIX locks (Linux's fl_owner =
// current->files), the open file description for OFD locks.
type RecordLocks struct {
	mu    sync.Mutex
	locks map[Inode][]RecordLock
}

// RecordLock is one locked range [Start, End) (End math.MaxInt64: to the
// end of the file, whatever it becomes).
type RecordLock struct {
	Owner      any
	PID        int32 // reported by F_GETLK; -1 for OFD locks
	Type       int16 // unix.F_RDLCK or unix.F_WRLCK
	Start, End int64
}

// NewRecordLocks returns an empty table.
func NewRecordLocks() *RecordLocks { return &RecordLocks{locks: map[Inode][]RecordLock{}} }

// ToEOF is the End of a lock that runs to the end of the file.
const ToEOF = math.MaxInt64

func overlaps(a, b *RecordLock) bool { return a.Start < b.End && b.Start < a.End }

// Conflict returns the first lock of another owner that conflicts with l
// (F_GETLK, and the test before F_SETLK takes l).
func (t *RecordLocks) Conflict(ino Inode, l *RecordLock) (RecordLock, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conflictLocked(ino, l)
}

func (t *RecordLocks) conflictLocked(ino Inode, l *RecordLock) (RecordLock, bool) {
	for _, o := range t.locks[ino] {
		if o.Owner != l.Owner && overlaps(&o, l) && (o.Type == unix.F_WRLCK || l.Type == unix.F_WRLCK) {
			return o, true
		}
	}
	return RecordLock{}, false
}

// Set applies l (F_RDLCK, F_WRLCK or F_UNLCK) for its owner, as
// posix_lock_inode: EAGAIN on a conflict; otherwise the owner's locks
// over the range are replaced (split where they extend past it) and
// adjacent or overlapping locks of the same type merge.
func (t *RecordLocks) Set(ino Inode, l RecordLock) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.Type != unix.F_UNLCK {
		if _, c := t.conflictLocked(ino, &l); c {
			return unix.EAGAIN
		}
	}
	var out []RecordLock
	for _, o := range t.locks[ino] {
		if o.Owner != l.Owner || !overlaps(&o, &l) && !(o.Type == l.Type && (o.End == l.Start || l.End == o.Start)) {
			out = append(out, o)
			continue
		}
		if o.Type == l.Type {
			// Merge into the new lock.
			l.Start, l.End = min(l.Start, o.Start), max(l.End, o.End)
			continue
		}
		// Keep the parts of o outside l.
		if o.Start < l.Start {
			left := o
			left.End = l.Start
			out = append(out, left)
		}
		if o.End > l.End {
			right := o
			right.Start = l.End
			out = append(out, right)
		}
	}
	if l.Type != unix.F_UNLCK {
		out = append(out, l)
	}
	if len(out) == 0 {
		delete(t.locks, ino)
	} else {
		t.locks[ino] = out
	}
	return nil
}

// ReleaseOwner drops every lock owner holds on ino (a close by the owning
// process: locks_remove_posix), or on every inode when ino is nil.
func (t *RecordLocks) ReleaseOwner(ino Inode, owner any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, ls := range t.locks {
		if ino != nil && i != ino {
			continue
		}
		out := ls[:0]
		for _, l := range ls {
			if l.Owner != owner {
				out = append(out, l)
			}
		}
		if len(out) == 0 {
			delete(t.locks, i)
		} else {
			t.locks[i] = out
		}
	}
}
