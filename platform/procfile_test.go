package platform

import "testing"

func TestProcNumber(t *testing.T) {
	status := []byte("Name:\tsh\nUmask:\t0022\nTgid:\t4349\nNgid:\t0\nPid:\t4351\nPPid:\t1\n")
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"Tgid", 4349},
		{"Pid", 4351},
		{"PPid", 1},
		{"Ngid", 0},
		{"Gid", 0},    // no such line: "Ngid:" must not match
		{"Name", 0},   // not a number
		{"Tracer", 0}, // absent
	} {
		if got := ProcNumber(status, tc.key); got != tc.want {
			t.Errorf("ProcNumber(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}
