package sentry

import (
	"maps"
	"slices"
	"testing"

	"sentry/platform"
)

func TestCountersSnapshot(t *testing.T) {
	serve := func(*Call, *platform.SyscallArgs) Result { return Result{} }
	var table SyscallTable
	table[0] = Syscall{Name: "read", Fn: serve}
	table[3] = Syscall{Name: "close", Fn: serve}
	// Named but not trapped: no counters (they would always read 0).
	table[39] = Syscall{Name: "getpid"}

	fixed := []string{CounterCloseSync, CounterCloseDeferred, CounterTaskWorkRun, CounterFstat, CounterFstatatShortcut, CounterFstatatLookup}
	perCall := []string{"syscall.read.emulated", "syscall.read.passthrough", "syscall.close.emulated", "syscall.close.passthrough"}
	tests := []struct {
		name  string
		count func(c *Counters)
		want  map[string]uint64 // besides zeros for fixed and perCall
	}{
		{"all zero", func(*Counters) {}, nil},
		{"paths and calls", func(c *Counters) {
			c.CloseSync.Add(2)
			c.CloseDeferred.Add(3)
			c.TaskWorkRun.Add(4)
			c.Fstat.Add(5)
			c.FstatatShortcut.Add(6)
			c.FstatatLookup.Add(7)
			c.emulated[3].Add(8)
			c.passthrough[0].Add(9)
		}, map[string]uint64{
			"close.sync": 2, "close.deferred": 3, "taskwork.run": 4, "fstat": 5,
			"newfstatat.empty_path_shortcut": 6, "newfstatat.lookup": 7,
			"syscall.close.emulated": 8, "syscall.read.passthrough": 9,
		}},
		// The unotify counters appear only when counted, so a ptrace
		// run's table does not list them.
		{"unotify", func(c *Counters) {
			c.Notified.Add(10)
			c.NotifyRewrite.Add(1)
		}, map[string]uint64{"unotify.notified": 10, "unotify.rewrite_refused": 1}},
		// A count on an untrapped number is not reported.
		{"untrapped", func(c *Counters) { c.emulated[39].Add(1) }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Counters
			tc.count(&c)
			want := map[string]uint64{}
			for _, n := range append(fixed, perCall...) {
				want[n] = 0
			}
			maps.Copy(want, tc.want)
			got := c.Snapshot(&table)
			if !maps.Equal(got, want) {
				keys := slices.Sorted(maps.Keys(got))
				t.Errorf("Snapshot:\n%v (keys %v)\nwant\n%v", got, keys, want)
			}
		})
	}
}
