// Package ptrace is the platform that stops a guest at its trapped system
// calls with seccomp's SECCOMP_RET_TRACE and serves them from one tracer
// thread, like gVisor's ptrace platform and strace --seccomp-bpf. Calls not
// in the trap list never stop.
package ptrace

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/platform/launch"
	"sentry/platform/unotify"
)

// Config says what guest to run and how.
type Config struct {
	// Spec is the guest (path, arguments, environment) and the filter
	// (the calls that stop, the calls that notify).
	launch.Spec
	// CPU pins the tracer thread, the serving threads and the guest to one
	// CPU when >= 0: a trap then costs two context switches on one CPU
	// instead of two cross-CPU wake-ups (several times faster on a VM).
	// -1 leaves them free.
	CPU int
	// Started, if set, is called with the guest's pid once it is traced.
	Started func(pid int)
	// Stats, if set, gets the time the guest waited for the sentry.
	Stats *platform.Stats
	// Namespace, if set, is given what the init stage made of the
	// guest's mount namespace, before the guest runs
	// (launch.Guest.TakeListener).
	Namespace func(launch.Namespace)
}

const seizeOptions = unix.PTRACE_O_TRACESYSGOOD | unix.PTRACE_O_TRACESECCOMP |
	unix.PTRACE_O_EXITKILL | unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEFORK |
	unix.PTRACE_O_TRACEVFORK | unix.PTRACE_O_TRACEEXEC

// syscallExitStop is WSTOPSIG at a syscall stop with PTRACE_O_TRACESYSGOOD.
const syscallExitStop = unix.SIGTRAP | 0x80

// thread is the tracer's state for one guest thread.
type thread struct {
	// inRewrite is set between a rewrite and its syscall-exit stop.
	inRewrite bool
	// saved are the guest's argument registers before a rewrite changed
	// them: x86-64 syscalls preserve them, and compiled code relies on it.
	saved   [6]uint64
	savedNo uint64
	changed bool
	// chained is set while a rewritten call is a reissued one (see
	// reissued): its exit does not restore what a restart would need.
	chained bool
	// reissued is set while the thread runs the call reissuedNo the
	// supervisor reissued after a rewritten one: saved still holds the
	// guest's own registers, which the last call of the chain restores.
	// A reissued call served by notification never stops here, so the
	// next stop of another call finds reissued stale and drops it.
	reissued     bool
	reissuedNo   uint64
	reissuedArgs [6]uint64
	// postponed are signals held back at their delivery stop while a
	// reissued call had not entered yet (signalStop); entryStop is set
	// while the thread runs to that call's entry stop (PTRACE_SYSCALL),
	// where they are raised again, and reissueEntered once it did.
	postponed      []int
	entryStop      bool
	reissueEntered bool
	// forking is set from a clone, fork or vfork's seccomp stop to its
	// clone event (or the thread's next call, if it failed): a new
	// process waiting in early may still be named by it.
	forking bool
	// tgid is the thread's process, read at its first fork (0 before):
	// a child's parent is its creator's process, not the thread.
	tgid int32
}

// tracer is the state of one Run; only the tracer thread touches it.
type tracer struct {
	sup     platform.Supervisor
	initPID int32
	threads map[int32]*thread
	// early holds threads whose first stop arrived before their parent's
	// clone event named them, with their parent process's pid then; they
	// stay stopped until the event comes, or their creator dies without
	// one (orphans).
	early map[int32]int32
	regs  unix.PtraceRegs
	// args is reused for every call: handing a fresh one to the
	// Supervisor interface would allocate on each trap.
	args  platform.SyscallArgs
	stats *platform.Stats
	// srv is the notification server once it runs, when the tracer
	// serves its own install calls (the ptrace platform: the install call
	// is the only one notified).
	srv atomic.Pointer[unotify.Server]
	// reports are the state changes waited for and not yet served, in
	// the order wait4 gave them; next is the first not served (see
	// collect).
	reports []report
	next    int
	// single counts the waits since the last that took every pending
	// state change (see collect).
	single int
	// forkers counts the threads whose forking is set.
	forkers int
	// dying holds threads that died in a clone while a child the kernel
	// had already made, reparented by their death, has not come to its
	// first stop: their supervisor state (Exit not yet called) is what
	// that child's table is made from (adopt).
	dying []dyingCreator
}

// dyingCreator is a thread that died in a clone, and the children it may
// have made: the tracees not yet seen whose parent, at its death, was the
// sentry (which, a subreaper, inherits a dead process's children) or its
// own process.
type dyingCreator struct {
	tid, tgid int32
	children  []int32
}

// report is one state change wait4 gave.
type report struct {
	tid int32
	ws  unix.WaitStatus
}

// Run starts the guest under the tracer, serves its stops on this platform
// and its notifications with a unotify.Server until its first process
// exits; what is left of the guest is then killed. It returns the first
// process's wait status.
func Run(cfg Config, sup platform.NotifySupervisor) (unix.WaitStatus, error) {
	type result struct {
		ws  unix.WaitStatus
		err error
	}
	done := make(chan result, 1)
	go func() {
		// ptrace requests are only accepted from the thread that attached,
		// and this thread must outlive the guest: PTRACE_O_EXITKILL kills
		// the guest when the tracer thread exits.
		runtime.LockOSThread()
		ws, err := run(cfg, sup)
		done <- result{ws, err}
	}()
	r := <-done
	return r.ws, r.err
}

func run(cfg Config, sup platform.NotifySupervisor) (unix.WaitStatus, error) {
	if cfg.CPU >= 0 {
		var set unix.CPUSet
		set.Set(cfg.CPU)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return 0, fmt.Errorf("pin tracer to CPU %d: %w", cfg.CPU, err)
		}
	}
	// A guest process the tracer does not see (one that escaped being
	// traced, or whose tracer link broke) is still the sentry's
	// descendant; as a subreaper the sentry inherits it when its parent
	// dies, so that killAll finds it.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	// Every ptrace stop sends the tracer SIGCHLD. The Go runtime installs a
	// handler for it that does nothing, but delivering it still costs a
	// signal frame, the handler and rt_sigreturn per stop; SIG_DFL makes
	// the kernel drop it at send time (sig_task_ignored), as for a C
	// tracer. Children are still reaped by wait4 alone: unlike SIG_IGN,
	// SIG_DFL does not auto-reap. Measured: fstat 129k -> 158k ops/s.
	launch.SetDefaultAction(int(unix.SIGCHLD))
	t := &tracer{sup: sup, threads: map[int32]*thread{}, early: map[int32]int32{}, stats: cfg.Stats}
	g, err := launch.Start(&cfg.Spec, func(pid int) error {
		t.initPID = int32(pid)
		if e := seize(int32(pid), seizeOptions); e != 0 {
			return fmt.Errorf("ptrace(PTRACE_SEIZE, %d): %w", pid, e)
		}
		t.threads[int32(pid)] = &thread{}
		sup.NewTask(0, int32(pid), platform.NewTaskFork)
		return nil
	})
	if err != nil {
		return 0, err
	}
	// Before the guest runs and before any thread blocks signals (the
	// serving threads below, this one's TracerThread), and after the
	// fork: the init stage keeps uid 0.
	if err := launch.KeepFromGuests(); err != nil {
		fmt.Fprintf(os.Stderr, "sentry: %v: a root guest can signal the sentry\n", err)
	}
	// The tracer must already be serving its stops while the init stage
	// hands the listener over.
	servers := make(chan *unotify.Server, 1)
	go func() {
		listener, mountNS, ok, err := g.TakeListener(cfg.Namespace)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sentry: %v\n", err)
		}
		if !ok {
			servers <- nil
			return
		}
		// On the ptrace platform the install call is the only notified
		// one: the tracer, which makes it, serves it.
		watching := len(cfg.Spec.Notify) == 0
		srv := unotify.Start(listener, mountNS, sup, cfg.CPU, cfg.Stats, watching)
		if watching {
			t.srv.Store(srv)
		}
		// Only now: a guest call made before the server gave the
		// supervisor its injector would find none.
		if err := g.Release(); err != nil {
			fmt.Fprintf(os.Stderr, "sentry: %v\n", err)
		}
		servers <- srv
	}()
	if cfg.Started != nil {
		cfg.Started(g.Pid)
	}
	// From here on the thread forks nothing (the guest's init stage
	// above inherited its policy and mask as they were): it must not
	// preempt the guest threads it continues, and it installs the
	// descriptors of the install calls it serves (ServeInstall).
	platform.TracerThread()
	// The tracer waits for its install calls in slices of a few
	// microseconds (unotify.Server.ServeInstall); the default timer
	// slack (50 us) would stretch each. Set after the fork: a child
	// inherits the slack, and the guest's must be what it would be
	// natively (prctl(PR_GET_TIMERSLACK)).
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	ws, err := t.loop()
	if srv := <-servers; srv != nil {
		srv.Stop()
	}
	return ws, err
}

// loop waits for stops until the first process exits.
func (t *tracer) loop() (unix.WaitStatus, error) {
	for {
		if t.next == len(t.reports) {
			if err := t.collect(); err != nil {
				return 0, err
			}
		}
		r := t.reports[t.next]
		t.next++
		tid, ws := r.tid, r.ws
		switch {
		case ws.Exited() || ws.Signaled():
			t.exited(tid)
			if tid == t.initPID {
				t.killAll()
				return ws, nil
			}
		case ws.Stopped():
			t.stopped(tid, ws)
		}
	}
}

// collect waits for the next state change and, every batchEvery waits
// when the guest has more than one thread, takes every other one already
// pending before any is served. wait4 reports the first waitable task it
// finds, in a fixed order: the sentry's own children, then the tracees,
// newest first. A tracer that served one stop per wait met a newer busy
// thread stopped again at every wait and left an older one stopped for as
// long as the others kept it busy: a thread-group leader whose parent is a
// guest process waited seconds for its clone event behind six threads
// calling fstat (testdata/starve.c), for good under two sandboxes at once
// (a red-team probe hung). A stopped thread now waits for at most
// batchEvery stops and the batch that follows. Not at every wait: the
// extra wait4 that finds nothing pending cost four guests calling fstat
// on one CPU 10% (170k to 152k ops/s).
func (t *tracer) collect() error {
	t.reports, t.next = t.reports[:0], 0
	var ws unix.WaitStatus
	for {
		tid, e := wait4(&ws, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return fmt.Errorf("wait4: %w", e)
		}
		t.reports = append(t.reports, report{tid, ws})
		break
	}
	// One guest thread has nothing to be unfair to: no extra wait.
	if t.single++; len(t.threads) < 2 || t.single < batchEvery {
		return nil
	}
	t.single = 0
	for {
		tid, e := wait4(&ws, unix.WNOHANG)
		if e != 0 || tid <= 0 {
			return nil
		}
		t.reports = append(t.reports, report{tid, ws})
	}
}

// batchEvery is how many waits the tracer takes one state change from
// between two that take all pending.
const batchEvery = 16

// work reports whether a guest thread has a state change the tracer has
// not served: one already collected or one pending in the kernel.
func (t *tracer) work() bool {
	return t.next < len(t.reports) || stopPending()
}

func (t *tracer) exited(tid int32) {
	delete(t.early, tid)
	th, known := t.threads[tid]
	delete(t.threads, tid)
	if !known {
		// A child some dying creator waited for died before its first
		// stop: it needs no table.
		t.unawaited(tid)
		return
	}
	forking := th.forking
	t.setForking(0, th, false)
	if forking {
		tgid := th.tgid
		if tgid == 0 {
			tgid = tid
		}
		// Its state stays until the child it may have made is seen.
		if kids := t.possibleChildren(tgid); len(kids) != 0 {
			t.dying = append(t.dying, dyingCreator{tid: tid, tgid: tgid, children: kids})
			t.orphans()
			return
		}
	}
	t.sup.Exit(tid)
	if len(t.early) != 0 {
		t.orphans()
	}
}

// orphans deals with new processes whose clone event will not come: a
// process killed (SIGKILL) between the kernel's copy of it and its stop
// at the event, or at the stop before the tracer asked for the event's
// message, never names its child, which Linux runs all the same; the
// sandbox left it stopped for good (20 of 100 forks of a process killed
// at random, testdata/forkkill.c).
//
// A thread that dies in a clone keeps its supervisor state (exited: its
// Exit waits) while a child it may have made waits in early or has not
// come to its first stop yet (t.dying): the kernel gives a dead
// process's children to another thread of its process, else to the
// sentry (a subreaper), so a child that stops after its creator's exit
// was served names no creator any more. Such a child is adopted from
// the first dying creator that waits for it, once no thread is in a
// clone (a live thread's event may still name it: it may be a thread or
// share a table), or at once if the sentry is its parent already (its
// creator's process is gone). One left waiting while no thread is in a
// clone and no dying creator waits for it can be named by no event: it is
// killed, since there is no table to serve it from; to the guest it is as
// if the killed parent's fork had failed (a child made with CLONE_PARENT,
// whose parent is its creator's parent, or one given to a guest process
// that made itself a subreaper, are such). A new thread is left: it
// dies with its creator's group, and its parent is its process's.
func (t *tracer) orphans() {
	for child, first := range t.early {
		group, now := procIDs(child)
		if group != child {
			continue
		}
		if t.adoptDying(child, now, first) || t.forkers != 0 {
			continue
		}
		delete(t.early, child)
		unix.Kill(int(child), unix.SIGKILL)
		t.sup.Orphaned(child)
	}
}

// adoptDying adopts child, waiting in early with parent now (first at
// its first stop), from a dying creator that waits for it (orphans says
// when), and reports whether one did: the creator whose process is its
// parent, else the first that died. Only a child that stopped after its
// creator was gone has no parent to tell its creator by; when two
// creators die at once, such a child may get the other's table, which
// holds only what it really has (the verified fork, below) and is the
// sentry's own state of its own guest. The child gets the supervisor's
// task of a forked child of the creator (a table of its own, its
// descriptors verified against the child's own, as for any fork: the
// creator's recorded flags may be another thread's clone of its group)
// and is continued; the creator, which made only this child in its
// clone, is then gone.
func (t *tracer) adoptDying(child, now, first int32) bool {
	if t.forkers != 0 && now != int32(os.Getpid()) {
		return false
	}
	i := slices.IndexFunc(t.dying, func(d dyingCreator) bool {
		return (d.tgid == now || d.tgid == first) && slices.Contains(d.children, child)
	})
	if i < 0 {
		i = slices.IndexFunc(t.dying, func(d dyingCreator) bool { return slices.Contains(d.children, child) })
	}
	if i < 0 {
		return false
	}
	d := t.dying[i]
	t.dying = slices.Delete(t.dying, i, i+1)
	delete(t.early, child)
	t.unawaited(child)
	t.threads[child] = &thread{}
	t.sup.NewTask(d.tid, child, platform.NewTaskOrphan)
	t.sup.Exit(d.tid)
	cont(child, 0)
	return true
}

// unawaited drops tid, adopted or dead, from the children the dying
// creators wait for, and serves the exit of those left waiting for none.
func (t *tracer) unawaited(tid int32) {
	if len(t.dying) == 0 {
		return
	}
	kept := t.dying[:0]
	for _, d := range t.dying {
		d.children = slices.DeleteFunc(d.children, func(c int32) bool { return c == tid })
		if len(d.children) == 0 {
			t.sup.Exit(d.tid)
			continue
		}
		kept = append(kept, d)
	}
	clear(t.dying[len(kept):])
	t.dying = kept
}

// forgetDying serves the exit of dying creator tid now: its id is taken
// by a new task, whose state the deferred Exit would drop.
func (t *tracer) forgetDying(tid int32) {
	for i, d := range t.dying {
		if d.tid == tid {
			t.sup.Exit(tid)
			t.dying = slices.Delete(t.dying, i, i+1)
			return
		}
	}
}

// possibleChildren lists the children a thread of process tgid that died
// in a clone may have made: the new processes waiting in early whose
// parent is tgid, and the tracees not yet seen (their first stop not
// reported) that are children of the sentry or of tgid, where the kernel
// puts the children of a thread that died (another thread of its
// process, else the nearest subreaper: the sentry, unless a guest
// process made itself one, which this does not look at).
func (t *tracer) possibleChildren(tgid int32) []int32 {
	var out []int32
	sentry := int32(os.Getpid())
	for child, first := range t.early {
		if _, now := procIDs(child); now == tgid || first == tgid || now == sentry {
			out = append(out, child)
		}
	}
	for _, pid := range append(children("/proc/self/task/"), children("/proc/"+strconv.Itoa(int(tgid))+"/task/")...) {
		tid := int32(pid)
		if _, ok := t.threads[tid]; ok {
			continue
		}
		if _, ok := t.early[tid]; ok || slices.Contains(out, tid) || !tracedByUs(tid) {
			continue
		}
		out = append(out, tid)
	}
	return out
}

// tracedByUs reports whether tid is traced by this thread, the tracer
// (/proc/TID/status TracerPid).
func tracedByUs(tid int32) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(int(tid)) + "/status")
	return err == nil && platform.ProcNumber(data, "TracerPid") == unix.Gettid()
}

// setForking sets th.forking (of thread tid) and keeps forkers the count
// of threads in a clone, which orphans reads at every new task (a scan of
// every thread there made a guest's fork storm quadratic in its task
// count). A thread's first clone reads its process (th.tgid).
func (t *tracer) setForking(tid int32, th *thread, v bool) {
	if th.forking != v {
		th.forking = v
		if v {
			t.forkers++
			if th.tgid == 0 {
				th.tgid, _ = procIDs(tid)
			}
		} else {
			t.forkers--
		}
	}
}

// procIDs is tid's thread group and parent process (/proc/TID/status),
// zeros if tid is gone.
func procIDs(tid int32) (tgid, ppid int32) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(int(tid)) + "/status")
	if err != nil {
		return 0, 0
	}
	return int32(platform.ProcNumber(data, "Tgid")), int32(platform.ProcNumber(data, "PPid"))
}

// killAll ends what is left of the guest once its first process is gone,
// as the sandbox's contract says; PTRACE_O_EXITKILL would do it too when
// the tracer exits, this makes it immediate.
//
// Processes the tracer never saw (a guest cannot escape being traced,
// but if one did) are found as the sentry's children: it is a subreaper, so
// every orphaned guest process becomes its child. Each round kills them
// and reaps whatever has died, children and tracees alike (wait4 on any
// pid: a thread-group leader is not reported while a traced thread of its
// group is an unreaped zombie, so a wait for the leader alone waited
// forever for a thread only a wait for any could reap), until nothing is
// left to wait for or killWait has passed: a task that does not die of
// SIGKILL (stuck in the kernel) must not keep the sentry from ending.
func (t *tracer) killAll() {
	for tid := range t.threads {
		unix.Kill(int(tid), unix.SIGKILL)
	}
	for tid := range t.early {
		unix.Kill(int(tid), unix.SIGKILL)
	}
	for _, d := range t.dying {
		t.sup.Exit(d.tid)
	}
	t.dying = nil
	deadline := time.Now().Add(killWait)
	pause := 50 * time.Microsecond
	for {
		// Unreaped children keep their pids, so none of these is
		// another process's.
		for _, pid := range children("/proc/self/task/") {
			unix.Kill(pid, unix.SIGKILL)
		}
		reaped := false
		for {
			var ws unix.WaitStatus
			tid, e := wait4(&ws, unix.WNOHANG)
			if e == unix.ECHILD {
				return
			}
			if e != 0 || tid <= 0 {
				break
			}
			reaped = true
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "sentry: guest processes left after SIGKILL and %v: %v\n", killWait, children("/proc/self/task/"))
			return
		}
		if !reaped {
			time.Sleep(pause)
			pause = min(2*pause, 10*time.Millisecond)
		}
	}
}

// killWait bounds killAll.
const killWait = 10 * time.Second

// children lists the child processes of the threads under tasks
// (/proc/PID/task/, each thread's children: a child belongs to the thread
// that forked it); for the sentry's own, "/proc/self/task/".
func children(tasks string) []int {
	dir, _ := os.ReadDir(tasks)
	var pids []int
	for _, task := range dir {
		data, err := os.ReadFile(tasks + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func (t *tracer) stopped(tid int32, ws unix.WaitStatus) {
	th := t.threads[tid]
	if th == nil {
		// A new thread's first stop can be reported before its parent's
		// clone event; keep it stopped until the parent's event names it.
		t.forgetDying(tid)
		_, t.early[tid] = procIDs(tid)
		t.orphans()
		return
	}
	sig := ws.StopSignal()
	// The ptrace event is status>>16 whatever the signal (TrapCause only
	// looks at SIGTRAP stops, but group-stops report PTRACE_EVENT_STOP with
	// the stop signal).
	event := int(uint32(ws) >> 16)
	switch {
	case sig == syscallExitStop && th.entryStop:
		// The reissued call's entry (syscallEnter's seccomp stop comes
		// next): the signals held back go again, to be delivered when
		// it returns, as Linux delivers one that came during the call.
		th.entryStop, th.reissueEntered = false, true
		for _, s := range th.postponed {
			unix.RawSyscall(unix.SYS_TKILL, uintptr(tid), uintptr(s), 0)
		}
		th.postponed = th.postponed[:0]
		cont(tid, 0)
	case sig == syscallExitStop:
		t.syscallExit(tid, th)
	case sig == unix.SIGTRAP && event == unix.PTRACE_EVENT_SECCOMP:
		if srv := t.syscallEnter(tid, th); srv != nil {
			srv.ServeInstall(tid, t.work)
		}
	case sig == unix.SIGTRAP && (event == unix.PTRACE_EVENT_CLONE || event == unix.PTRACE_EVENT_FORK || event == unix.PTRACE_EVENT_VFORK):
		t.newTask(tid, event)
		resume(tid, th, 0)
	case sig == unix.SIGTRAP && event == unix.PTRACE_EVENT_EXEC:
		former, _ := eventMsg(tid)
		if f := int32(former); f != tid {
			// A non-leader thread exec'd and took over the leader's id
			// (and its state moves with it); the other threads are gone.
			if fth := t.threads[f]; fth != nil {
				// The leader's own state is gone with it.
				t.setForking(0, th, false)
				th = fth
			}
			delete(t.threads, f)
			t.threads[tid] = th
		}
		t.sup.Exec(tid, int32(former))
		resume(tid, th, 0)
	case event == unix.PTRACE_EVENT_STOP:
		switch sig {
		case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
			// Group-stop: stay stopped, but let SIGCONT wake the thread
			// without the tracer, as a stopped untraced process would.
			listen(tid)
		default:
			// A new thread's first stop, or the stop after SIGCONT.
			cont(tid, 0)
		}
	case event == 0:
		// Signal-delivery stop: deliver the signal as the kernel would.
		t.signalStop(tid, th, int(sig))
	default:
		resume(tid, th, 0)
	}
}

// resume continues a thread after a stop that is not its syscall's exit:
// a thread inside a rewritten call must still stop at that call's exit
// (clone and exec report their events before it).
func resume(tid int32, th *thread, sig int) {
	if th.inRewrite {
		ptraceRaw(unix.PTRACE_SYSCALL, tid, 0, uintptr(sig))
		return
	}
	cont(tid, sig)
}

// signalStop delivers sig to a thread stopped for its delivery. A call the
// signal withdrew before the sentry saw it (a notification not yet
// received) is made to restart whatever the handler's SA_RESTART says: it
// had no effect, and the calls the sentry serves cannot be interrupted on
// Linux (see Supervisor.Interrupted).
func (t *tracer) signalStop(tid int32, th *thread, sig int) {
	if th.reissued && !th.reissueEntered {
		// The thread is between a call the sentry made of its own
		// (the install call of an exec of a tmpfs file) and the one it
		// reissues (the execveat of it), one call to the guest: a
		// handler run here wrote its frame over the strings the sentry
		// put below the stack for the reissued call (execveat's empty
		// path: ENOTDIR, 194 of 200 execs under a 100 us itimer), or
		// jumped away and left the installed descriptor behind. The
		// signal waits for the reissued call's entry.
		th.postponed = append(th.postponed, sig)
		th.entryStop = true
		contSyscall(tid)
		return
	}
	regs := &t.regs
	if getRegs(tid, regs) == 0 && int64(regs.Orig_rax) >= 0 && int64(regs.Rax) == -platform.ERESTARTSYS {
		t.args = platform.SyscallArgs{uintptr(regs.Rdi), uintptr(regs.Rsi), uintptr(regs.Rdx),
			uintptr(regs.R10), uintptr(regs.R8), uintptr(regs.R9)}
		if t.sup.Interrupted(tid, uintptr(regs.Orig_rax), &t.args, uintptr(regs.Rip)) {
			restart := -int64(platform.ERESTARTNOINTR)
			regs.Rax = uint64(restart)
			setRegs(tid, regs)
			// An install call the signal withdrew is made again
			// after the handler, which may take any time: a serving
			// thread receives it.
			if srv := t.srv.Load(); regs.Orig_rax == platform.SysInstallFD && srv != nil {
				srv.Expect()
			}
		}
	}
	resume(tid, th, sig)
}

// stopPending reports whether a guest thread has a stop or an exit for the
// tracer to wait for (waitid WNOWAIT: it stays to be waited for).
func stopPending() bool {
	var info [128]byte // siginfo_t; si_pid at offset 16
	_, _, e := unix.RawSyscall6(unix.SYS_WAITID, unix.P_ALL, 0, uintptr(unsafe.Pointer(&info[0])),
		unix.WEXITED|unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, 0, 0)
	return e != 0 || *(*int32)(unsafe.Pointer(&info[16])) != 0
}

func (t *tracer) newTask(parent int32, event int) {
	msg, e := eventMsg(parent)
	if e != 0 {
		// The parent was killed at its event, which names nobody now:
		// its exit, next, looks for the child (exited).
		return
	}
	child := int32(msg)
	if th := t.threads[parent]; th != nil {
		t.setForking(0, th, false)
	}
	if _, ok := t.threads[child]; ok {
		// Adopted already (orphans): the adoption stands, a second task
		// would drop the first's table unreleased. Not expected: a
		// child is adopted only when no thread is in a clone or its
		// creator's process is gone.
		return
	}
	t.forgetDying(child)
	kind := platform.NewTaskClone
	switch event {
	case unix.PTRACE_EVENT_FORK:
		kind = platform.NewTaskFork
	case unix.PTRACE_EVENT_VFORK:
		kind = platform.NewTaskVfork
	}
	t.unawaited(child)
	t.threads[child] = &thread{}
	t.sup.NewTask(parent, child, kind)
	if _, ok := t.early[child]; ok {
		delete(t.early, child)
		cont(child, 0)
	}
	if len(t.early) != 0 {
		t.orphans()
	}
}

// stopOutcome is what a stop's action tells of the call's result: given
// by the sentry (Done), seen later (a rewrite's exit stop, an open's
// install call), or never (resumed with no exit stop).
func stopOutcome(a platform.Action) platform.Outcome {
	switch a {
	case platform.Done:
		return platform.Answered
	case platform.Rewrite, platform.Install:
		return platform.Deferred
	}
	return platform.Unseen
}

// syscallEnter serves a seccomp stop: one register read, at most one write.
// When it continued the thread into the install call with the right to
// receive it (unotify.Server.BeginInstall), it returns the server, whose
// ServeInstall must follow.
func (t *tracer) syscallEnter(tid int32, th *thread) (installer *unotify.Server) {
	start := t.stats.Start()
	regs := &t.regs
	if getRegs(tid, regs) != 0 {
		// The thread died under us (SIGKILL); its exit comes next.
		return nil
	}
	t.args = platform.SyscallArgs{uintptr(regs.Rdi), uintptr(regs.Rsi), uintptr(regs.Rdx),
		uintptr(regs.R10), uintptr(regs.R8), uintptr(regs.R9)}
	// The reissued call itself, not only its number: one that never came
	// (the guest's own filter failed it without a stop, a handler jumped
	// away) leaves reissued set for the guest's next call, which is not
	// part of the chain and whose registers are its own.
	chained := th.reissued && regs.Orig_rax == th.reissuedNo &&
		th.reissuedArgs == [6]uint64{regs.Rdi, regs.Rsi, regs.Rdx, regs.R10, regs.R8, regs.R9}
	th.reissued = false
	sysno := uintptr(regs.Orig_rax)
	res := t.sup.Syscall(tid, sysno, &t.args, uintptr(regs.Rsp))
	t.setForking(tid, th, res.Action != platform.Done && (sysno == unix.SYS_CLONE || sysno == unix.SYS_FORK || sysno == unix.SYS_VFORK))
	if t.forkers == 0 && len(t.early) != 0 {
		// The last clone in progress failed: no event names those left.
		t.orphans()
	}
	defer t.stats.Done(sysno, start, res.Ret, stopOutcome(res.Action), !chained)
	switch res.Action {
	case platform.Passthrough:
		cont(tid, 0)
	case platform.Done:
		// orig_rax = -1 makes the kernel skip the call and return rax.
		regs.Orig_rax = ^uint64(0)
		regs.Rax = uint64(res.Ret)
		if chained {
			s := &th.saved
			regs.Rdi, regs.Rsi, regs.Rdx, regs.R10, regs.R8, regs.R9 = s[0], s[1], s[2], s[3], s[4], s[5]
		}
		setRegs(tid, regs)
		cont(tid, 0)
	case platform.Install:
		// The filter runs again on the changed number (seccomp's
		// recheck after a tracer) and notifies the listener; the
		// argument registers are the guest's own.
		regs.Orig_rax = platform.SysInstallFD
		setRegs(tid, regs)
		// The tracer receives the install call itself when it can:
		// one thread fewer to wake per open.
		if srv := t.srv.Load(); srv != nil && srv.BeginInstall() {
			installer = srv
		}
		cont(tid, 0)
	case platform.Rewrite:
		if !chained {
			th.saved = [6]uint64{regs.Rdi, regs.Rsi, regs.Rdx, regs.R10, regs.R8, regs.R9}
			th.savedNo = regs.Orig_rax
		}
		th.chained = chained
		regs.Orig_rax = uint64(res.Sysno)
		regs.Rdi, regs.Rsi, regs.Rdx = uint64(res.Args[0]), uint64(res.Args[1]), uint64(res.Args[2])
		regs.R10, regs.R8, regs.R9 = uint64(res.Args[3]), uint64(res.Args[4]), uint64(res.Args[5])
		th.changed = th.saved != [6]uint64{regs.Rdi, regs.Rsi, regs.Rdx, regs.R10, regs.R8, regs.R9}
		setRegs(tid, regs)
		th.inRewrite = true
		contSyscall(tid)
	}
	return installer
}

// syscallExit completes a rewrite: the supervisor sees the host's result and
// the guest sees the supervisor's. The argument registers are restored, as
// the guest's own call would have left them.
func (t *tracer) syscallExit(tid int32, th *thread) {
	if !th.inRewrite {
		cont(tid, 0)
		return
	}
	th.inRewrite = false
	start := t.stats.Start()
	regs := &t.regs
	if getRegs(tid, regs) != 0 {
		return
	}
	ret := t.sup.SyscallExit(tid, int64(regs.Rax))
	defer t.stats.Done(uintptr(th.savedNo), start, ret, platform.Answered, false)
	if platform.IsRestart(int64(regs.Rax)) && !th.chained {
		// A signal interrupted the rewritten call (a FIFO's open, a
		// lock's wait): the kernel restarts the call in orig_rax with the
		// argument registers, or returns EINTR, once the signal is
		// handled. The guest's own call must be the one restarted, as it
		// issued it; the sentry serves it again from the start. An
		// install call the signal withdrew (exec of a tmpfs file: its
		// descriptor, before the execveat) never ran: the guest's call
		// restarts whatever SA_RESTART says (ERESTARTNOINTR), as one the
		// signal came just before; with ERESTARTSYS an exec got EINTR,
		// which Linux's exec never returns (182 of 200 under a 100 us
		// itimer on ptrace).
		if regs.Orig_rax == platform.SysInstallFD {
			restart := -int64(platform.ERESTARTNOINTR)
			regs.Rax = uint64(restart)
		}
		regs.Orig_rax = th.savedNo
		s := &th.saved
		regs.Rdi, regs.Rsi, regs.Rdx, regs.R10, regs.R8, regs.R9 = s[0], s[1], s[2], s[3], s[4], s[5]
		setRegs(tid, regs)
		t.sup.Reissue(tid)
		cont(tid, 0)
		return
	}
	if sysno, args, ok := t.sup.Reissue(tid); ok {
		// Back up over the 2-byte syscall instruction so the guest runs
		// it again with the new call in rax (x86-64 reads the number from
		// rax at entry; orig_rax is only the kernel's record).
		regs.Rip -= 2
		regs.Rax = uint64(sysno)
		regs.Orig_rax = uint64(sysno)
		regs.Rdi, regs.Rsi, regs.Rdx = uint64(args[0]), uint64(args[1]), uint64(args[2])
		regs.R10, regs.R8, regs.R9 = uint64(args[3]), uint64(args[4]), uint64(args[5])
		setRegs(tid, regs)
		th.reissued, th.reissuedNo, th.reissueEntered = true, uint64(sysno), false
		th.reissuedArgs = [6]uint64{regs.Rdi, regs.Rsi, regs.Rdx, regs.R10, regs.R8, regs.R9}
		cont(tid, 0)
		return
	}
	if uint64(ret) != regs.Rax || th.changed {
		regs.Rax = uint64(ret)
		s := &th.saved
		regs.Rdi, regs.Rsi, regs.Rdx, regs.R10, regs.R8, regs.R9 = s[0], s[1], s[2], s[3], s[4], s[5]
		setRegs(tid, regs)
	}
	cont(tid, 0)
}
