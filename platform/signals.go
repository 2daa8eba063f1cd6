package platform

import (
	"bytes"
	"os"
	"strconv"
)

// stopSignals are SIGSTOP, SIGTSTP, SIGTTIN and SIGTTOU as mask bits: by
// default they stop the process, which interrupts a blocked call.
const stopSignals = 1<<(19-1) | 1<<(20-1) | 1<<(21-1) | 1<<(22-1)

// PendingInterrupt reports whether thread tid has a signal pending that
// interrupts a blocked interruptible call (Linux's signal_pending in, say,
// a FIFO's wait_for_partner): pending for the thread or its process, not
// blocked by the thread, and caught by a handler or stopping by default.
// A signal ignored by default would only restart the call unseen, and a
// fatal one ends the wait itself (the kernel wakes a killable wait for
// it). shared says the signal is pending only for the process, where
// another thread may take it (complete_signal chose which). An error
// (the thread is gone) is no interrupt.
func PendingInterrupt(tid int32) (interrupt, shared bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(int(tid)) + "/status")
	if err != nil {
		return false, false
	}
	var pnd, shd, blk, ign, cgt uint64
	threads := 0
	for line := range bytes.Lines(data) {
		name, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		val = bytes.TrimSpace(val)
		var dst *uint64
		switch string(name) {
		case "SigPnd":
			dst = &pnd
		case "ShdPnd":
			dst = &shd
		case "SigBlk":
			dst = &blk
		case "SigIgn":
			dst = &ign
		case "SigCgt":
			dst = &cgt
		case "Threads":
			threads, _ = strconv.Atoi(string(val))
			continue
		default:
			continue
		}
		*dst, _ = strconv.ParseUint(string(val), 16, 64)
	}
	interrupting := (cgt | stopSignals&^ign) &^ blk
	if pnd&interrupting != 0 {
		return true, false
	}
	if shd&interrupting != 0 {
		// The only thread is the one complete_signal woke.
		return true, threads != 1
	}
	return false, false
}
