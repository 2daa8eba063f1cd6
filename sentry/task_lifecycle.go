package sentry

import (
	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry/vfs"
)

// The life of a task as the platform reports it: created by a clone
// (NewTask), changed by an exec (Exec), gone (Exit), and all of them at the
// sandbox's end (Shutdown).

// NewTask implements platform.Supervisor.NewTask, sharing or copying the
// parent's descriptor table and fs context as the clone flags the parent
// passed say (copy_files, copy_fs).
func (k *Kernel) NewTask(parentTID, childTID int32, kind int) {
	child := &Task{k: k, TID: childTID, closing: -1}
	parent := k.Task(parentTID)
	if parent == nil {
		c := k.Opts.Creds
		child.creds = &c
		// The first process.
		child.TG = &ThreadGroup{TGID: childTID, tasks: map[int32]*Task{}}
		child.setFDTable(newFDTable())
		// Held open (vfs.HostDir): a path relative to it is checked
		// where the kernel's cwd is, whatever is renamed later.
		cwd := k.VFS.HostLocation(k.Opts.Cwd)
		if w, err := k.VFS.WalkPath(&c, cwd, k.Opts.Cwd, true); err == nil && !w.IsHost() && w.Dentry != nil {
			// Started at a mount point: in the sentry's tmpfs.
			cwd = w.Location
		}
		child.fs.Store(&FSContext{users: 1, cwd: cwd, umask: k.Opts.Umask & 0777})
	} else {
		parent.mu.Lock()
		flags := parent.forking.flags
		before := parent.forking.fds
		parent.forking = forkRecord{}
		// Credentials are copied (copy_creds); they are immutable once
		// made, so sharing the pointer until a set*id replaces it is a
		// copy.
		child.creds = parent.creds
		// The flags are the ones the thread's own clone passed: the
		// event's kind says only how the kernel reports it (a clone
		// with exit signal SIGCHLD is a "fork" event whatever it
		// shares: CLONE_FILES, CLONE_FS, even CLONE_THREAD), so it
		// takes nothing away from them (taking CLONE_FILES and
		// CLONE_FS away gave such a child a table and a working
		// directory of its own where the kernel shares the parent's).
		// An orphan's creator may have recorded another thread's clone
		// of its group, and is made a forked child, as fork would.
		if kind == platform.NewTaskOrphan {
			k.Counters.OrphanAdopted.Add(1)
			flags &^= unix.CLONE_THREAD | unix.CLONE_FILES | unix.CLONE_FS
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
		before.Close()
		if flags&unix.CLONE_FS != 0 {
			pfs := parent.fs.Load()
			pfs.mu.Lock()
			pfs.users++
			pfs.mu.Unlock()
			child.fs.Store(pfs)
		} else {
			child.fs.Store(parent.fs.Load().fork())
		}
		parent.mu.Unlock()
	}
	k.mu.Lock()
	child.TG.tasks[childTID] = child
	k.tasks[childTID] = child
	k.ntasks.Store(int32(len(k.tasks)))
	k.mu.Unlock()
}

// sameFile reports whether thread tid's descriptor fd is f's placeholder
// (placeholderAt). If that cannot be told, it is assumed.
func sameFile(tid, fd int32, f *vfs.FileDescription) bool {
	same, known := placeholderAt(tid, fd, f)
	return same || !known
}

// placeholderAt reports whether thread tid's descriptor fd is f's
// placeholder: the very open file the sentry holds as f.HostFD (kcmp
// KCMP_FILE); known is false if that cannot be told (no host descriptor,
// kcmp refused).
func placeholderAt(tid, fd int32, f *vfs.FileDescription) (same, known bool) {
	if f.HostFD < 0 {
		return false, false
	}
	r, _, e := unix.RawSyscall6(unix.SYS_KCMP, uintptr(unix.Getpid()), uintptr(tid), kcmpFile, uintptr(f.HostFD), uintptr(fd), 0)
	switch {
	case e == unix.EBADF:
		return false, true
	case e != 0:
		return false, false
	}
	return r == 0, true
}

// survivedExec reports whether thread tid, stopped at its exec event, still
// has f's placeholder at fd (placeholderAt): at that stop the table is the
// task's alone and final. Only if that cannot be told is the flag the
// table knows (cloexec, as the entry was made) trusted.
func survivedExec(tid, fd int32, f *vfs.FileDescription, cloexec bool) bool {
	same, known := placeholderAt(tid, fd, f)
	if !known {
		return !cloexec
	}
	return same
}

// kcmpFile is KCMP_FILE (linux/kcmp.h).
const kcmpFile = 0

// Exec implements platform.Supervisor.Exec: the other threads are gone, the
// table is unshared and its close-on-exec entries closed (Linux's
// begin_new_exec: unshare_files, do_close_on_exec). Which entries the
// kernel closed is asked of the kernel (survivedExec): FD_CLOEXEC is the
// placeholder's, which F_SETFD and FIOCLEX change on the host untrapped.
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
	if before := t.takeTableCopy(); before != nil || t.fdt.Shared() {
		// unshare_files copied the table at some moment of the call
		// (BeginTableCopy).
		t.copyTable(tid, before)
		before.Close()
	}
	for _, f := range t.fdt.RemoveIfFile(func(fd int32, f *vfs.FileDescription, cloexec bool) bool {
		return !survivedExec(tid, fd, f, cloexec)
	}) {
		f.DecRef()
	}
	// Exec recomputes the capabilities (and a set-id binary the ids).
	t.RefreshCreds()
}

// Orphaned implements platform.Supervisor.Orphaned: only counted, the
// task was never the sentry's.
func (k *Kernel) Orphaned(tid int32) {
	k.Counters.OrphanKilled.Add(1)
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
	t.forking.release()
	t.DropTableCopy()
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
	k.releasePassed()
}
