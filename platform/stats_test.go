package platform

import (
	"testing"
	"time"
)

func TestStats(t *testing.T) {
	var nilStats *Stats
	if !nilStats.Start().IsZero() {
		t.Error("nil Stats started a clock")
	}
	nilStats.Done(1, time.Now(), -1, Answered, true) // must not panic
	if nilStats.Entries() != nil {
		t.Error("nil Stats has entries")
	}

	s := new(Stats)
	past := time.Now().Add(-time.Millisecond)
	for _, d := range []struct {
		sysno   uintptr
		ret     int64
		outcome Outcome
		newCall bool
	}{
		{0, 5, Answered, true},
		{0, -9, Answered, true},
		{0, -9, Unseen, true},    // the host ran it: not an error, unseen
		{0, -9, Deferred, true},  // its result comes in the next record
		{0, -4, Answered, false}, // that record, the second half: time and an error, no call
		{SysInstallFD, 3, Answered, true},
		{MaxSysno, -1, Answered, true}, // out of range: dropped
		{MaxSysno + 7, -1, Answered, true},
	} {
		s.Done(d.sysno, past, d.ret, d.outcome, d.newCall)
	}
	got := map[uintptr]Entry{}
	for _, e := range s.Entries() {
		got[e.Sysno] = e
	}
	if len(got) != 2 {
		t.Fatalf("entries %+v, want read and the install call", got)
	}
	if e := got[0]; e.Calls != 4 || e.Errors != 2 || e.Unseen != 1 || e.Time < 5*time.Millisecond {
		t.Errorf("read: %+v, want 4 calls, 2 errors, 1 unseen, >= 5ms", e)
	}
	if e := got[SysInstallFD]; e.Calls != 1 || e.Errors != 0 || e.Unseen != 0 {
		t.Errorf("install: %+v, want 1 call, no error", e)
	}
}
