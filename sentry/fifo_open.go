package sentry

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"sentry/platform"
)

// FIFOOpen is a notified open of a FIFO (Call.OpenFIFO): of a FIFO of the
// sentry's (the host FIFO that stands for it) or of a host FIFO the
// sentry resolved the path of.
type FIFOOpen struct {
	// FIFO names the file: opens of the same FIFO meet.
	FIFO string
	// Key is FIFO and the flags: a restarted call adopts the open its
	// interrupted one left behind under the same key.
	Key string
	// Flags are the guest's open flags.
	Flags int
	// Open opens the FIFO with flags for the guest; without O_NONBLOCK
	// it may wait for the other end. It is called from any thread.
	Open func(flags int) (int, error)
	// Cancel, if not nil, makes a waiting Open return (it opens the other
	// end); without it, an open whose task is gone waits on until its
	// other end comes (a host FIFO, whose other end may be the host's:
	// opening it would show the host a partner that came and went).
	Cancel  func()
	Cloexec bool
}

// maxFIFOThreads bounds the FIFO opens that wait on a thread of their own
// (blocked in open(2), as exact as Linux's wait_for_partner). Past it an
// open is parked: a reader holds the reading end, opened without
// blocking, until a writer comes; a writer tries again without blocking
// until a reader is there. A guest's 10,200 threads blocked in FIFO opens
// took the sentry to thousands of threads before (Go ends a program at
// 10,000), and 64 blocked opens of host FIFOs held every serving thread.
const maxFIFOThreads = 128

// OpenFIFO answers a notified open of a FIFO. An open that cannot wait
// (O_NONBLOCK, O_RDWR, or a writer whose reader is there) is answered
// now. One that waits does so off the serving threads and without the
// task's lock, so that a guest waiting in a FIFO's open holds up nothing
// else, however many do: on a thread of its own while fewer than
// maxFIFOThreads do, parked otherwise. It is answered when the other end
// comes; if the task or the sandbox goes first, Cancel makes the open
// return. A signal interrupts the wait as Linux's (blockedOp.watch,
// blockedOps.pollParked); an open left behind on its thread then serves
// the task's next call with the same key.
func (c *Call) OpenFIFO(f FIFOOpen) Result {
	inj := c.k.injector()
	if !c.notified || inj == nil {
		return Err(unix.ENOSYS)
	}
	b := &c.k.blocked
	acc := f.Flags & unix.O_ACCMODE
	if f.Flags&unix.O_NONBLOCK != 0 || acc == unix.O_RDWR {
		fd, err := f.Open(f.Flags)
		if err != nil {
			return ErrOf(errnoOf(err))
		}
		b.opened(inj, f.FIFO, f.Flags)
		return c.InstallHost(fd, f.Cloexec)
	}
	if acc == unix.O_WRONLY {
		// A writer waits only for a reader: without one, O_NONBLOCK
		// fails with ENXIO (fifo_open); with one, it opens as the
		// blocking open would, and the flag goes.
		fd, err := f.Open(f.Flags | unix.O_NONBLOCK)
		if err == nil {
			clearNonblock(fd)
			b.opened(inj, f.FIFO, f.Flags)
			return c.InstallHost(fd, f.Cloexec)
		}
		if err != unix.ENXIO {
			return ErrOf(errnoOf(err))
		}
	}
	// The number it was added under: the goroutines must not read t.TID,
	// which an exec changes under t.mu (a data race on main).
	tid, id := c.TID, c.notifID
	c.waitsOff = true
	responded := Result{Result: platform.Result{Action: platform.Responded}, Served: true}
	switch op, ready := b.adopt(tid, f.Key, id, f.Cloexec); {
	case ready >= 0:
		c.waitsOff = false
		return c.InstallHost(ready, f.Cloexec)
	case op != nil:
		go op.watch(b, inj, tid, id)
		return responded
	}
	op := &blockedOp{cancel: f.Cancel, key: f.Key, fifo: f.FIFO, flags: f.Flags, open: f.Open,
		tid: tid, fd: -1, waiting: true, waiter: id, cloexec: f.Cloexec}
	// A reader whose writers are parked parks too: its end lets them
	// open, and their opening ends its wait.
	if acc == unix.O_RDONLY && b.parkedWriters(f.FIFO) || !b.takeThread() {
		if acc == unix.O_RDONLY {
			// The reading end is there from now on, as a blocked
			// reader's is (writers open without waiting), and it is
			// the guest's: closed, it could take with it what a writer
			// wrote meanwhile.
			fd, err := f.Open(f.Flags | unix.O_NONBLOCK)
			if err != nil {
				c.waitsOff = false
				return ErrOf(errnoOf(err))
			}
			if b.writerThere(fd) {
				c.waitsOff = false
				clearNonblock(fd)
				return c.InstallHost(fd, f.Cloexec)
			}
			op.fd = fd
		}
		b.add(tid, op)
		b.park(inj, op)
		if acc == unix.O_RDONLY {
			b.opened(inj, f.FIFO, f.Flags)
			// A writer that opened between the look above and the
			// parking (one on a thread of its own, which this end
			// woke) finds no parked reader to end.
			if b.writerThere(op.fd) && b.unpark(op) {
				b.complete(inj, op, op.fd)
			}
		}
		return responded
	}
	b.add(tid, op)
	go func() {
		// finish installs from this goroutine, whose thread must block
		// signals (platform.Injector.InstallFD); it ends with the
		// goroutine.
		runtime.LockOSThread()
		platform.BlockSignals()
		fd, err := f.Open(f.Flags)
		if err == nil {
			b.opened(inj, f.FIFO, f.Flags)
		}
		if !op.finish(inj, fd, err) {
			b.remove(tid, op)
		}
		b.putThread()
	}()
	go op.watch(b, inj, tid, id)
	return responded
}

// InstallHost answers a notified call with a copy of the sentry's host
// descriptor fd, which it closes.
func (c *Call) InstallHost(fd int, cloexec bool) Result {
	defer unix.Close(fd)
	nfd, err := c.InstallFD(fd, cloexec)
	if err != nil {
		return ErrOf(errnoOf(err))
	}
	return Result{Result: platform.Result{Action: platform.Responded, Ret: int64(nfd)}, Served: true}
}

// writerThere says a FIFO's reading end fd, opened without blocking, has
// a writer or data: what ends a blocked reader's wait_for_partner. No
// call reports a FIFO's writers, but tee(2) of one byte from it to a pipe
// of the sentry's, without blocking, is EAGAIN when it is empty with
// writers, 0 when it is empty without, and copies a byte when it has
// data (ipipe_prep); the copy is read back.
func (b *blockedOps) writerThere(fd int) bool {
	b.teeMu.Lock()
	defer b.teeMu.Unlock()
	if b.tee[1] == 0 {
		if err := unix.Pipe2(b.tee[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			b.tee = [2]int{}
			return false
		}
	}
	n, err := unix.Tee(fd, b.tee[1], 1, unix.SPLICE_F_NONBLOCK)
	if n > 0 {
		var buf [1]byte
		unix.Read(b.tee[0], buf[:])
	}
	return n > 0 || err == unix.EAGAIN
}

// clearNonblock takes O_NONBLOCK off fd's file: it was opened so only to
// not wait, and is then what the guest's blocking open makes.
func clearNonblock(fd int) {
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
}

// takeThread reserves a thread for a waiting open, if fewer than
// maxFIFOThreads wait so.
func (b *blockedOps) takeThread() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.threads >= maxFIFOThreads {
		return false
	}
	b.threads++
	return true
}

func (b *blockedOps) putThread() {
	b.mu.Lock()
	b.threads--
	b.mu.Unlock()
}

// park adds op to the parked opens and starts their poller if none runs.
func (b *blockedOps) park(inj platform.Injector, op *blockedOp) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.parked == nil {
		b.parked = map[string]map[*blockedOp]struct{}{}
	}
	if b.parked[op.fifo] == nil {
		b.parked[op.fifo] = map[*blockedOp]struct{}{}
	}
	b.parked[op.fifo][op] = struct{}{}
	op.parked = true
	b.watched.Add(1)
	if !b.polling {
		b.polling = true
		go b.pollParked(inj)
	}
}

// unpark takes op off the parked opens; whoever does so first finishes
// it.
func (b *blockedOps) unpark(op *blockedOp) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	set := b.parked[op.fifo]
	if _, ok := set[op]; !ok {
		return false
	}
	delete(set, op)
	if len(set) == 0 {
		delete(b.parked, op.fifo)
	}
	b.watched.Add(-1)
	return true
}

// drop ends an unparked open that nobody waits for any more.
func (b *blockedOps) drop(op *blockedOp) {
	if op.reader() {
		unix.Close(op.fd)
	}
	op.done.Store(true)
	b.remove(op.tid, op)
}

// parkedWriters says writers of fifo are parked.
func (b *blockedOps) parkedWriters(fifo string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for op := range b.parked[fifo] {
		if !op.reader() {
			return true
		}
	}
	return false
}

// opened is told of every open of FIFO fifo the sentry made with flags:
// a reading end lets parked writers open, a writing end ends parked
// readers' wait, as fifo_open's wake_up_partner does. It installs, so it
// runs on a thread that blocks signals.
func (b *blockedOps) opened(inj platform.Injector, fifo string, flags int) {
	acc := flags & unix.O_ACCMODE
	b.mu.Lock()
	var readers, writers []*blockedOp
	for op := range b.parked[fifo] {
		if op.reader() {
			readers = append(readers, op)
		} else {
			writers = append(writers, op)
		}
	}
	b.mu.Unlock()
	if acc != unix.O_WRONLY {
		for _, op := range writers {
			b.retryWriter(inj, op)
		}
	}
	if acc != unix.O_RDONLY {
		for _, op := range readers {
			if b.unpark(op) {
				b.complete(inj, op, op.fd)
			}
		}
	}
}

// retryWriter opens a parked writer's end without blocking, which
// succeeds once a reader is there, and answers it.
func (b *blockedOps) retryWriter(inj platform.Injector, op *blockedOp) {
	fd, err := op.open(op.flags | unix.O_NONBLOCK)
	if err == unix.ENXIO {
		return
	}
	if !b.unpark(op) {
		if err == nil {
			unix.Close(fd)
		}
		return
	}
	if err != nil {
		op.finish(inj, -1, err)
		b.drop(op)
		return
	}
	b.complete(inj, op, fd)
	b.opened(inj, op.fifo, op.flags)
}

// reader says op opens the reading end (a parked reader holds it from the
// start: fd does not change while it is parked).
func (op *blockedOp) reader() bool { return op.flags&unix.O_ACCMODE == unix.O_RDONLY }

// complete answers an unparked open with fd (a reader's own end), as the
// blocking open would have returned it.
func (b *blockedOps) complete(inj platform.Injector, op *blockedOp, fd int) {
	clearNonblock(fd)
	op.finish(inj, fd, nil)
	b.remove(op.tid, op)
}

// pollParked watches the parked opens, on one thread however many there
// are: a reader's wait ends when its end shows data, a writer that came
// and went (POLLIN, POLLHUP) or a writer that is there (writerThere: one
// not of this sentry, whose open the sentry does not see); a writer's
// when its open without blocking succeeds; either's when a signal would
// interrupt it (ERESTARTSYS, as blockedOp.watch). It ends when none is
// left. It installs, so its thread blocks signals and ends with it.
func (b *blockedOps) pollParked(inj platform.Injector) {
	runtime.LockOSThread()
	platform.BlockSignals()
	var ops []*blockedOp
	var fds []unix.PollFd
	for {
		time.Sleep(b.interval())
		b.mu.Lock()
		ops = ops[:0]
		for _, set := range b.parked {
			for op := range set {
				ops = append(ops, op)
			}
		}
		if len(ops) == 0 {
			b.polling = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		fds = fds[:0]
		for _, op := range ops {
			if op.reader() {
				fds = append(fds, unix.PollFd{Fd: int32(op.fd), Events: unix.POLLIN})
			}
		}
		if len(fds) > 0 {
			unix.Poll(fds, 0)
		}
		i := 0
		for _, op := range ops {
			switch {
			case op.cancelled.Load():
				if b.unpark(op) {
					b.drop(op)
				}
			case op.reader():
				if (fds[i].Revents&(unix.POLLIN|unix.POLLHUP) != 0 || b.writerThere(op.fd)) && b.unpark(op) {
					b.complete(inj, op, op.fd)
				}
				i++
			default:
				b.retryWriter(inj, op)
			}
		}
		for _, op := range ops {
			b.interruptParked(inj, op)
		}
	}
}

// interruptParked answers a parked open ERESTARTSYS when its thread has
// a signal Linux's wait_for_partner would be interrupted by; the open is
// dropped (a parked open holds no thread, so none is left behind).
func (b *blockedOps) interruptParked(inj platform.Injector, op *blockedOp) {
	interrupt, onlyShared := platform.PendingInterrupt(op.tid)
	switch {
	case !interrupt:
		op.shared = 0
		return
	case onlyShared:
		if op.shared++; op.shared < sharedPolls {
			return
		}
	}
	if !b.unpark(op) {
		return
	}
	op.mu.Lock()
	waiting, id := op.waiting, op.waiter
	op.waiting = false
	op.mu.Unlock()
	if waiting {
		inj.Respond(id, -platform.ERESTARTSYS)
	}
	b.drop(op)
}
