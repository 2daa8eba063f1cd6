package sentry

import (
	"sync"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// Descriptors passed with SCM_RIGHTS. A virtual fd's placeholder is an
// open file of the host (a backing, a backing directory, the store's
// anonymous file for O_PATH), so the kernel carries it from one process
// to another as it carries any file: the receiver gets that very open
// file, sharing offset and status flags, as Linux's receiver shares the
// sender's struct file. What the kernel cannot carry is the sentry's
// knowledge of it: a guest's receipt is observed (recvmsg's exit) and
// each received descriptor that is one of the sentry's open files gets
// the description whose placeholder it is, which kcmp(KCMP_FILE) tells
// exactly (the same struct file, not a file a guest could make look
// alike).
//
// The sender may close its descriptor before the receiver receives; the
// description is then kept alive (passedFiles) from the send until a
// guest receives it, so it can still be told. A description received by
// a process the sentry does not trace (over a host socket) stays there
// until the sandbox ends: that process holds the backing, and may pass it
// back.

// maxPassedFiles bounds the descriptions the sentry keeps alive for
// passes no guest has received yet; past it a send of another one is
// ETOOMANYREFS, Linux's answer to too many files in flight
// (too_many_unix_fds).
const maxPassedFiles = 1 << 16

// passedFiles are the descriptions sent with SCM_RIGHTS and not yet
// received by a guest, each with one reference per pending pass.
type passedFiles struct {
	mu    sync.Mutex
	files map[*vfs.FileDescription]int
}

// PassFiles records the descriptions a guest is about to send, before
// the kernel queues them, so that a receipt racing the sender's return
// finds them. Each gets a reference per pass. ok is false (nothing
// recorded) past maxPassedFiles.
func (k *Kernel) PassFiles(fs []*vfs.FileDescription) bool {
	p := &k.passed
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.files == nil {
		p.files = make(map[*vfs.FileDescription]int)
	}
	fresh := 0
	for _, f := range fs {
		if p.files[f] == 0 {
			fresh++
		}
	}
	if len(p.files)+fresh > maxPassedFiles {
		return false
	}
	for _, f := range fs {
		f.IncRef()
		p.files[f]++
	}
	return true
}

// UnpassFiles takes back passes PassFiles recorded for a send that
// failed (nothing was queued), where no guest has received them.
func (k *Kernel) UnpassFiles(fs []*vfs.FileDescription) {
	p := &k.passed
	p.mu.Lock()
	for _, f := range fs {
		if n := p.files[f]; n > 0 {
			k.dropPassLocked(f, n)
			f.DecRef()
		}
	}
	p.mu.Unlock()
}

func (k *Kernel) dropPassLocked(f *vfs.FileDescription, n int) {
	if n == 1 {
		delete(k.passed.files, f)
	} else {
		k.passed.files[f] = n - 1
	}
}

// releasePassed drops every pass left at the sandbox's end.
func (k *Kernel) releasePassed() {
	p := &k.passed
	p.mu.Lock()
	files := p.files
	p.files = nil
	p.mu.Unlock()
	for f, n := range files {
		for ; n > 0; n-- {
			f.DecRef()
		}
	}
}

// ReceivedFile tells what descriptor fd, which thread tid has just
// received with SCM_RIGHTS, is: (nil, true) for a host file; (f, true)
// for one of the sentry's open files, f being its description, with a
// reference for the caller; (nil, false) for a file of a sentry store the
// sentry cannot place (none of its descriptions is that open file), which
// the guest must not keep: it would be a descriptor of the store behind
// the sentry's back. A receipt that only peeked (MSG_PEEK: the message,
// its descriptors included, is received again later) keeps the pass.
func (k *Kernel) ReceivedFile(tid, fd int32, peek bool) (*vfs.FileDescription, bool) {
	if !k.VFS.OnStore(unix.AT_FDCWD, procFD(tid, fd)) {
		// A host file, or gone already (another thread closed it):
		// nothing to place.
		return nil, true
	}
	same := func(f *vfs.FileDescription) bool { s, _ := placeholderAt(tid, fd, f); return s }
	p := &k.passed
	p.mu.Lock()
	for f, n := range p.files {
		if same(f) {
			if peek {
				f.IncRef()
			} else {
				// The pass's reference becomes the receiver's.
				k.dropPassLocked(f, n)
			}
			p.mu.Unlock()
			return f, true
		}
	}
	p.mu.Unlock()
	k.mu.Lock()
	tables := make(map[*FDTable]bool, len(k.tasks))
	for _, t := range k.tasks {
		if f := t.fdtOf.Load(); f != nil {
			tables[f] = true
		}
	}
	k.mu.Unlock()
	for t := range tables {
		if f := t.Find(same); f != nil {
			return f, true
		}
	}
	return nil, false
}
