package syscalls

import (
	"errors"
	"fmt"
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
	if p == "/proc/mounts" {
		p = "/proc/self/mounts"
	}
	_, file, ok := ownProcEntry(c, p)
	if !ok || (file != "mounts" && file != "mountinfo") {
		return "", false, false
	}
	return "/proc/" + strconv.Itoa(int(c.TID)) + "/" + file, file == "mountinfo", true
}

// ownProcEntry splits p, a path in the host's /proc, into the thread of
// the caller's own process it names and the rest: /proc/self,
// /proc/thread-self, the caller's /proc/TID or /proc/TGID, each maybe
// followed by /task/TID of a thread of the process. ok is false for any
// other process's (the kernel's to answer, with its access checks).
func ownProcEntry(c *sentry.Call, p string) (tid int32, rest string, ok bool) {
	rest, found := strings.CutPrefix(p, "/proc/")
	if !found {
		return 0, "", false
	}
	who, rest, found := strings.Cut(rest, "/")
	if !found {
		return 0, "", false
	}
	tid = c.TID
	if who != "self" && who != "thread-self" {
		n, err := strconv.Atoi(who)
		if err != nil || (int32(n) != c.TID && int32(n) != c.TG.TGID) {
			return 0, "", false
		}
	}
	if task, ok := strings.CutPrefix(rest, "task/"); ok {
		t, r, found := strings.Cut(task, "/")
		n, err := strconv.Atoi(t)
		if !found || err != nil {
			return 0, "", false
		}
		if other := c.Kernel().Task(int32(n)); other == nil || other.TG != c.TG {
			return 0, "", false
		}
		tid, rest = int32(n), r
	}
	return tid, rest, true
}

// readErr is the guest's errno for the sentry's failed read of a kernel
// file it serves a view of: otherwise for what befell the file (gone, or
// anything else), but the sentry's own lack of descriptors or memory as
// it is: a guest that used up the sentry's descriptors got EIO for
// /proc/self/mounts, where the kernel's own open says EMFILE.
func readErr(err error, otherwise unix.Errno) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) && (e == unix.EMFILE || e == unix.ENFILE || e == unix.ENOMEM) {
		return e
	}
	return otherwise
}

// mountsFileContents is the host's list with the sentry's mounts added
// last (so they shadow what the host has at the same point, as a mount on
// top does), in the mountinfo or mounts format.
func mountsFileContents(c *sentry.Call, hostPath string, mountinfo bool) ([]byte, error) {
	data, err := os.ReadFile(hostPath)
	if err != nil {
		return nil, readErr(err, unix.EIO)
	}
	var b strings.Builder
	if hidden := c.Kernel().HiddenMounts(); len(hidden) > 0 {
		if err := writeShown(&b, data, hidden, mountinfo, strings.TrimSuffix(hostPath, "mounts")+"mountinfo"); err != nil {
			return nil, readErr(err, unix.EIO)
		}
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

// openProcMounts serves an open of a mounts list.
func openProcMounts(c *sentry.Call, hostPath string, mountinfo bool, flags uint32) sentry.Result {
	return openProcSnapshot(c, flags, func() ([]byte, error) { return mountsFileContents(c, hostPath, mountinfo) })
}

// procFDInfoFile recognizes /proc/PID/fdinfo/N (or
// /proc/PID/task/TID/fdinfo/N) of the caller's own process where N is one
// of its virtual descriptors: the kernel's file there describes the
// placeholder, whose mount and inode are the store's. The description
// comes with a reference (FDTable.Get), which openProcFDInfo drops: it
// keeps the file and its host descriptor while a racing close of N
// releases the table's.
func procFDInfoFile(c *sentry.Call, p string) (hostPath string, file *vfs.FileDescription, ok bool) {
	tid, rest, ok := ownProcEntry(c, p)
	if !ok {
		return "", nil, false
	}
	num, ok := strings.CutPrefix(rest, "fdinfo/")
	if !ok {
		return "", nil, false
	}
	fd, err := strconv.Atoi(num)
	if err != nil || fd < 0 || strconv.Itoa(fd) != num {
		return "", nil, false
	}
	fdt := c.Kernel().FDTableOf(tid)
	if fdt == nil {
		return "", nil, false
	}
	f := fdt.Get(int32(fd))
	if f == nil {
		return "", nil, false
	}
	return "/proc/" + strconv.Itoa(int(tid)) + "/fdinfo/" + num, f, true
}

// fdInfoContents is the kernel's fdinfo of a virtual descriptor's
// placeholder (seq_fdinfo_show: pos, flags, then the file's own lines,
// such as locks) with the store's mount and inode replaced by the
// sandbox's: mnt_id is the sentry mount's, as statx and mountinfo give
// it, ino the file's st_ino, and a lock's MAJ:MIN:INO (lock_get_status)
// the file's st_dev and st_ino, as Linux shows them for a tmpfs file.
func fdInfoContents(hostPath string, f *vfs.FileDescription) ([]byte, error) {
	data, err := os.ReadFile(hostPath)
	if err != nil {
		return nil, readErr(err, unix.ENOENT)
	}
	var st, backing unix.Stat_t
	f.Inode.Stat(&st)
	haveBacking := f.HostFD >= 0 && unix.Fstat(f.HostFD, &backing) == nil
	devIno := func(dev, ino uint64) string {
		return fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), ino)
	}
	var b strings.Builder
	for line := range strings.Lines(string(data)) {
		switch {
		case strings.HasPrefix(line, "mnt_id:\t"):
			line = "mnt_id:\t" + strconv.FormatUint(f.Mount.ID, 10) + "\n"
		case strings.HasPrefix(line, "ino:\t"):
			line = "ino:\t" + strconv.FormatUint(st.Ino, 10) + "\n"
		case strings.HasPrefix(line, "lock:\t") && haveBacking:
			line = strings.Replace(line, " "+devIno(backing.Dev, backing.Ino)+" ", " "+devIno(st.Dev, st.Ino)+" ", 1)
		}
		b.WriteString(line)
	}
	return []byte(b.String()), nil
}

// readOnlyOpen says an open only reads a file: the opens of a /proc file
// the sentry writes itself. Any other (for writing, O_PATH, O_DIRECTORY)
// is the kernel's to answer on its own file (an fdinfo opened for writing
// takes no write, one opened as a directory is ENOTDIR).
func readOnlyOpen(flags uint32) bool {
	return flags&unix.O_ACCMODE == unix.O_RDONLY && flags&(unix.O_CREAT|unix.O_TRUNC|unix.O_PATH|unix.O_DIRECTORY) == 0
}

// openProcFDInfo serves an open of a virtual descriptor's fdinfo and drops
// procFDInfoFile's reference on it.
func openProcFDInfo(c *sentry.Call, hostPath string, f *vfs.FileDescription, flags uint32) sentry.Result {
	defer f.DecRef()
	return openProcSnapshot(c, flags, func() ([]byte, error) { return fdInfoContents(hostPath, f) })
}

// openProcSnapshot serves an open of a /proc file whose contents the
// sentry writes: a fresh unlinked file in the scratch file system holding
// them, opened read-only through the ordinary placeholder path. The
// contents are those of the open, where the kernel's are those of the
// first read (seq_file): a program that changes what the file shows
// between the two sees the earlier state.
func openProcSnapshot(c *sentry.Call, flags uint32, contents func() ([]byte, error)) sentry.Result {
	if flags&unix.O_ACCMODE != unix.O_RDONLY || flags&(unix.O_CREAT|unix.O_TRUNC) != 0 {
		return sentry.Err(unix.EACCES)
	}
	scratch := c.Kernel().Opts.Scratch
	if scratch == nil {
		return sentry.Pass()
	}
	data, err := contents()
	if err != nil {
		return sentry.ErrOf(err)
	}
	root := &vfs.Credentials{}
	name := "proc-" + strconv.Itoa(int(c.TID))
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
// mounts; if it cannot be read, nothing is written: ignoring the error
// showed every hidden line of mounts to a guest that left the sentry one
// descriptor and raced another open for it.
func writeShown(b *strings.Builder, data []byte, hidden []uint64, mountinfo bool, infoPath string) error {
	isHidden := func(id string) bool {
		n, err := strconv.ParseUint(id, 10, 64)
		return err == nil && slices.Contains(hidden, n)
	}
	var hide map[string]bool
	if !mountinfo {
		info, err := os.ReadFile(infoPath)
		if err != nil {
			return err
		}
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
	return nil
}
