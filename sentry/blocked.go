package sentry

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"sentry/platform"
)

// blockedOp is an open that waits off the serving threads
// (Call.OpenFIFO) until it completes or is cancelled, and the guest
// call waiting for it, if any: a call interrupted by a signal leaves the
// open behind, and the same task's next open of the same file with the
// same flags (the call restarted, or issued again after EINTR) waits for
// that open instead of starting another one.
type blockedOp struct {
	cancel    func()
	cancelled atomic.Bool
	done      atomic.Bool
	key       string

	// fifo, flags and open are the FIFOOpen's; tid is the task's number
	// it was added under. A parked open (parked: no thread of its own)
	// holds fd, the reading end opened without blocking, while it waits
	// for a writer; shared counts the polls a signal pending only for the
	// process has stayed so (the poller's own).
	fifo   string
	flags  int
	open   func(flags int) (int, error)
	tid    int32
	parked bool
	fd     int
	shared int

	// mu guards the waiter: the notification the open's descriptor
	// answers.
	mu        sync.Mutex
	waiting   bool
	waiter    uint64
	cloexec   bool
	abandoned time.Time
	// ready says an abandoned open returned before its waiter came back:
	// fd is its descriptor, which the restart takes (adopt).
	ready bool
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

	// threads counts the opens waiting on threads of their own (at most
	// maxFIFOThreads); parked holds the others by FIFO, which one poller
	// goroutine watches while polling says it runs; watched counts both,
	// for the interval of the signal polls.
	threads int
	parked  map[string]map[*blockedOp]struct{}
	polling bool
	watched atomic.Int32

	// tee is the pipe writerThere copies into, made on first use.
	teeMu sync.Mutex
	tee   [2]int
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
// key, if there is one; if that open has returned already, it is taken
// off the task's opens and its descriptor is ready (else -1).
func (b *blockedOps) adopt(tid int32, key string, id uint64, cloexec bool) (op *blockedOp, ready int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for op := range b.byTask[tid] {
		if op.key != key || op.cancelled.Load() {
			continue
		}
		op.mu.Lock()
		if op.ready {
			op.ready = false
			op.mu.Unlock()
			delete(b.byTask[tid], op)
			if len(b.byTask[tid]) == 0 {
				delete(b.byTask, tid)
			}
			return nil, op.fd
		}
		if !op.waiting && !op.done.Load() {
			op.waiting, op.waiter, op.cloexec = true, id, cloexec
			op.mu.Unlock()
			return op, -1
		}
		op.mu.Unlock()
	}
	return nil, -1
}

// takeReady is the descriptor of an abandoned open that returned before
// its waiter came back, which nobody will take now (else -1).
func (op *blockedOp) takeReady() int {
	op.mu.Lock()
	defer op.mu.Unlock()
	if !op.ready {
		return -1
	}
	op.ready = false
	return op.fd
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
			if !o.waiting && (!o.done.Load() || o.ready) && !o.cancelled.Load() {
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
		if fd := oldest.takeReady(); fd >= 0 {
			unix.Close(fd)
			b.remove(oldest.tid, oldest)
		} else {
			go oldest.unblock()
		}
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
		if !op.cancelled.CompareAndSwap(false, true) {
			continue
		}
		switch fd := op.takeReady(); {
		case fd >= 0:
			unix.Close(fd)
			b.remove(op.tid, op)
		case b.unpark(op):
			b.drop(op)
		case op.cancel != nil:
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
// nobody waits for any more. It keeps the descriptor of an open whose
// waiter was interrupted and has not come back yet (kept): the writer
// that released it may have written and gone, and closing this end would
// lose what it wrote, which the restarted open, on Linux, would have
// waited for and read.
func (op *blockedOp) finish(inj platform.Injector, fd int, err error) (kept bool) {
	op.mu.Lock()
	op.done.Store(true)
	waiting, id, cloexec := op.waiting, op.waiter, op.cloexec
	op.waiting = false
	if !waiting && err == nil && !op.parked && !op.cancelled.Load() {
		op.fd, op.ready = fd, true
		op.mu.Unlock()
		return true
	}
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
	return false
}

// signalPoll is how often a waiting call looks for a signal that
// interrupts it while at most pollShare calls wait (each look reads the
// thread's /proc status; with more, the interval grows with their number,
// so that thousands of waiting guest threads cost the sentry no more than
// pollShare of them), and sharedPolls how many polls a signal pending
// only for the process must stay so (no other thread took it) before it
// counts.
const (
	signalPoll  = 20 * time.Millisecond
	pollShare   = 64
	sharedPolls = 3
)

// interval is the time between two signal polls of one waiting call.
func (b *blockedOps) interval() time.Duration {
	return signalPoll * time.Duration(1+b.watched.Load()/pollShare)
}

// watch interrupts notification id's wait when thread tid gets a signal
// Linux would interrupt the open with: the guest thread waits killably
// (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV), so no other signal ends its
// wait, and a FIFO's open must be interruptible as wait_for_partner is.
// The answer is ERESTARTSYS, which the guest's kernel turns into EINTR or
// a restart after the handler, by its SA_RESTART.
func (op *blockedOp) watch(b *blockedOps, inj platform.Injector, tid int32, id uint64) {
	b.watched.Add(1)
	defer b.watched.Add(-1)
	shared := 0
	for {
		time.Sleep(b.interval())
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
