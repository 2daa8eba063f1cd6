package sentry

import (
	"sync"
	"sync/atomic"

	"sentry/sentry/vfs"
)

// FDTable maps the guest's descriptor numbers that refer to sentry files
// (virtual fds) to their descriptions: Linux's files_struct, restricted to
// the numbers the sentry serves. The numbers themselves are the host
// kernel's (each virtual fd is held by a placeholder in the guest's real
// table), so allocation, RLIMIT_NOFILE and inheritance are the kernel's; the
// FDTable follows every change the kernel makes. It is shared by tasks
// cloned with CLONE_FILES.
type FDTable struct {
	users atomic.Int32

	mu      sync.Mutex
	entries map[int32]fdEntry
	// closing are the numbers whose close the sentry has let the kernel
	// run, in a table other threads share, and what each held then
	// (Call.CloseFD); dupTargets counts the stopped dup2s and dup3s
	// onto each number between their entry and their exit.
	closing    map[int32]closeMark
	dupTargets map[int32]int
	// windows are the copies of the table the kernel may be making
	// (OpenCopyWindow): each keeps what leaves the table meanwhile.
	windows []*CopyWindow
}

type fdEntry struct {
	file    *vfs.FileDescription
	cloexec bool
}

func newFDTable() *FDTable {
	t := &FDTable{entries: map[int32]fdEntry{}}
	t.users.Store(1)
	return t
}

// Get returns the description at fd with a new reference, or nil if fd is
// not a virtual fd.
func (t *FDTable) Get(fd int32) *vfs.FileDescription {
	t.mu.Lock()
	e, ok := t.entries[fd]
	if ok {
		e.file.IncRef()
	}
	t.mu.Unlock()
	if !ok {
		return nil
	}
	return e.file
}

// Has reports whether fd is a virtual fd.
func (t *FDTable) Has(fd int32) bool {
	t.mu.Lock()
	_, ok := t.entries[fd]
	t.mu.Unlock()
	return ok
}

// Len is the number of virtual fds.
func (t *FDTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// Install puts file at fd, taking a reference; it returns the description
// that fd held before (the caller releases it), as dup2 replaces.
func (t *FDTable) Install(fd int32, file *vfs.FileDescription, cloexec bool) *vfs.FileDescription {
	file.IncRef()
	t.mu.Lock()
	old, had := t.entries[fd]
	t.entries[fd] = fdEntry{file: file, cloexec: cloexec}
	if had {
		t.leftLocked(fd, old)
	}
	t.mu.Unlock()
	if had {
		return old.file
	}
	return nil
}

// InstallWith puts file at the number alloc returns, taking a reference,
// with the table locked throughout: alloc gives the guest the number (a
// notifying platform's ADDFD, which may resume the guest at once), and no
// other guest thread's call can look the number up before the entry
// exists. It returns the number and the description the number held
// before (the caller releases it). A nil file leaves the number without
// an entry (a host file now). If alloc fails nothing changes.
func (t *FDTable) InstallWith(alloc func() (int32, error), file *vfs.FileDescription, cloexec bool) (int32, *vfs.FileDescription, error) {
	t.mu.Lock()
	fd, err := alloc()
	if err != nil {
		t.mu.Unlock()
		return -1, nil, err
	}
	old := t.setLocked(fd, file, cloexec)
	t.mu.Unlock()
	return fd, old, nil
}

// setLocked puts file at fd, taking a reference (nil: fd leaves the
// table), and returns the description fd held before, whose reference the
// caller now owns. t.mu is held.
func (t *FDTable) setLocked(fd int32, file *vfs.FileDescription, cloexec bool) *vfs.FileDescription {
	old, had := t.entries[fd]
	if file != nil {
		file.IncRef()
		t.entries[fd] = fdEntry{file: file, cloexec: cloexec}
	} else {
		delete(t.entries, fd)
	}
	if had {
		t.leftLocked(fd, old)
		return old.file
	}
	return nil
}

// Remove drops fd and returns its description, whose table reference the
// caller now owns; nil if fd was not a virtual fd.
func (t *FDTable) Remove(fd int32) *vfs.FileDescription {
	t.mu.Lock()
	e, ok := t.entries[fd]
	if ok {
		delete(t.entries, fd)
		t.leftLocked(fd, e)
	}
	t.mu.Unlock()
	if !ok {
		return nil
	}
	return e.file
}

// CloseOnExec reports fd's FD_CLOEXEC flag and whether fd exists.
func (t *FDTable) CloseOnExec(fd int32) (cloexec, ok bool) {
	t.mu.Lock()
	e, ok := t.entries[fd]
	t.mu.Unlock()
	return e.cloexec, ok
}

// SetCloseOnExec sets fd's FD_CLOEXEC flag as the table knows it (what the
// opens and dups that made the entry asked for; F_SETFD and FIOCLEX are
// the placeholder's and not followed: exec's sweep asks the kernel,
// Kernel.Exec).
func (t *FDTable) SetCloseOnExec(fd int32, cloexec bool) {
	t.mu.Lock()
	if e, ok := t.entries[fd]; ok {
		e.cloexec = cloexec
		t.entries[fd] = e
	}
	t.mu.Unlock()
}

// RemoveIf removes every entry for which pred holds and returns their
// descriptions (close_range, the last user's exit).
func (t *FDTable) RemoveIf(pred func(fd int32, cloexec bool) bool) []*vfs.FileDescription {
	return t.RemoveIfFile(func(fd int32, _ *vfs.FileDescription, cloexec bool) bool { return pred(fd, cloexec) })
}

// RemoveIfFile is RemoveIf with the entry's description (exec's sweep).
func (t *FDTable) RemoveIfFile(pred func(fd int32, f *vfs.FileDescription, cloexec bool) bool) []*vfs.FileDescription {
	var out []*vfs.FileDescription
	t.mu.Lock()
	for fd, e := range t.entries {
		if pred(fd, e.file, e.cloexec) {
			out = append(out, e.file)
			delete(t.entries, fd)
			t.leftLocked(fd, e)
		}
	}
	t.mu.Unlock()
	return out
}

// SetCloseOnExecIf marks entries for which pred holds (close_range with
// CLOSE_RANGE_CLOEXEC).
func (t *FDTable) SetCloseOnExecIf(pred func(fd int32) bool) {
	t.mu.Lock()
	for fd, e := range t.entries {
		if pred(fd) {
			e.cloexec = true
			t.entries[fd] = e
		}
	}
	t.mu.Unlock()
}

// Fork returns a copy for a child made without CLONE_FILES (dup_fd): every
// description gains a reference.
func (t *FDTable) Fork() *FDTable {
	n := newFDTable()
	t.mu.Lock()
	for fd, e := range t.entries {
		e.file.IncRef()
		n.entries[fd] = e
	}
	t.mu.Unlock()
	return n
}

// CopyWindow is what a copy of the table the kernel makes at some moment
// of a call may hold (a fork's dup_fd, unshare_fd, exec's unshare_files):
// the entries at the call's entry and every one that left the table since,
// each with a reference. Other threads open and close meanwhile; a file
// opened after the entry and closed before the call's exit was in neither
// the table at the entry nor the table at the exit, and the copy had it:
// the task kept a placeholder of the store the sentry did not know (a
// child of clone(CLONE_FILES) that exec'd while its parent opened and
// closed: 1,452 in 200 execs on unotify).
type CopyWindow struct {
	t      *FDTable
	before map[int32]fdEntry
	gone   []goneEntry
}

type goneEntry struct {
	fd int32
	e  fdEntry
}

// maxGone bounds what a window keeps of what left the table: a call that
// stays inside the kernel for long (an exec reading a slow file system)
// while others open and close must not grow it without end; past it, what
// leaves is not kept, and a copy may miss it.
const maxGone = 1 << 16

// OpenCopyWindow starts a window on the table; Close ends it. Only a
// recording window keeps what leaves the table meanwhile: in a table no
// other task uses, nothing can leave it while its only user is in the
// call.
func (t *FDTable) OpenCopyWindow(recording bool) *CopyWindow {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := &CopyWindow{t: t, before: make(map[int32]fdEntry, len(t.entries))}
	for fd, e := range t.entries {
		e.file.IncRef()
		w.before[fd] = e
	}
	if recording {
		t.windows = append(t.windows, w)
	}
	return w
}

// leftLocked keeps entry e, which just left number fd, in the open
// windows. t.mu is held.
func (t *FDTable) leftLocked(fd int32, e fdEntry) {
	for _, w := range t.windows {
		if len(w.gone) < maxGone {
			e.file.IncRef()
			w.gone = append(w.gone, goneEntry{fd, e})
		}
	}
}

// Close ends the window and drops its references. A nil window is none.
func (w *CopyWindow) Close() {
	if w == nil {
		return
	}
	t := w.t
	t.mu.Lock()
	for i, o := range t.windows {
		if o == w {
			t.windows = append(t.windows[:i], t.windows[i+1:]...)
			break
		}
	}
	t.mu.Unlock()
	for _, e := range w.before {
		e.file.DecRef()
	}
	for _, g := range w.gone {
		g.e.file.DecRef()
	}
	w.before, w.gone = nil, nil
}

// ForkVerified returns a copy for a task whose host table the kernel
// copied at some moment of window w's call (nil: none): dup_fd ran while
// other threads may have opened and closed files. Each entry of the table
// now, at the window's start or gone since is the copy's only if the
// task's descriptor at that number is that description's placeholder
// (has(fd, f), which compares the open files themselves: kcmp).
func (t *FDTable) ForkVerified(w *CopyWindow, has func(fd int32, f *vfs.FileDescription) bool) *FDTable {
	n := newFDTable()
	consider := func(fd int32, e fdEntry) {
		if _, ok := n.entries[fd]; ok || !has(fd, e.file) {
			return
		}
		e.file.IncRef()
		n.entries[fd] = e
	}
	t.mu.Lock()
	for fd, e := range t.entries {
		consider(fd, e)
	}
	var before map[int32]fdEntry
	var gone []goneEntry
	if w != nil {
		before, gone = w.before, w.gone
	}
	t.mu.Unlock()
	for fd, e := range before {
		consider(fd, e)
	}
	for i := len(gone) - 1; i >= 0; i-- {
		consider(gone[i].fd, gone[i].e)
	}
	return n
}

// Find returns a description of the table that match accepts, with a
// reference, or nil.
func (t *FDTable) Find(match func(*vfs.FileDescription) bool) *vfs.FileDescription {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.entries {
		if match(e.file) {
			e.file.IncRef()
			return e.file
		}
	}
	return nil
}

// IncUsers shares the table with one more task (CLONE_FILES).
func (t *FDTable) IncUsers() { t.users.Add(1) }

// DecUsers drops a task's use; the last user's going closes every entry
// (Linux's put_files_struct at exit), releasing synchronously.
func (t *FDTable) DecUsers() {
	if t.users.Add(-1) > 0 {
		return
	}
	for _, f := range t.RemoveIf(func(int32, bool) bool { return true }) {
		f.DecRef()
	}
}

// Shared reports whether more than one task uses the table.
func (t *FDTable) Shared() bool { return t.users.Load() > 1 }
