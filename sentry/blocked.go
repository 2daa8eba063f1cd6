package sentry

import (
	"sync"
	"sync/atomic"
	"time"
)

// blockedOp is a call that waits off the serving threads
// (Call.OpenBlocking) until it completes or is cancelled.
type blockedOp struct {
	cancel    func()
	cancelled atomic.Bool
	done      atomic.Bool
}

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
