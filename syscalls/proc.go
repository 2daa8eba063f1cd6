package syscalls

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sentry/sentry"
	"sentry/sentry/vfs"
)

// procMountsFile recognizes the /proc files that list mounts. The guest
// must see the sentry's mounts there, as it would see a real tmpfs, so
// that df, findmnt and stat -f find them.
func procMountsFile(c *sentry.Call, p string) (hostPath string, mountinfo, ok bool) {
	if !strings.HasPrefix(p, "/proc/") {
		return "", false, false
	}
	rest := p[len("/proc/"):]
	if rest == "mounts" {
		rest = "self/mounts"
	}
	who, file, found := strings.Cut(rest, "/")
	if task, ok := strings.CutPrefix(file, "task/"); ok {
		// /proc/PID/task/TID/mounts, as the walk names thread-self's.
		if _, f, ok := strings.Cut(task, "/"); ok {
			file = f
		}
	}
	if !found || (file != "mounts" && file != "mountinfo") {
		return "", false, false
	}
	if who != "self" && who != "thread-self" {
		n, err := strconv.Atoi(who)
		if err != nil || (int32(n) != c.TID && int32(n) != c.TG.TGID) {
			return "", false, false
		}
	}
	return "/proc/" + strconv.Itoa(int(c.TID)) + "/" + file, file == "mountinfo", true
}

// mountsFileContents is the host's list with the sentry's mounts added
// last (so they shadow what the host has at the same point, as a mount on
// top does), in the mountinfo or mounts format.
func mountsFileContents(c *sentry.Call, hostPath string, mountinfo bool) ([]byte, error) {
	data, err := os.ReadFile(hostPath)
	if err != nil {
		return nil, unix.EIO
	}
	var b strings.Builder
	if hidden := c.Kernel().HiddenMounts(); len(hidden) > 0 {
		writeShown(&b, data, hidden, mountinfo, strings.TrimSuffix(hostPath, "mounts")+"mountinfo")
	} else {
		b.Write(data)
	}
	for _, m := range c.Kernel().VFS.Mounts() {
		var st unix.Stat_t
		m.Root.Inode().Stat(&st)
		if mountinfo {
			// ID PARENT MAJ:MIN ROOT POINT OPTS - TYPE SOURCE SUPER
			b.WriteString(strconv.FormatUint(m.ID, 10) + " 1 " +
				strconv.FormatUint(uint64(unix.Major(st.Dev)), 10) + ":" + strconv.FormatUint(uint64(unix.Minor(st.Dev)), 10) +
				" / " + m.Point + " " + m.Options + " - tmpfs " + m.Source + " " + m.SuperOptions + "\n")
		} else {
			b.WriteString(m.Source + " " + m.Point + " tmpfs " + m.SuperOptions + ",nosuid,nodev,relatime 0 0\n")
		}
	}
	mountInfoLines(&b, c.Kernel().VFS, mountinfo)
	return []byte(b.String()), nil
}

// openProcMounts serves an open of a mounts list: a fresh unlinked file
// in the scratch file system holding the contents, opened read-only
// through the ordinary placeholder path.
func openProcMounts(c *sentry.Call, hostPath string, mountinfo bool, flags uint32) sentry.Result {
	if flags&unix.O_ACCMODE != unix.O_RDONLY || flags&(unix.O_CREAT|unix.O_TRUNC) != 0 {
		return sentry.Err(unix.EACCES)
	}
	scratch := c.Kernel().Opts.Scratch
	if scratch == nil {
		return sentry.Pass()
	}
	data, err := mountsFileContents(c, hostPath, mountinfo)
	if err != nil {
		return sentry.ErrOf(err)
	}
	root := &vfs.Credentials{}
	name := "mounts-" + strconv.Itoa(int(c.TID))
	d, err := scratch.Root.Create(name, 0444, root)
	if err != nil {
		return sentry.ErrOf(err)
	}
	// The description keeps the unlinked file alive.
	d.Inode().IncRef()
	defer d.Inode().DecRef()
	scratch.Root.Unlink(name, root)
	if _, err := d.Inode().WriteAt(data, 0, root); err != nil {
		return sentry.ErrOf(err)
	}
	return installOpen(c, scratch, d, flags&^unix.O_DIRECTORY, nil)
}

// writeShown writes the kernel's list less the lines of the guest
// namespace's own mounts (ids hidden): the covers over the sentry's mount
// points, where the guest must see the sentry's tmpfs alone, and the
// private directory's (platform/launch/namespace.go). The mounts format
// has no ids: its lines are matched by source, point and type with the
// hidden lines of mountinfo (read from infoPath), which lists the same
// mounts.
func writeShown(b *strings.Builder, data []byte, hidden []uint64, mountinfo bool, infoPath string) {
	isHidden := func(id string) bool {
		n, err := strconv.ParseUint(id, 10, 64)
		return err == nil && slices.Contains(hidden, n)
	}
	var hide map[string]bool
	if !mountinfo {
		info, _ := os.ReadFile(infoPath)
		hide = map[string]bool{}
		for line := range strings.Lines(string(info)) {
			// ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - TYPE SOURCE SUPER
			f := strings.Fields(line)
			if sep := slices.Index(f, "-"); len(f) > 4 && sep > 0 && sep+2 < len(f) && isHidden(f[0]) {
				hide[f[sep+2]+" "+f[4]+" "+f[sep+1]] = true
			}
		}
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) > 2 && (mountinfo && isHidden(f[0]) || !mountinfo && hide[f[0]+" "+f[1]+" "+f[2]]) {
			continue
		}
		b.WriteString(line)
	}
}
