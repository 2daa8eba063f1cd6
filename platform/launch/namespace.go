package launch

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The guest's mount namespace. The sentry serves its mount points by
// trapping the calls that name paths, but a path can still reach the host
// behind its back: a host symlink or a magic link (/proc/self/root) the
// kernel follows after the sentry judged the path the host's, a call the
// filter never sees (io_uring), a relative path resolved against a
// working directory the kernel still has under the mount point. So the
// guest runs in a mount namespace of its own in which each sentry mount
// point is covered by an empty tmpfs, read-only, root-owned 0711, a few
// inodes in size: whatever gets past the sentry lands there, never in the
// host's copy of the mount point. Host mounts keep propagating in
// (MS_SLAVE), the guest's never propagate out.
//
// The cover of the shortest mount point also holds the sandbox's private
// directory for the host special files that stand for the sentry's FIFOs,
// sockets and device nodes (sentry/host_specials.go): a tmpfs of its own,
// writable, root-owned 0711, mounted at SpecialDirName. It exists only in
// the guest's namespace (another sandbox has its own; a host user would
// need /proc/PID/root of a guest process, which takes ptrace access to
// it), and it goes with the namespace when the last guest process is gone,
// even when the sentry was killed.

// SpecialDirName is the private directory's name in its cover.
const SpecialDirName = ".sentry-special"

// Sources of the namespace's own mounts, as mount lists show them.
const (
	coverSource   = "sentry-cover"
	specialSource = "sentry-special"
)

// Namespace is what the init stage made of the guest's mount namespace,
// for the sentry.
type Namespace struct {
	// SpecialDir is the sentry's O_PATH descriptor of the private
	// directory for host special files, -1 when there is none (no
	// namespace, or no mount point the host has to cover).
	SpecialDir int
	// SpecialPath is that directory's path in the guest's namespace,
	// which a guest's own call names it by.
	SpecialPath string
	// Hidden are the ids of the mounts the guest must not see in its
	// mount lists: the covers (the sentry's own tmpfs is what the guest
	// sees at each point) and the private directory's.
	Hidden []uint64
}

// handOverMsg is the init stage's message to the sentry: its listener's
// number and what it made of the namespace (descriptor numbers are the
// init stage's own).
type handOverMsg struct {
	Listener    int      `json:"listener"`
	Namespace   bool     `json:"namespace"`
	SpecialDir  int      `json:"special_dir"`
	SpecialPath string   `json:"special_path"`
	Hidden      []uint64 `json:"hidden"`
}

// makeNamespace moves the calling thread (the init stage's main thread,
// whose exec carries the namespace into the guest) into a mount namespace
// of its own with a cover over each of points, and says in msg what it
// made. An error means the thread is still in the host's namespace.
func makeNamespace(points []string, specialInodes uint64, msg *handOverMsg) error {
	if len(points) == 0 {
		return nil
	}
	host, err := unix.Open("/proc/self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /proc/self/ns/mnt: %w", err)
	}
	defer unix.Close(host)
	// CLONE_NEWNS unshares the fs_struct too: the chdir that follows
	// moves this thread only.
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWNS): %w", err)
	}
	if err := coverPoints(points, specialInodes, msg); err != nil {
		// A half-made namespace is no use: back to the host's (the
		// new one and its mounts go with this thread's reference).
		if serr := unix.Setns(host, unix.CLONE_NEWNS); serr != nil {
			fmt.Fprintf(os.Stderr, "sentry: init: %v; and back to the host's mount namespace: %v\n", err, serr)
			os.Exit(ExitSandbox)
		}
		*msg = handOverMsg{Listener: msg.Listener, SpecialDir: -1}
		return err
	}
	msg.Namespace = true
	return nil
}

// cover is one cover made: its mount point and a descriptor of its root
// (the mount's, from fsmount).
type cover struct {
	point string
	root  int
}

// coverPoints makes the covers in the new namespace, the private
// directory in the cover of the shortest point, then makes the covers
// read-only.
func coverPoints(points []string, specialInodes uint64, msg *handOverMsg) error {
	// Every mount made here must stay in this namespace: a mount under
	// a shared one would propagate to the host's peers.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make / a slave mount: %w", err)
	}
	// Parents first (deepest last): a nested point is made inside its
	// parent's cover, which hides the host's copy of it.
	sorted := append([]string(nil), points...)
	sort.Slice(sorted, func(i, j int) bool {
		di, dj := strings.Count(sorted[i], "/"), strings.Count(sorted[j], "/")
		return di < dj || di == dj && sorted[i] < sorted[j]
	})
	var made []cover
	defer func() {
		for _, c := range made {
			unix.Close(c.root)
		}
	}()
	for _, p := range sorted {
		target, err := coverTarget(p, made)
		if err != nil {
			return fmt.Errorf("cover %s: %w", p, err)
		}
		if target < 0 {
			continue
		}
		root, err := newTmpfs(coverSource, coverInodes(p, sorted), unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
		if err == nil {
			err = unix.MoveMount(root, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
			if err != nil {
				unix.Close(root)
				err = fmt.Errorf("move_mount: %w", err)
			}
		}
		unix.Close(target)
		if err != nil {
			return fmt.Errorf("cover %s: %w", p, err)
		}
		made = append(made, cover{point: p, root: root})
	}
	if len(made) == 0 {
		// No point exists on the host: there is nothing of the host's
		// to hide, and no cover to hold the private directory.
		return nil
	}
	home := made[0]
	for _, c := range made[1:] {
		if len(c.point) < len(home.point) {
			home = c
		}
	}
	target, err := makeDir(home.root, SpecialDirName)
	if err != nil {
		return fmt.Errorf("private directory in the cover of %s: %w", home.point, err)
	}
	special, err := newTmpfs(specialSource, specialInodes, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	if err == nil {
		if err = unix.MoveMount(special, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
			unix.Close(special)
		}
	}
	unix.Close(target)
	if err != nil {
		return fmt.Errorf("private directory: %w", err)
	}
	msg.SpecialDir = special
	msg.SpecialPath = home.point + "/" + SpecialDirName
	id, err := mountID(special)
	if err != nil {
		return err
	}
	msg.Hidden = append(msg.Hidden, id)
	for _, c := range made {
		if err := unix.MountSetattr(c.root, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("cover %s read-only: %w", c.point, err)
		}
		id, err := mountID(c.root)
		if err != nil {
			return err
		}
		msg.Hidden = append(msg.Hidden, id)
	}
	return nil
}

// coverTarget opens the directory point's cover goes on: inside the cover
// of its deepest covered ancestor, made there (mode 0711); else the
// host's, which must be a directory (not a symlink: the sentry serves the
// name, and a cover on the symlink's target would hide a host directory
// the sentry passes through). -1 when the host has nothing to cover.
func coverTarget(point string, made []cover) (int, error) {
	var parent *cover
	for i := range made {
		c := &made[i]
		if strings.HasPrefix(point, c.point+"/") && (parent == nil || len(c.point) > len(parent.point)) {
			parent = c
		}
	}
	if parent == nil {
		fd, err := unix.Open(point, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch err {
		case nil:
			return fd, nil
		case unix.ENOENT, unix.ENOTDIR, unix.ELOOP, unix.EACCES:
			return -1, nil
		}
		return -1, err
	}
	dir := parent.root
	for _, comp := range strings.Split(point[len(parent.point)+1:], "/") {
		next, err := makeDir(dir, comp)
		if dir != parent.root {
			unix.Close(dir)
		}
		if err != nil {
			return -1, err
		}
		dir = next
	}
	return dir, nil
}

// makeDir makes directory name in dir (mode 0711 whatever the umask, which
// the guest inherits and so is left alone) and opens it O_PATH.
func makeDir(dir int, name string) (int, error) {
	if err := unix.Mkdirat(dir, name, 0o711); err != nil && err != unix.EEXIST {
		return -1, fmt.Errorf("mkdir %s: %w", name, err)
	}
	if err := unix.Fchmodat(dir, name, 0o711, 0); err != nil {
		return -1, fmt.Errorf("chmod %s: %w", name, err)
	}
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", name, err)
	}
	return fd, nil
}

// coverInodes is the cover of point's nr_inodes: its root, the private
// directory, and a directory per component of each point below it.
func coverInodes(point string, points []string) uint64 {
	n := uint64(2)
	for _, q := range points {
		if rest, ok := strings.CutPrefix(q, point+"/"); ok {
			n += uint64(strings.Count(rest, "/") + 1)
		}
	}
	return n
}

// newTmpfs makes a tmpfs, root-owned 0711, mounted nowhere yet, with
// nr_inodes inodes (0: unlimited) and no room for data (its files are
// directories and special files), and returns its mount's root.
func newTmpfs(source string, inodes uint64, attrs int) (int, error) {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen(tmpfs): %w", err)
	}
	defer unix.Close(fsfd)
	for _, o := range [][2]string{{"source", source}, {"mode", "0711"}, {"size", "4k"}, {"nr_inodes", strconv.FormatUint(inodes, 10)}} {
		if err := unix.FsconfigSetString(fsfd, o[0], o[1]); err != nil {
			return -1, fmt.Errorf("fsconfig(%s=%s): %w", o[0], o[1], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("fsconfig(FSCONFIG_CMD_CREATE): %w", err)
	}
	root, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, attrs)
	if err != nil {
		return -1, fmt.Errorf("fsmount: %w", err)
	}
	return root, nil
}

// mountID is the id mount lists show for the mount fd is the root of.
func mountID(fd int) (uint64, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx); err != nil {
		return 0, fmt.Errorf("statx(STATX_MNT_ID): %w", err)
	}
	return stx.Mnt_id, nil
}
