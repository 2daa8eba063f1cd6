package vfs

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestMayFollowLink(t *testing.T) {
	for _, tc := range []struct {
		fsuid, link, mode, dir uint32
		want                   bool
	}{
		{0, 0, 0o1777, 0, true},          // the follower owns it
		{1000, 1000, 0o1777, 0, true},    // the follower owns it
		{1000, 0, 0o1777, 0, true},       // the directory's owner owns it
		{1000, 1234, 0o1777, 0, false},   // neither, in /tmp
		{0, 1234, 0o1777, 0, false},      // root too
		{1000, 1234, 0o0777, 0, true},    // not sticky
		{1000, 1234, 0o1775, 0, true},    // not world-writable
		{1000, 1234, 0o1777, 1234, true}, // the directory's owner owns it
	} {
		if got := mayFollowLink(tc.fsuid, tc.link, unix.S_IFDIR|tc.mode, tc.dir); got != tc.want {
			t.Errorf("mayFollowLink(%d, %d, %o, %d) = %v", tc.fsuid, tc.link, tc.mode, tc.dir, got)
		}
	}
}
