package platform

import (
	"bytes"
	"os"
	"strconv"
)

// SentryUID is the real and saved uid of a root sentry once its guest is
// started (launch.TakeSentryUID): 4294967294, the last valid id, which
// the guest's user namespace leaves unmapped (launch/userns.go), so that
// no guest can take it. Linux lets a task signal another when its real
// or effective uid is the target's real or saved uid (kill_ok_by_cred),
// or with CAP_KILL over the target's user namespace; a root guest's uid
// is 0, and a sentry's 0 would let it kill any sandbox's sentry, which
// holds that sandbox's tmpfs. With this uid no guest's kill, tkill,
// tgkill, sigqueue, pidfd_send_signal or prlimit reaches a sentry; the
// sentry keeps its effective uid 0 and its capabilities.
const SentryUID = 1<<32 - 2

// IsSentry reports whether process (or thread) pid runs with SentryUID as
// its real or saved uid, as every root sentry does once its guest runs.
// A process that is gone is not.
func IsSentry(pid int32) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/status")
	if err != nil {
		return false
	}
	for line := range bytes.Lines(data) {
		val, ok := bytes.CutPrefix(line, []byte("Uid:"))
		if !ok {
			continue
		}
		// Real, effective, saved, filesystem.
		f := bytes.Fields(val)
		if len(f) < 3 {
			return false
		}
		sentry := []byte(strconv.Itoa(SentryUID))
		return bytes.Equal(f[0], sentry) || bytes.Equal(f[2], sentry)
	}
	return false
}

// GroupHoldsSentry reports whether process group pgid has a sentry among
// its members (a guest that shares its sentry's process group, as one
// started from a shell does, always has). It reads every process's stat:
// for the rare calls that name a process group as a signal's target.
func GroupHoldsSentry(pgid int32) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	want := strconv.Itoa(int(pgid))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold anything but
		// ends at the last ')'.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(data[i+1:])
		if len(f) >= 3 && string(f[2]) == want && IsSentry(int32(pid)) {
			return true
		}
	}
	return false
}
