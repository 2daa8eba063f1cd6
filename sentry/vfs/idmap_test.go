package vfs

import "testing"

func TestMapsAll(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    IDMap
		want bool
	}{
		{"every id", IDMap{{0, 1<<32 - 1}}, true},
		{"every id but the sentries' uid", IDMap{{0, 1<<32 - 2}}, true},
		{"every id but 0", IDMap{{1, 1<<32 - 2}}, false},
		{"every id but one in the middle", IDMap{{0, 1000}, {1001, 1<<32 - 1002}}, false},
		{"two lines, every id", IDMap{{0, 1000}, {1000, 1<<32 - 1001}}, true},
		{"one id", IDMap{{1000, 1}}, false},
		{"none", nil, false},
	} {
		if got := tc.m.MapsAll(); got != tc.want {
			t.Errorf("%s: MapsAll(%v) = %v, want %v", tc.name, tc.m, got, tc.want)
		}
	}
}
