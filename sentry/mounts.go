package sentry

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// storeDever is a file system whose files' host backings live on one
// host device (fs/tmpfs's store): a guest mapping of one shows it.
type storeDever interface {
	StoreDev() (uint64, bool)
}

// MountBusy reports whether mount m is in use as Linux's
// propagate_mount_busy counts it (umount2 without MNT_DETACH is then
// EBUSY): an open file of it (the sentry's descriptions), a guest's working
// directory in it, or a guest mapping of one of its files whose
// descriptor is closed (/proc/PID/maps names the backing's device).
func (k *Kernel) MountBusy(m *vfs.Mount) bool {
	if m.Busy() {
		return true
	}
	k.mu.Lock()
	fss := make([]*FSContext, 0, len(k.tasks))
	tgids := map[int32]bool{}
	for _, t := range k.tasks {
		fss = append(fss, t.fs.Load())
		tgids[t.TG.TGID] = true
	}
	k.mu.Unlock()
	for _, f := range fss {
		if f != nil && f.Cwd().Mount == m {
			return true
		}
	}
	sd, ok := m.FS.(storeDever)
	if !ok {
		return false
	}
	dev, ok := sd.StoreDev()
	if !ok {
		return false
	}
	want := strconv.FormatUint(uint64(unix.Major(dev)), 16)
	want = strings.Repeat("0", max(0, 2-len(want))) + want + ":"
	min := strconv.FormatUint(uint64(unix.Minor(dev)), 16)
	want += strings.Repeat("0", max(0, 2-len(min))) + min
	for tgid := range tgids {
		if mapsDevice(tgid, want) {
			return true
		}
	}
	return false
}

// mapsDevice reports a mapping of process tgid of a file on device dev
// ("00:2b", as /proc/PID/maps writes it).
func mapsDevice(tgid int32, dev string) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(int(tgid)) + "/maps")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) >= 4 && fields[3] == dev {
			return true
		}
	}
	return false
}
