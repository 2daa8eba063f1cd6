package platform

import (
	"strconv"
	"strings"
)

// ProcNumber is the decimal number on the line "key:" of a /proc file of
// key-value lines (/proc/PID/status, /proc/PID/fdinfo/N), 0 if there is
// none.
func ProcNumber(data []byte, key string) int {
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
