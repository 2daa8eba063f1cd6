package sentry

import (
	"testing"

	"sentry/sentry/vfs"
)

func TestParsePtraceCreds(t *testing.T) {
	for _, tc := range []struct {
		name, status string
		want         ptraceCreds
		ok           bool
	}{
		{"all lines", "Name:\tsh\nUid:\t1\t2\t3\t4\nGid:\t5\t6\t7\t8\nCapInh:\t0\nCapPrm:\t00000000a80425fb\nCapEff:\t0\n",
			ptraceCreds{uid: [3]uint32{1, 2, 3}, gid: [3]uint32{5, 6, 7}, permitted: vfs.CapSet(0xa80425fb)}, true},
		{"no CapPrm", "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n", ptraceCreds{}, false},
		{"short Uid", "Uid:\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapPrm:\t0\n", ptraceCreds{}, false},
		{"bad number", "Uid:\tx\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapPrm:\t0\n", ptraceCreds{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parsePtraceCreds(tc.status)
			if ok != tc.ok || ok && got != tc.want {
				t.Errorf("parsePtraceCreds = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
