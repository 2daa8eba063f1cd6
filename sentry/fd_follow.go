package sentry

import (
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry/vfs"
)

// Following a copy by what the kernel copied. A dup, an F_DUPFD or a
// pidfd_getfd copies whatever the source number holds when the kernel
// looks, and in a table shared by several threads (or a table of another
// process) that may not be what it held when the sentry looked: a racing
// thread's dup2 may have put a virtual fd's placeholder there, or a pipe
// over one. A table that followed the sentry's earlier look would then
// hold a number the kernel gave a pipe, or miss a placeholder the guest
// now holds behind the sentry's back (a descriptor of the store). So the
// table follows the copy by the open file itself: kcmp(KCMP_FILE) against
// the descriptions it may be, as the receipt of SCM_RIGHTS does
// (ReceivedFile), with the table locked from the look to the change, so
// that no other call's change of the same number comes between.
//
// The moment a file arrives at a number, for the sentry, is the moment
// the table follows it (a received or copied placeholder has no
// description at its number before). A copy of a placeholder that is none
// of the table's descriptions (its number had been closed or replaced by
// the time the copy is followed, and its description is gone) therefore
// comes from a number that held nothing: the call fails with EBADF, as
// Linux's dup after a racing close, and the copy is closed.

// placeLocked tells what thread tid's descriptor fd holds now: one of
// cands or of the table's descriptions (f, ok), a host file or nothing
// (nil, true), or a file of a sentry store that is none of them (nil,
// false), which the guest must not keep. t.mu is held.
func (t *FDTable) placeLocked(tid, fd int32, cands []*vfs.FileDescription, onStore func(int, string) bool) (*vfs.FileDescription, bool) {
	for _, f := range cands {
		if f != nil {
			if same, _ := placeholderAt(tid, fd, f); same {
				return f, true
			}
		}
	}
	if !onStore(unix.AT_FDCWD, procFD(tid, fd)) {
		// A host file, or closed since by another thread: nothing to
		// follow.
		return nil, true
	}
	for _, e := range t.entries {
		if same, _ := placeholderAt(tid, fd, e.file); same {
			return e.file, true
		}
	}
	return nil, false
}

// FollowCopy makes the table's entry at newfd what the guest's descriptor
// newfd holds now, which the kernel has just made a copy of another
// descriptor (the call's exit): the description at fromfd in the task's
// table, or one of cands, or any of the table's, told by kcmp; with
// FD_CLOEXEC if cloexec. It reports false if newfd holds a placeholder
// the sentry cannot place: the entry is dropped, and the caller must
// close newfd and fail the call (EBADF).
func (c *Call) FollowCopy(newfd, fromfd int32, cloexec bool, cands ...*vfs.FileDescription) bool {
	t := c.fdt
	t.mu.Lock()
	var hint [3]*vfs.FileDescription
	h := hint[:0]
	if e, ok := t.entries[fromfd]; ok && fromfd >= 0 {
		h = append(h, e.file)
	}
	h = append(h, cands...)
	f, ok := t.placeLocked(c.TID, newfd, h, c.k.VFS.OnStore)
	old := t.setLocked(newfd, f, cloexec)
	t.mu.Unlock()
	if old != nil {
		// What newfd held before the copy (dup2 closes it), or an
		// entry the kernel's table no longer has.
		old.DecRef()
	}
	return ok
}

// sameOpenFile reports whether the sentry's descriptors a and b are the
// same open file (kcmp KCMP_FILE).
func sameOpenFile(a, b int) bool {
	pid := uintptr(unix.Getpid())
	r, _, e := unix.RawSyscall6(unix.SYS_KCMP, pid, pid, kcmpFile, uintptr(a), uintptr(b), 0)
	return e == 0 && r == 0
}

// DupShared serves a notified dup (newfd < 0: the lowest free number),
// dup2 or dup3 in a table other threads share, exactly whatever they do
// meanwhile: the source is the open file the guest's oldfd holds (taken
// with pidfd_getfd, not the table's word for it), placed among the
// table's descriptions by kcmp, installed with ADDFD, and the table
// changed, all with the table locked, so that no other call's change of
// oldfd or newfd comes between the look and the install. ok is false
// when the call must run on the host instead (an O_PATH source, which
// ADDFD refuses; newfd's entry is dropped first).
func (c *Call) DupShared(oldfd, newfd int32, cloexec bool) (r Result, ok bool) {
	inj := c.k.injector()
	if inj == nil || !c.notified {
		return Err(unix.ENOSYS), true
	}
	t := c.fdt
	for {
		if newfd >= 0 {
			c.WaitClosed(newfd)
		}
		t.mu.Lock()
		if _, marked := t.closing[newfd]; newfd < 0 || !marked {
			break
		}
		// Another close of newfd was let through meanwhile.
		t.mu.Unlock()
	}
	var f *vfs.FileDescription
	var src int
	var err error
	if e, has := t.entries[oldfd]; has && e.file.HostFD >= 0 && c.HoldsPlaceholder(oldfd, e.file) {
		// The kernel's oldfd is the entry's placeholder; with the
		// table locked, only the kernel's own close_range could take
		// it meanwhile, after which this dup came first.
		f, src = e.file, e.file.HostFD
	} else {
		if src, err = platform.GetFD(c.TID, oldfd); err != nil {
			t.mu.Unlock()
			// oldfd is not open: EBADF, the dups' first check.
			return ErrOf(err), true
		}
		defer unix.Close(src)
		if c.k.VFS.OnStore(src, "") {
			for _, e := range t.entries {
				if e.file.HostFD >= 0 && sameOpenFile(src, e.file.HostFD) {
					f = e.file
					break
				}
			}
			if f == nil {
				// A placeholder whose number was closed (a close
				// in flight) and whose description is gone:
				// oldfd held nothing for the sentry.
				t.mu.Unlock()
				return Err(unix.EBADF), true
			}
		} else if fl, err := unix.FcntlInt(uintptr(src), unix.F_GETFL, 0); err == nil && fl&unix.O_PATH != 0 {
			// ADDFD takes no O_PATH file (fget): the host
			// duplicates, newfd first leaving the table.
			var old *vfs.FileDescription
			if newfd >= 0 {
				old = t.setLocked(newfd, nil, false)
			}
			t.mu.Unlock()
			if old != nil {
				old.DecRef()
			}
			return Result{}, false
		}
	}
	var at int32
	if newfd < 0 {
		at, err = inj.InstallFD(c.notifID, src, cloexec)
	} else {
		at, err = newfd, inj.InstallFDAt(c.notifID, src, newfd, cloexec)
	}
	if err != nil {
		t.mu.Unlock()
		return ErrOf(err), true
	}
	old := t.setLocked(at, f, cloexec)
	t.mu.Unlock()
	if old != nil {
		// What at held is closed (do_dup2 -> filp_close).
		old.DecRef()
	}
	return Result{Result: platform.Result{Action: platform.Responded, Ret: int64(at)}, Served: true}, true
}

// HoldsPlaceholder reports whether the guest's descriptor fd is f's
// placeholder, the very open file (kcmp).
func (c *Call) HoldsPlaceholder(fd int32, f *vfs.FileDescription) bool {
	same, _ := placeholderAt(c.TID, fd, f)
	return same
}

// Closes in flight. The sentry decides a close (the entry leaves the
// table, the description is released: the synchronous close path) before
// the kernel runs it, without an exit. In a table other threads share, a
// dup2 or dup3 onto the same number landing in between would then be
// closed by the kernel's close, and the table keep an entry for a number
// the kernel has closed. So a shared table's close marks the number with
// what the kernel holds there (CloseFD), and a dup2 or dup3 onto a
// marked number waits until the kernel's close has run (WaitClosed): the
// number no longer holds that file. Nothing else can put a file at an
// open number meanwhile (the lowest free number is never it, and every
// dup2 and dup3 waits), so the file's going tells the close has run. The
// opposite order, a stopped dup2 that entered first and a close between
// its entry and its exit (both run by the kernel, in either order), makes
// the close observed, and whichever exit comes last follows what the
// kernel holds (CloseExit, FollowCopy).

// closeMark is what a number held when the sentry let the kernel close
// it: the closing thread, and the file's device and inode.
type closeMark struct {
	tid      int32
	dev, ino uint64
}

// maxCloseWait bounds how long a dup2 waits for a close in flight (on
// ptrace the tracer's thread waits, holding up every stop): the closing
// thread runs its close as soon as it runs at all (it does not go back to
// user space first), so only a starved thread takes long, or a number the
// same file was opened at again by the host meanwhile; past the bound the
// dup2 goes on, and the race is the kernel's to decide again.
const maxCloseWait = 100 * time.Millisecond

// procFD is the sentry's path of thread tid's descriptor fd.
func procFD(tid, fd int32) string {
	return "/proc/" + strconv.Itoa(int(tid)) + "/fd/" + strconv.Itoa(int(fd))
}

// FDLink is the sentry's path of the calling thread's descriptor fd
// (its /proc/TID/fd/N magic link).
func (c *Call) FDLink(fd int32) string { return procFD(c.TID, fd) }

// guestFileID is vfs.HostFileID of thread tid's descriptor fd.
func guestFileID(tid, fd int32) (dev, ino uint64, ok bool) {
	return vfs.HostFileID(unix.AT_FDCWD, procFD(tid, fd))
}

// CloseFD takes fd out of the table for the call, a close of fd the
// kernel is about to run, and returns its description (nil for a host
// file). In a shared table it also marks fd with what the kernel holds
// there (the placeholder's file, or the host file), in the same hold of
// the lock, and reports whether a stopped dup2 or dup3 onto fd is between
// its entry and its exit: the close must then be observed, and CloseExit
// follow it.
func (c *Call) CloseFD(fd int32) (f *vfs.FileDescription, observe bool) {
	t := c.fdt
	if !t.Shared() {
		return t.Remove(fd), false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var dev, ino uint64
	var ok bool
	if e, has := t.entries[fd]; has && e.file.HostFD >= 0 {
		dev, ino, ok = vfs.HostFileID(e.file.HostFD, "")
	} else {
		dev, ino, ok = guestFileID(c.TID, fd)
	}
	if ok {
		if t.closing == nil {
			t.closing = map[int32]closeMark{}
		}
		t.closing[fd] = closeMark{tid: c.TID, dev: dev, ino: ino}
		c.Task.closing = fd
	}
	if e, has := t.entries[fd]; has {
		delete(t.entries, fd)
		t.leftLocked(fd, e)
		f = e.file
	}
	return f, t.dupTargets[fd] > 0
}

// closed drops thread tid's mark on fd, if it is still there: its close
// has run.
func (t *FDTable) closed(fd, tid int32) {
	t.mu.Lock()
	if m, ok := t.closing[fd]; ok && m.tid == tid {
		delete(t.closing, fd)
	}
	t.mu.Unlock()
}

// clearClosing drops the mark of the task's last close: the task is in
// its next call, so the kernel has run that close.
func (t *Task) clearClosing() {
	if t.closing >= 0 {
		t.fdt.closed(t.closing, t.TID)
		t.closing = -1
	}
}

// WaitClosed waits until a close of fd that the sentry let the kernel run
// (CloseFD) has run, for at most maxCloseWait, before the call puts a
// file at fd. The table must not be locked.
func (c *Call) WaitClosed(fd int32) {
	c.fdt.waitClosed(c.TID, fd, time.Now().Add(maxCloseWait))
}

// waitClosed is WaitClosed for a thread tid that uses the table, until
// deadline.
func (t *FDTable) waitClosed(tid, fd int32, deadline time.Time) {
	pause := 10 * time.Microsecond
	for {
		t.mu.Lock()
		m, ok := t.closing[fd]
		t.mu.Unlock()
		if !ok {
			return
		}
		if dev, ino, open := guestFileID(tid, fd); !open || dev != m.dev || ino != m.ino || time.Now().After(deadline) {
			t.closed(fd, m.tid)
			continue
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// waitCloses waits, as WaitClosed, for every close of the table that the
// sentry let the kernel run and the kernel may not have run yet: a copy
// the kernel makes after the entry left the table and before the close
// ran holds the file, which no window kept (OpenCopyWindow). One bound
// for all: many starved closing threads must not hold the caller (on
// ptrace, the tracer) for one bound each.
func (t *FDTable) waitCloses(tid int32) {
	t.mu.Lock()
	var fds []int32
	for fd := range t.closing {
		fds = append(fds, fd)
	}
	t.mu.Unlock()
	deadline := time.Now().Add(maxCloseWait)
	for _, fd := range fds {
		t.waitClosed(tid, fd, deadline)
	}
}

// DupTarget records that a stopped dup2 or dup3 onto fd is about to run
// (after any close of fd in flight has run); DupTargetDone, at its exit,
// that it has.
func (c *Call) DupTarget(fd int32) {
	c.WaitClosed(fd)
	t := c.fdt
	t.mu.Lock()
	if t.dupTargets == nil {
		t.dupTargets = map[int32]int{}
	}
	t.dupTargets[fd]++
	t.mu.Unlock()
}

// DupTargetDone is the exit of a dup2 or dup3 DupTarget recorded.
func (c *Call) DupTargetDone(fd int32) {
	t := c.fdt
	t.mu.Lock()
	if t.dupTargets[fd] <= 1 {
		delete(t.dupTargets, fd)
	} else {
		t.dupTargets[fd]--
	}
	t.mu.Unlock()
}

// CloseExit follows an observed close of fd (CloseFD said so): unless
// a dup2 or dup3 onto fd is still between entry and exit (whose exit will
// follow what the kernel holds), the entry at fd goes if the kernel no
// longer holds its placeholder there.
func (c *Call) CloseExit(fd int32) {
	t := c.fdt
	t.mu.Lock()
	var old *vfs.FileDescription
	if e, ok := t.entries[fd]; ok && t.dupTargets[fd] == 0 {
		if same, _ := placeholderAt(c.TID, fd, e.file); !same {
			old = t.setLocked(fd, nil, false)
		}
	}
	if m, ok := t.closing[fd]; ok && m.tid == c.TID {
		delete(t.closing, fd)
	}
	t.mu.Unlock()
	if old != nil {
		old.DecRef()
	}
}
