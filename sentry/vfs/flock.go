package vfs

import (
	"sync"

	"golang.org/x/sys/unix"
)

// FlockTable holds the flock(2) locks of one mount's files: per inode, an
// exclusive holder or a set of shared holders, each an open file
// description (Linux's flock locks belong to the struct file, so dup'd and
// inherited descriptors share them, and the last close releases them).
type FlockTable struct {
	mu    sync.Mutex
	locks map[Inode]*flockState
}

type flockState struct {
	exclusive *FileDescription
	shared    map[*FileDescription]struct{}
}

// NewFlockTable returns an empty table.
func NewFlockTable() *FlockTable { return &FlockTable{locks: map[Inode]*flockState{}} }

// Flock applies op (LOCK_SH, LOCK_EX or LOCK_UN, without LOCK_NB) for fd
// as flock_lock_inode does: a conversion drops the old lock first. It
// returns EWOULDBLOCK when another description holds a conflicting lock;
// the caller decides whether to wait.
func (t *FlockTable) Flock(fd *FileDescription, op int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.locks[fd.Inode]
	if st == nil {
		st = &flockState{shared: map[*FileDescription]struct{}{}}
		t.locks[fd.Inode] = st
	}
	// Drop what fd holds; a request for the lock it already has is kept.
	switch {
	case op == unix.LOCK_EX && st.exclusive == fd:
		return nil
	case op == unix.LOCK_SH:
		if _, ok := st.shared[fd]; ok {
			return nil
		}
	}
	if st.exclusive == fd {
		st.exclusive = nil
	}
	delete(st.shared, fd)
	defer t.gcLocked(fd.Inode, st)
	switch op {
	case unix.LOCK_UN:
		return nil
	case unix.LOCK_SH:
		if st.exclusive != nil {
			return unix.EWOULDBLOCK
		}
		st.shared[fd] = struct{}{}
	case unix.LOCK_EX:
		if st.exclusive != nil || len(st.shared) > 0 {
			return unix.EWOULDBLOCK
		}
		st.exclusive = fd
	}
	return nil
}

// Release drops every lock fd holds (its last close: locks_remove_file).
func (t *FlockTable) Release(fd *FileDescription) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.locks[fd.Inode]
	if st == nil {
		return
	}
	if st.exclusive == fd {
		st.exclusive = nil
	}
	delete(st.shared, fd)
	t.gcLocked(fd.Inode, st)
}

func (t *FlockTable) gcLocked(ino Inode, st *flockState) {
	if st.exclusive == nil && len(st.shared) == 0 {
		delete(t.locks, ino)
	}
}
