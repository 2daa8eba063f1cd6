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
	nilStats.Done(1, time.Now(), -1, true, true) // must not panic
	if nilStats.Entries() != nil {
		t.Error("nil Stats has entries")
	}

	s := new(Stats)
	past := time.Now().Add(-time.Millisecond)
	for _, d := range []struct {
		sysno          uintptr
		ret            int64
		known, newCall bool
	}{
		{0, 5, true, true},
		{0, -9, true, true},
		{0, -9, false, true}, // result unknown: not an error
		{0, 0, true, false},  // second half of a call: time, no call
		{SysInstallFD, 3, true, true},
		{MaxSysno, -1, true, true}, // out of range: dropped
		{MaxSysno + 7, -1, true, true},
	} {
		s.Done(d.sysno, past, d.ret, d.known, d.newCall)
	}
	got := map[uintptr]Entry{}
	for _, e := range s.Entries() {
		got[e.Sysno] = e
	}
	if len(got) != 2 {
		t.Fatalf("entries %+v, want read and the install call", got)
	}
	if e := got[0]; e.Calls != 3 || e.Errors != 1 || e.Time < 4*time.Millisecond {
		t.Errorf("read: %+v, want 3 calls, 1 error, >= 4ms", e)
	}
	if e := got[SysInstallFD]; e.Calls != 1 || e.Errors != 0 {
		t.Errorf("install: %+v, want 1 call, no error", e)
	}
}
