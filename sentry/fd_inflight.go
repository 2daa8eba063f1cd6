package sentry

import (
	"os"
	"strconv"

	"sentry/sentry/vfs"
)

// A notified fcntl(F_DUPFD) of a virtual fd runs on the host (the
// notification is answered with CONTINUE): only the kernel can pick the
// lowest free number at or above the argument (f_dupfd) in a table other
// threads change at the same time, and a notification has no exit to see
// the number at. The table keeps the dup in flight instead, and the next
// trapped call of any task using the table first adopts every number that
// now holds the description's placeholder (kcmp) and is not in the table:
// only a trapped call reads the table, so none misses the number once the
// host made it. That is the stop's exactness (the exit stop came after the
// kernel made the number, too). A dup leaves the list when its thread makes
// its next trapped call (the dup is over) or is gone, after a scan.

// inflightDup is a dup the host runs for thread owner: file's placeholder
// at a number the kernel picks.
type inflightDup struct {
	file    *vfs.FileDescription
	cloexec bool
	owner   int32
	// over is set once the dup is done or never will be (its thread is
	// gone, or the table is a copy made after it): the next scan is its
	// last.
	over bool
}

// AddInflightDup records that thread owner's F_DUPFD of a descriptor of file
// runs on the host; the table holds a reference on file until the dup is
// over.
func (t *FDTable) AddInflightDup(file *vfs.FileDescription, cloexec bool, owner int32) {
	file.IncRef()
	t.mu.Lock()
	t.inflight = append(t.inflight, inflightDup{file: file, cloexec: cloexec, owner: owner})
	t.ninflight.Store(int32(len(t.inflight)))
	t.mu.Unlock()
}

// AdoptInflightDups gives the table every number of thread tid's host
// table that holds the placeholder of a dup in flight and is not in the
// table (any such number is a placeholder of that description, whichever
// call made it), then drops the dups that are over, thread caller's among
// them (it is making another call: its dup is done); caller 0 names none.
func (t *FDTable) AdoptInflightDups(tid, caller int32) {
	if t.ninflight.Load() == 0 {
		return
	}
	names, _ := os.ReadDir("/proc/" + strconv.Itoa(int(tid)) + "/fd")
	var done []inflightDup
	t.mu.Lock()
	for _, e := range names {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fd := int32(n)
		if _, ok := t.entries[fd]; ok {
			continue
		}
		for _, d := range t.inflight {
			if same, _ := placeholderAt(tid, fd, d.file); same {
				d.file.IncRef()
				t.entries[fd] = fdEntry{file: d.file, cloexec: d.cloexec}
				break
			}
		}
	}
	kept := t.inflight[:0]
	for _, d := range t.inflight {
		if d.over || d.owner == caller {
			done = append(done, d)
			continue
		}
		kept = append(kept, d)
	}
	clear(t.inflight[len(kept):])
	t.inflight = kept
	t.ninflight.Store(int32(len(kept)))
	t.mu.Unlock()
	// Released outside the lock, as the table's closes are.
	for _, d := range done {
		d.file.DecRef()
	}
}

// InflightDupsOver marks thread owner's dups in flight over (the thread is
// gone), or every dup if owner is 0 (exec: the other threads are gone).
func (t *FDTable) InflightDupsOver(owner int32) {
	t.mu.Lock()
	for i := range t.inflight {
		if owner == 0 || t.inflight[i].owner == owner {
			t.inflight[i].over = true
		}
	}
	t.mu.Unlock()
}

// copyInflightLocked gives n, a copy of the table the kernel made, the dups
// in flight: each is over in the copy (the host copied the table once) and
// the copy's first scan adopts what the copy holds. t.mu is held.
func (t *FDTable) copyInflightLocked(n *FDTable) {
	for _, d := range t.inflight {
		d.file.IncRef()
		d.over = true
		n.inflight = append(n.inflight, d)
	}
	n.ninflight.Store(int32(len(n.inflight)))
}

// dropInflight releases the dups in flight (the table's last user is
// gone).
func (t *FDTable) dropInflight() {
	t.mu.Lock()
	done := t.inflight
	t.inflight = nil
	t.ninflight.Store(0)
	t.mu.Unlock()
	for _, d := range done {
		d.file.DecRef()
	}
}
