package tmpfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Ledger shares the host's memory among the default-sized mounts of the
// sandboxes that run at once. Linux gives a tmpfs mounted without size=
// half of RAM, and a file's data lives in host memory here too (the store
// is a host tmpfs): two sandboxes each filling such a default would take
// all of RAM and end in the host's OOM killer, where a guest must get
// ENOSPC. So a default-sized mount gets half of the RAM that the running
// sandboxes' default-sized mounts have not already been promised: the
// first one Linux's own default (RAM/2), the next a quarter, and so on;
// together they never reach RAM. Each promise is a file in Dir named after
// the sentry's pid (with its start time, so that a reused pid does not keep
// a dead sandbox's promise), removed when the mount is released; a
// killed sentry's is removed by the next reservation.
type Ledger struct {
	// Dir holds the promises ("" keeps no ledger: each default is half
	// of RAM, as Linux's).
	Dir string
}

// DefaultLedgerDir is the host-wide ledger of sentries run as root.
const DefaultLedgerDir = "/run/sentry-ledger"

// reserve promises a default-sized mount its size, in pages, out of
// ramPages, and returns it with the function that takes the promise back.
func (l Ledger) reserve(ramPages uint64) (uint64, func(), error) {
	half := ramPages / 2
	if l.Dir == "" || ramPages == 0 {
		return half, func() {}, nil
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return 0, nil, fmt.Errorf("ledger %s: %w", l.Dir, err)
	}
	lock, err := os.OpenFile(filepath.Join(l.Dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return 0, nil, fmt.Errorf("ledger: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return 0, nil, fmt.Errorf("ledger: lock: %w", err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	entries, err := os.ReadDir(l.Dir)
	if err != nil {
		return 0, nil, fmt.Errorf("ledger: %w", err)
	}
	var promised uint64
	for _, e := range entries {
		name := e.Name()
		pid, start, ok := parsePromiseName(name)
		if !ok {
			continue
		}
		if processStart(pid) != start {
			// The sentry that promised it is gone (killed).
			os.Remove(filepath.Join(l.Dir, name))
			continue
		}
		b, err := os.ReadFile(filepath.Join(l.Dir, name))
		if err != nil {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			promised += n
		}
	}
	pages := half
	if promised < ramPages {
		pages = min(half, (ramPages-promised)/2)
	} else {
		pages = 0
	}
	if pages == 0 {
		// Nothing left to promise: the mount still gets a page, so
		// that it exists and a guest gets ENOSPC, not a failure to
		// start.
		pages = 1
	}
	f, err := os.CreateTemp(l.Dir, promisePrefix())
	if err != nil {
		return 0, nil, fmt.Errorf("ledger: %w", err)
	}
	name := f.Name()
	_, werr := f.WriteString(strconv.FormatUint(pages, 10) + "\n")
	f.Close()
	if werr != nil {
		os.Remove(name)
		return 0, nil, fmt.Errorf("ledger: %w", werr)
	}
	return pages, func() { os.Remove(name) }, nil
}

// promisePrefix names this process's promises: "PID-START-" and a random
// suffix (one per mount).
func promisePrefix() string {
	pid := os.Getpid()
	return strconv.Itoa(pid) + "-" + strconv.FormatUint(processStart(pid), 10) + "-"
}

func parsePromiseName(name string) (int, uint64, bool) {
	f := strings.SplitN(name, "-", 3)
	if len(f) != 3 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	return pid, start, err1 == nil && err2 == nil && pid > 0
}

// processStart is pid's start time (field 22 of /proc/PID/stat, in clock
// ticks since boot), 0 if there is no such process.
func processStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start after its last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}
