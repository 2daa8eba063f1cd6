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
	calls, errors, nanos [MaxSysno + 1]atomic.Uint64
}

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
// result when known (a value or -errno), errors counting those below 0.
// newCall is false for the second half of a call (a rewritten call's exit
// stop), which adds time but not a call.
func (s *Stats) Done(sysno uintptr, start time.Time, ret int64, known, newCall bool) {
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
	}
	if known && ret < 0 {
		s.errors[i].Add(1)
	}
}

// Entry is one syscall's figures.
type Entry struct {
	Sysno  uintptr // SysInstallFD for the install call
	Calls  uint64
	Errors uint64
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
			out = append(out, Entry{Sysno: nr, Calls: c, Errors: s.errors[i].Load(), Time: time.Duration(s.nanos[i].Load())})
		}
	}
	return out
}
