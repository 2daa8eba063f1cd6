package sentry

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"sentry/platform"
)

// blockedOp is an open that waits off the serving threads
// (Call.OpenBlocking) until it completes or is cancelled, and the guest
// call waiting for it, if any: a call interrupted by a signal leaves the
// open behind, and the same task's next open of the same file with the
// same flags (the call restarted, or issued again after EINTR) waits for
// that open instead of starting another one.
type blockedOp struct {
	cancel    func()
	cancelled atomic.Bool
	done      atomic.Bool
	key       string

	// mu guards the waiter: the notification the open's descriptor
	// answers.
	mu        sync.Mutex
	waiting   bool
	waiter    uint64
	cloexec   bool
	abandoned time.Time
}

// maxAbandoned bounds the opens a sandbox leaves waiting after their
// calls were interrupted: each holds a sentry thread in open(2). Past it
// the oldest is cancelled (its FIFO's other end opened and closed, which a
// peer waiting there sees as a partner that came and went).
const maxAbandoned = 64

// blockedOps are the calls waiting for another guest process, by task, so
// that a task's exit or the sandbox's end unblocks them (nothing of a
// sandbox may wait forever once its guest is gone).
type blockedOps struct {
	mu     sync.Mutex
	byTask map[int32]map[*blockedOp]struct{}
}

func (b *blockedOps) add(tid int32, op *blockedOp) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byTask == nil {
		b.byTask = map[int32]map[*blockedOp]struct{}{}
	}
	if b.byTask[tid] == nil {
		b.byTask[tid] = map[*blockedOp]struct{}{}
	}
	b.byTask[tid][op] = struct{}{}
}

func (b *blockedOps) remove(tid int32, op *blockedOp) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byTask[tid], op)
	if len(b.byTask[tid]) == 0 {
		delete(b.byTask, tid)
	}
}

// adopt makes notification id the waiter of task tid's abandoned open of
// key, if there is one.
func (b *blockedOps) adopt(tid int32, key string, id uint64, cloexec bool) *blockedOp {
	b.mu.Lock()
	defer b.mu.Unlock()
	for op := range b.byTask[tid] {
		if op.key != key || op.done.Load() || op.cancelled.Load() {
			continue
		}
		op.mu.Lock()
		if !op.waiting {
			op.waiting, op.waiter, op.cloexec = true, id, cloexec
			op.mu.Unlock()
			return op
		}
		op.mu.Unlock()
	}
	return nil
}

// abandon records that op's waiter is gone and cancels the oldest
// abandoned open past maxAbandoned.
func (b *blockedOps) abandon(op *blockedOp) {
	b.mu.Lock()
	var oldest *blockedOp
	n := 0
	for _, set := range b.byTask {
		for o := range set {
			o.mu.Lock()
			if !o.waiting && !o.done.Load() && !o.cancelled.Load() {
				n++
				if oldest == nil || o.abandoned.Before(oldest.abandoned) {
					oldest = o
				}
			}
			o.mu.Unlock()
		}
	}
	b.mu.Unlock()
	if n > maxAbandoned && oldest != nil && oldest.cancelled.CompareAndSwap(false, true) {
		go oldest.unblock()
	}
}

// cancel unblocks the calls of task tid, or of every task when all.
func (b *blockedOps) cancel(tid int32, all bool) {
	b.mu.Lock()
	var ops []*blockedOp
	for t, set := range b.byTask {
		if all || t == tid {
			for op := range set {
				ops = append(ops, op)
			}
		}
	}
	b.mu.Unlock()
	for _, op := range ops {
		if op.cancelled.CompareAndSwap(false, true) && op.cancel != nil {
			go op.unblock()
		}
	}
}

// unblock calls cancel until the call has returned: the call may not be
// waiting yet when cancel first runs (a FIFO's other end opened before
// the call's own open is no way out of it).
func (op *blockedOp) unblock() {
	for i := 0; i < 1000 && !op.done.Load(); i++ {
		op.cancel()
		time.Sleep(10 * time.Millisecond)
	}
}

// finish answers the waiter with the open's result, or closes what
// nobody waits for any more.
func (op *blockedOp) finish(inj platform.Injector, fd int, err error) {
	op.mu.Lock()
	op.done.Store(true)
	waiting, id, cloexec := op.waiting, op.waiter, op.cloexec
	op.waiting = false
	op.mu.Unlock()
	switch {
	case !waiting || op.cancelled.Load():
		// The guest is gone or stopped waiting; the descriptor was
		// only the way out.
		if err == nil {
			unix.Close(fd)
		}
	case err != nil:
		inj.Respond(id, -int64(errnoOf(err)))
	default:
		if _, ierr := inj.InstallFD(id, fd, cloexec); ierr != nil {
			// Gone meanwhile.
			inj.Respond(id, -int64(errnoOf(ierr)))
		}
		unix.Close(fd)
	}
}

// signalPoll is how often a waiting call looks for a signal that
// interrupts it, and sharedPolls how many polls a signal pending only for
// the process must stay so (no other thread took it) before it counts.
const (
	signalPoll  = 20 * time.Millisecond
	sharedPolls = 3
)

// watch interrupts notification id's wait when thread tid gets a signal
// Linux would interrupt the open with: the guest thread waits killably
// (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV), so no other signal ends its
// wait, and a FIFO's open must be interruptible as wait_for_partner is.
// The answer is ERESTARTSYS, which the guest's kernel turns into EINTR or
// a restart after the handler, by its SA_RESTART.
func (op *blockedOp) watch(b *blockedOps, inj platform.Injector, tid int32, id uint64) {
	tick := time.NewTicker(signalPoll)
	defer tick.Stop()
	shared := 0
	for range tick.C {
		if op.done.Load() || op.cancelled.Load() {
			return
		}
		interrupt, onlyShared := platform.PendingInterrupt(tid)
		switch {
		case !interrupt:
			shared = 0
			continue
		case onlyShared:
			if shared++; shared < sharedPolls {
				continue
			}
		}
		op.mu.Lock()
		mine := op.waiting && op.waiter == id
		if mine {
			op.waiting = false
			op.abandoned = time.Now()
		}
		op.mu.Unlock()
		if mine {
			inj.Respond(id, -platform.ERESTARTSYS)
			b.abandon(op)
		}
		return
	}
}
