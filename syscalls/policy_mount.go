package syscalls

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// The mount family and the other calls that name a file system object by
// path or descriptor for the kernel to hold on to (a mount, a quota file,
// a mark, a handle). The sentry models none of them on its files: a path
// that leads to a sentry file fails with errUnserved, one that stays on
// the host passes through with the host path the sentry resolved, so the
// kernel's stale working directory (the guest chdir'd into a sentry
// mount, the kernel's cwd stayed where it was) never decides where a
// mount lands.

// mount(2) flags (linux/mount.h) that decide which arguments are paths
// (path_mount).
const (
	msRemount     = 0x20
	msBind        = 0x1000
	msMove        = 0x2000
	msUnbindable  = 1 << 17
	msPrivate     = 1 << 18
	msSlave       = 1 << 19
	msShared      = 1 << 20
	msMgcVal      = 0xC0ED0000
	msMgcMsk      = 0xffff0000
	msPropagation = msShared | msPrivate | msSlave | msUnbindable
)

// Mount is mount(source, target, fstype, flags, data). The target is
// always a path (followed). The source is one for a bind and a move, and
// for a new mount of a file system that needs a device (lookup_bdev);
// overlay's layers are paths inside data.
func Mount(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	flags := uint64(args[3])
	if flags&msMgcMsk == msMgcVal {
		flags &^= msMgcMsk
	}
	if res, ok := hostPathAt(c, unix.AT_FDCWD, args[1], true, false); !ok {
		return res
	}
	source := false
	switch {
	case flags&msRemount != 0:
	case flags&msBind != 0:
		source = true
	case flags&msPropagation != 0:
	case flags&msMove != 0:
		source = true
	case args[2] == 0:
		// A new mount without a type: EINVAL from the host
		// (do_new_mount), before any path.
	default:
		fstype, err := c.ReadPath(args[2])
		if err != nil {
			return sentry.ErrOf(err)
		}
		typ := string(fstype)
		source = args[0] != 0 && fsNeedsDevice(typ)
		if typ == "overlay" && args[4] != 0 {
			if res, ok := overlayLayers(c, args[4]); !ok {
				return res
			}
		}
	}
	if source {
		if res, ok := hostPathAt(c, unix.AT_FDCWD, args[0], true, false); !ok {
			return res
		}
	}
	return sentry.Pass()
}

// fsNeedsDevice reports whether file system type typ takes a block device
// path as its source: /proc/filesystems marks the others "nodev". A type
// not listed may be a module the kernel loads on demand: its source is
// treated as a path.
func fsNeedsDevice(typ string) bool {
	data, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(data), "\n") {
		flag, name, ok := strings.Cut(line, "\t")
		if ok && name == typ {
			return flag != "nodev"
		}
	}
	return true
}

// overlayPathKeys are the overlay options whose values are paths:
// ':'-separated layers for lowerdir ("::" before data-only layers),
// single paths for the others.
var overlayPathKeys = map[string]bool{
	"lowerdir": true, "upperdir": true, "workdir": true, "datadir": true,
	"lowerdir+": true, "datadir+": true,
}

// overlayLayers checks the layer paths in overlay's mount data (the
// options string, ',' separated, '\' escaping the separators, as
// ovl_next_opt and ovl_parse_param_split_lowerdirs read it).
func overlayLayers(c *sentry.Call, addr uintptr) (sentry.Result, bool) {
	data, err := c.ReadPath(addr)
	if err != nil {
		// Longer than the page the kernel copies, or unreadable: the
		// sentry cannot check what the host would read.
		return sentry.Err(errUnserved), false
	}
	for _, opt := range splitEscaped(string(data), ',') {
		key, val, ok := strings.Cut(opt, "=")
		if !ok || !overlayPathKeys[key] {
			continue
		}
		if res, ok := overlayPaths(c, val, key == "lowerdir"); !ok {
			return res, false
		}
	}
	return sentry.Pass(), true
}

// overlayPaths checks one option value: a list of layers for lowerdir.
func overlayPaths(c *sentry.Call, val string, list bool) (sentry.Result, bool) {
	layers := []string{val}
	if list {
		layers = splitEscaped(val, ':')
	}
	for _, l := range layers {
		if l == "" {
			// "::" separates the data-only layers.
			continue
		}
		if res, ok := hostStringAsIs(c, unescape(l), true); !ok {
			return res, false
		}
	}
	return sentry.Pass(), true
}

// splitEscaped splits s at sep where sep is not escaped by '\'; the
// escapes stay.
func splitEscaped(s string, sep byte) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// unescape drops the '\' escapes.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b = append(b, s[i])
	}
	return string(b)
}

// umountNoFollow is UMOUNT_NOFOLLOW.
const umountNoFollow = 0x8

// Umount2 is umount2(target, flags).
func Umount2(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	res, _ := hostPathAt(c, unix.AT_FDCWD, args[0], uint32(args[1])&umountNoFollow == 0, false)
	return res
}

// PivotRoot is pivot_root(new_root, put_old): two directories, followed.
func PivotRoot(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	for _, a := range args[:2] {
		if res, ok := hostPathAt(c, unix.AT_FDCWD, a, true, false); !ok {
			return res
		}
	}
	return sentry.Pass()
}

// OpenTree is open_tree(dfd, path, flags) and open_tree_attr(dfd, path,
// flags, attr, size): AT_EMPTY_PATH, AT_SYMLINK_NOFOLLOW. A virtual dfd
// with an empty path would clone a mount of its placeholder.
func OpenTree(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return dfdPathFlags(c, args, unix.AT_SYMLINK_NOFOLLOW, unix.AT_EMPTY_PATH)
}

// dfdPathFlags guards a call of (dfd, path, flags) whose flags say not to
// follow the last symlink (noFollow) or that an empty path is dfd
// (empty).
func dfdPathFlags(c *sentry.Call, args *platform.SyscallArgs, noFollow, empty uint32) sentry.Result {
	flags := uint32(args[2])
	return hostPathOrEmpty(c, int32(args[0]), args[1], flags&noFollow == 0, flags&empty != 0)
}

// move_mount(2) flags.
const (
	moveMountFSymlinks  = 0x1
	moveMountFEmptyPath = 0x4
	moveMountTSymlinks  = 0x10
	moveMountTEmptyPath = 0x40
)

// MoveMount is move_mount(from_dfd, from_path, to_dfd, to_path, flags):
// both ends are (dfd, path), followed only with the *_SYMLINKS flags.
func MoveMount(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	flags := uint32(args[4])
	if res := hostPathOrEmpty(c, int32(args[0]), args[1], flags&moveMountFSymlinks != 0, flags&moveMountFEmptyPath != 0); res.Action != platform.Passthrough {
		return res
	}
	return hostPathOrEmpty(c, int32(args[2]), args[3], flags&moveMountTSymlinks != 0, flags&moveMountTEmptyPath != 0)
}

// fspick(2) flags.
const (
	fspickSymlinkNoFollow = 0x2
	fspickEmptyPath       = 0x8
)

// Fspick is fspick(dfd, path, flags): a virtual dfd would pick the
// superblock of its placeholder's file system.
func Fspick(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return dfdPathFlags(c, args, fspickSymlinkNoFollow, fspickEmptyPath)
}

// MountSetattr is mount_setattr(dfd, path, flags, attr, size).
func MountSetattr(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return dfdPathFlags(c, args, unix.AT_SYMLINK_NOFOLLOW, unix.AT_EMPTY_PATH)
}

// fsconfig(2) commands.
const (
	fsconfigSetString    = 1
	fsconfigSetPath      = 3
	fsconfigSetPathEmpty = 4
	fsconfigSetFD        = 5
)

// fsconfigPathKeys are parameters whose string values are paths: a
// device ("source", ext4's "journal_path") or overlay's layers.
var fsconfigPathKeys = map[string]bool{"source": true, "journal_path": true}

// Fsconfig is fsconfig(fd, cmd, key, value, aux): SET_PATH and
// SET_PATH_EMPTY name an object by (aux, value), SET_FD by descriptor aux,
// and a string value of a path parameter is a path the file system looks
// up itself.
func Fsconfig(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	switch args[1] {
	case fsconfigSetPath, fsconfigSetPathEmpty:
		return hostPathOrEmpty(c, int32(args[4]), args[3], true, args[1] == fsconfigSetPathEmpty)
	case fsconfigSetFD:
		return hostFD(c, int32(args[4]), errUnserved)
	case fsconfigSetString:
		key, err := c.ReadPath(args[2])
		if err != nil {
			// Never a pass: the host might read what the sentry could
			// not.
			return sentry.ErrOf(err)
		}
		k := string(key)
		if !fsconfigPathKeys[k] && !overlayPathKeys[k] {
			return sentry.Pass()
		}
		val, err := c.ReadPath(args[3])
		if err != nil {
			return sentry.ErrOf(err)
		}
		res, _ := overlayPaths(c, string(val), k == "lowerdir")
		return res
	}
	return sentry.Pass()
}

// quotactl(2) sub-commands that take a path (QCMD(cmd, type) >> 8).
const qQuotaon = 0x800002

// Quotactl is quotactl(cmd, special, id, addr): special names the block
// device (or, NULL, all for Q_SYNC), and Q_QUOTAON's addr the quota file.
// A special in the sentry's tmpfs is Linux's quotactl_block on a tmpfs
// file: ENOENT if missing, ENOTBLK if not a block device (a device node
// made there is not modelled: errUnserved). A quota file there, for a
// host device, is on another file system: EXDEV from quota_on after the
// CAP_SYS_ADMIN check (check_quotactl_permission).
func Quotactl(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if args[1] != 0 {
		res := onSentryFile(c, args[1], true, func(mode uint32) unix.Errno {
			if mode&unix.S_IFMT == unix.S_IFBLK {
				return errUnserved
			}
			return unix.ENOTBLK
		})
		if res.Action != platform.Passthrough {
			return res
		}
	}
	if uint32(args[0])>>8 == qQuotaon {
		res := onSentryFile(c, args[3], true, func(uint32) unix.Errno {
			if !c.Creds().Capable(vfs.CapSysAdmin) {
				return unix.EPERM
			}
			return unix.EXDEV
		})
		if res.Action != platform.Passthrough {
			return res
		}
	}
	return sentry.Pass()
}

// QuotactlFD is quotactl_fd(fd, cmd, id, addr): on a virtual fd, Linux's
// answer for a tmpfs mounted without quota options (the sentry's mounts
// have none): EINVAL for a type past MAXQUOTAS, else ENOSYS (do_quotactl:
// no s_qcop).
func QuotactlFD(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if !c.FDTable().Has(int32(args[0])) {
		return sentry.Pass()
	}
	if uint32(args[1])&0xff >= 3 {
		return sentry.Err(unix.EINVAL)
	}
	return sentry.Err(unix.ENOSYS)
}

// fanotify_mark(2) flags.
const (
	fanMarkDontFollow = 0x4
	fanMarkFlush      = 0x80
)

// FanotifyMark is fanotify_mark(fd, flags, mask, dirfd, path): the object
// is (dirfd, path), or dirfd itself with a NULL path; FAN_MARK_FLUSH
// names none.
func FanotifyMark(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	flags := uint32(args[1])
	if flags&fanMarkFlush != 0 {
		return sentry.Pass()
	}
	if args[4] == 0 {
		return hostFD(c, int32(args[3]), errUnserved)
	}
	res, _ := hostPathAt(c, int32(args[3]), args[4], flags&fanMarkDontFollow == 0, false)
	return res
}

// OpenByHandleAt is open_by_handle_at(mount_fd, handle, flags): the handle
// is decoded on mount_fd's file system (the working directory's for
// AT_FDCWD); on a placeholder's, it would open files of the host's
// /dev/shm the guest never named.
func OpenByHandleAt(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return hostDirFD(c, int32(args[0]))
}
