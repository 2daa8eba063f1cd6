package platform

import (
	"sync/atomic"
	"time"
)

// MaxSysno bounds the syscall numbers Stats keeps apart (x86-64's end
// below it); the install call (SysInstallFD) has a slot of its own.
const MaxSysno = 512

// Stats is what the guest waited for the sentry, per syscall, as a
// platform sees it (like strace -c -w from the supervisor's side): from
// the moment it has a trapped call (a stop waited for, a notification
// received) to the moment it lets the guest go (resumed, answered). Time
// the host spends running a passed-through or rewritten call is the
// guest's own, not counted. A nil *Stats records nothing and costs
// nothing.
type Stats struct {
	calls, errors, unseen, nanos [MaxSysno + 1]atomic.Uint64
}

// Outcome is what a platform knows of a call's result when it records a
// service of it.
type Outcome uint8

const (
	// Answered: ret is the guest's result, given or seen by the sentry.
	Answered Outcome = iota
	// Unseen: the host runs the call after the sentry lets it go (a
	// continued notification, a stop resumed without an exit stop), and
	// its result never reaches the sentry: it is not known to be an
	// error or not, as strace would know.
	Unseen
	// Deferred: the host runs the call and its result reaches the
	// sentry later, in a record of its own (the exit stop of a rewrite,
	// the install call of an open).
	Deferred
)

// installSlot is where the install call is counted.
const installSlot = MaxSysno

// Start is the time a trapped call's service begins (zero for nil).
func (s *Stats) Start() time.Time {
	if s == nil {
		return time.Time{}
	}
	return time.Now()
}

// Done records a service of sysno that began at start; ret is the guest's
// result when the outcome is Answered (a value or -errno), errors counting
// those below 0. newCall is false for the second half of a call (a
// rewritten call's exit stop), which adds time but not a call.
func (s *Stats) Done(sysno uintptr, start time.Time, ret int64, o Outcome, newCall bool) {
	if s == nil {
		return
	}
	i := sysno
	if sysno == SysInstallFD {
		i = installSlot
	} else if sysno >= MaxSysno {
		return
	}
	s.nanos[i].Add(uint64(time.Since(start)))
	if newCall {
		s.calls[i].Add(1)
		if o == Unseen {
			s.unseen[i].Add(1)
		}
	}
	if o == Answered && ret < 0 {
		s.errors[i].Add(1)
	}
}

// Entry is one syscall's figures.
type Entry struct {
	Sysno  uintptr // SysInstallFD for the install call
	Calls  uint64
	Errors uint64
	// Unseen counts the calls whose result the sentry never saw (the
	// host ran them): Errors cannot count theirs.
	Unseen uint64
	Time   time.Duration
}

// Entries lists the syscalls served at least once.
func (s *Stats) Entries() []Entry {
	if s == nil {
		return nil
	}
	var out []Entry
	for i := range s.calls {
		if c := s.calls[i].Load(); c > 0 {
			nr := uintptr(i)
			if i == installSlot {
				nr = SysInstallFD
			}
			out = append(out, Entry{Sysno: nr, Calls: c, Errors: s.errors[i].Load(), Unseen: s.unseen[i].Load(), Time: time.Duration(s.nanos[i].Load())})
		}
	}
	return out
}
