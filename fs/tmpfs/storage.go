package tmpfs

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// Storage. A regular file's bytes live in a host file, its backing, and
// nowhere else: the guest's descriptor for the file is an open of the
// backing made by the sentry (OpenHost), so read, write, lseek, pread,
// their vector forms, mmap, fallocate, ftruncate, splice, sendfile,
// copy_file_range and fcntl/flock locks run on the host kernel at native
// speed, exactly once and with Linux's own semantics, without a trap. The
// sentry keeps the namespace and the metadata (names, links, owners,
// permission bits, extended attributes, inode numbers); a regular file's
// size, blocks and times are its backing's.
//
// The backings of one mount live in a private tmpfs of their own, made
// with the new mount API (fsopen, fsmount) and never attached anywhere: no
// path on the host names it, so neither other users nor other sandboxes
// can reach a byte of it, and the kernel frees it with the sentry's last
// descriptor of it (nothing outlives the sandbox, even after SIGKILL). Its
// size= is the mount's, so the host enforces the limit on every write,
// through mappings too (SIGBUS), as Linux's tmpfs does. Inside it, a
// regular file's backing is "r<ino>" and a directory's (what a guest's
// descriptor of the directory opens) "d<ino>", made when first opened.
//
// Without CAP_SYS_ADMIN (a sentry not run as root) the store falls back to
// a private 0700 directory in the host's /dev/shm (or $TMPDIR): the same
// code, but the directory has a name root can see, the size limit is not
// the host's to enforce, and a killed sentry leaves it behind (the next
// sentry sweeps it).
type store struct {
	// root is the store's root directory (the detached mount's, or the
	// private directory's). Immutable.
	root int
	// dir is the private directory's path in the fallback, "" for a
	// detached mount.
	dir string
	// dev is st_dev of the store's file system. Immutable.
	dev uint64
	// anonOnce makes anon, an empty file that O_PATH descriptors of
	// files without a backing (symlinks, FIFOs, sockets, devices) open.
	anonOnce sync.Once
	anonErr  error
	closed   bool
}

// newStore makes a mount's store with the mount's size limit (bytes, 0:
// unlimited).
func newStore(sizeLimit int64) (*store, error) {
	root, err := newDetachedTmpfs(sizeLimit)
	if err == nil {
		return &store{root: root, dev: devOf(root)}, nil
	}
	base := "/dev/shm"
	if st, serr := os.Stat(base); serr != nil || !st.IsDir() {
		base = os.TempDir()
	}
	dir, derr := os.MkdirTemp(base, privateDirPrefix())
	if derr != nil {
		return nil, fmt.Errorf("tmpfs store: detached tmpfs: %v; private directory: %w", err, derr)
	}
	root, derr = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if derr != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("tmpfs store: %s: %w", dir, derr)
	}
	return &store{root: root, dir: dir, dev: devOf(root)}, nil
}

// devOf is st_dev of the file fd is open on.
func devOf(fd int) uint64 {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	return st.Dev
}

// privateDirPrefix names a fallback store directory after the sentry's
// pid, so that a later sentry can tell a killed one's (SweepStores).
func privateDirPrefix() string {
	return "sentry-store-" + strconv.Itoa(os.Getpid()) + "-"
}

// newDetachedTmpfs makes a tmpfs that is mounted nowhere and returns a
// descriptor of its root. nr_inodes is unlimited: the sentry counts inodes
// itself (every type, not only those with a backing). Mode 0700: only the
// sentry opens anything in it, by name relative to the root.
func newDetachedTmpfs(sizeLimit int64) (int, error) {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen(tmpfs): %w", err)
	}
	defer unix.Close(fsfd)
	// size=0 is unlimited, as the mount's own size=0.
	opts := [][2]string{{"mode", "0700"}, {"nr_inodes", "0"}, {"huge", "never"}, {"size", strconv.FormatInt(sizeLimit, 10)}}
	for _, o := range opts {
		if err := unix.FsconfigSetString(fsfd, o[0], o[1]); err != nil {
			return -1, fmt.Errorf("fsconfig(%s=%s): %w", o[0], o[1], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("fsconfig(FSCONFIG_CMD_CREATE): %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return -1, fmt.Errorf("fsmount: %w", err)
	}
	return mfd, nil
}

// release frees the store: the kernel frees a detached tmpfs with its last
// descriptor (the guest's descriptors of backings, and its mappings, keep
// theirs alive until they go); the fallback directory is removed.
func (s *store) release() {
	if s.closed {
		return
	}
	s.closed = true
	unix.Close(s.root)
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// Names in the store. A name is made per call (a few bytes on the stack
// of the caller for most inode numbers) rather than kept in every inode.
func backingName(buf *[24]byte, prefix byte, ino uint64) string {
	b := strconv.AppendUint(append(buf[:0], prefix), ino, 10)
	return string(b)
}

const anonName = "anon"

// createFile makes regular inode i's backing, empty, with i's mode and
// owner (the host's own checks on it, at exec and for the SGID a write
// drops, then agree with the sentry's).
func (s *store) createFile(ino uint64, mode, uid, gid uint32) error {
	var buf [24]byte
	name := backingName(&buf, 'r', ino)
	if err := unix.Mknodat(s.root, name, unix.S_IFREG|mode&07777, 0); err != nil {
		return err
	}
	// mknod applied the umask of the moment (the sentry's, or a guest's
	// another thread acts as): set the bits exactly where it changed
	// them. Each change moves ctime alone, so a file changed here gets
	// its three times set to one current_time after (UTIME_NOW for both
	// does); one left as mknod made it has all four times, btime
	// included, equal already, as Linux's new inode.
	var st unix.Stat_t
	changed := false
	if unix.Fstatat(s.root, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&07777 != mode&07777 {
		if err := unix.Fchmodat(s.root, name, mode&07777, 0); err != nil {
			unix.Unlinkat(s.root, name, 0)
			return err
		}
		changed = true
	}
	if uid != 0 || gid != 0 {
		if err := unix.Fchownat(s.root, name, int(uid), int(gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			unix.Unlinkat(s.root, name, 0)
			return err
		}
		// chown cleared SUID/SGID (the sentry is privileged, but
		// notify_change drops them for a regular file anyway).
		if mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			unix.Fchmodat(s.root, name, mode&07777, 0)
		}
		changed = true
	}
	if changed {
		now := [2]unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
		unix.UtimesNanoAt(s.root, name, now[:], unix.AT_SYMLINK_NOFOLLOW)
	}
	return nil
}

// removeFile drops regular inode ino's backing name; open descriptors and
// mappings of it keep its data, as an unlinked file's.
func (s *store) removeFile(ino uint64) {
	var buf [24]byte
	unix.Unlinkat(s.root, backingName(&buf, 'r', ino), 0)
}

// dirName is directory inode i's backing's name in the store: "d<ino>", or
// "e<ino>" after an odd number of renames of it while watched (moveAlt).
// fs.mu must be held.
func dirName(buf *[24]byte, i *inode) string { return altName(buf, i, 'd', 'e') }

// altName is inode i's store entry's name among two that a rename of the
// file moves it between (altNames): prefix a, or b when alt is set. fs.mu
// must be held.
func altName(buf *[24]byte, i *inode, a, b byte) string {
	if i.alt.Load() {
		return backingName(buf, b, i.ino)
	}
	return backingName(buf, a, i.ino)
}

// moveAlt renames inode i's store entry from its altName to the other one:
// the host raises FS_MOVE_SELF on it, and nothing else. fs.mu must be held
// for writing; every use of the name holds it, so no one sees the entry
// between its names.
func (s *store) moveAlt(i *inode, a, b byte) {
	var from, to [24]byte
	f := altName(&from, i, a, b)
	t := backingName(&to, b, i.ino)
	if i.alt.Load() {
		t = backingName(&to, a, i.ino)
	}
	if unix.Renameat2(s.root, f, s.root, t, unix.RENAME_NOREPLACE) == nil {
		i.alt.Store(!i.alt.Load())
	}
}

// removeAlt removes inode i's store entry that has two names, a watched
// regular file's second name or a stand-in (altNames). fs.mu must be held
// for writing.
func (s *store) removeAlt(i *inode) {
	var buf [24]byte
	if a, b, ok := i.altNames(); ok {
		unix.Unlinkat(s.root, altName(&buf, i, a, b), 0)
	}
}

// removeDir drops directory inode i's backing, if it was made. fs.mu must
// be held.
func (s *store) removeDir(i *inode) {
	var buf [24]byte
	unix.Unlinkat(s.root, dirName(&buf, i), unix.AT_REMOVEDIR)
}

// raiseOn raises event (DNAttrib, DNModify, DNAccess) on name, an entry of
// the store that no one's times or mode are, by the one change of it that
// raises it alone (notify_change): a chmod to mode is FS_ATTRIB, atime
// alone set FS_ACCESS, mtime alone FS_MODIFY. An open of it would show a
// watch an open and a close too.
func (s *store) raiseOn(name string, event, mode uint32) {
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
	switch event {
	case vfs.DNAttrib:
		unix.Fchmodat(s.root, name, mode, 0)
		return
	case vfs.DNAccess:
		ts[0].Nsec = unix.UTIME_NOW
	case vfs.DNModify:
		ts[1].Nsec = unix.UTIME_NOW
	default:
		return
	}
	unix.UtimesNanoAt(s.root, name, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// hostOpenFlags are the open flags a placeholder's open keeps.
const hostOpenFlags = unix.O_ACCMODE | unix.O_APPEND | unix.O_NONBLOCK | unix.O_DSYNC | unix.O_SYNC |
	unix.O_DIRECT | unix.O_NOATIME | unix.O_LARGEFILE | unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW

// openFile opens regular inode ino's backing with flags.
func (s *store) openFile(ino uint64, flags int) (int, error) {
	var buf [24]byte
	// No O_NOFOLLOW nor O_DIRECTORY of the sentry's own: they would show
	// in the guest's F_GETFL (the store holds no symlinks).
	return unix.Openat(s.root, backingName(&buf, 'r', ino), flags|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
}

// truncateFile sets regular inode ino's backing to size by its name, as
// truncate(2): an open of it for the purpose would show a watch of the
// file (inotify) an open and a close that Linux's truncate does not make.
func (s *store) truncateFile(ino uint64, size int64) error {
	var buf [24]byte
	return unix.Truncate("/proc/self/fd/"+strconv.Itoa(s.root)+"/"+backingName(&buf, 'r', ino), size)
}

// openDir opens directory inode ino's backing, an empty host directory
// made on first use, with flags: each open is a description of its own,
// whose offset is the guest's directory offset (getdents, lseek), and
// flock and record locks of different directories do not meet.
func (s *store) openDir(i *inode, flags int) (int, error) {
	var buf [24]byte
	i.fs.mu.RLock()
	defer i.fs.mu.RUnlock()
	name := dirName(&buf, i)
	flags |= unix.O_CLOEXEC | unix.O_NOCTTY
	fd, err := unix.Openat(s.root, name, flags, 0)
	if err == unix.ENOENT {
		if err := unix.Mkdirat(s.root, name, 0o700); err != nil && err != unix.EEXIST {
			return -1, err
		}
		fd, err = unix.Openat(s.root, name, flags, 0)
	}
	return fd, err
}

// openAnon opens the store's empty file in the "ioctl only" access mode
// (3: neither FMODE_READ nor FMODE_WRITE): the placeholder of an O_PATH
// descriptor. The platform cannot install an O_PATH file itself (seccomp's
// ADDFD takes the file with fget, which refuses them); this one fails
// read and write with EBADF as an O_PATH descriptor does, and the sentry
// answers what else it is asked (fstat, F_GETFL, *at calls).
func (s *store) openAnon() (int, error) {
	s.anonOnce.Do(func() {
		err := unix.Mknodat(s.root, anonName, unix.S_IFREG|0o400, 0)
		if err != nil && err != unix.EEXIST {
			s.anonErr = err
		}
	})
	if s.anonErr != nil {
		return -1, s.anonErr
	}
	return unix.Openat(s.root, anonName, unix.O_ACCMODE|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
}

// cName is backingName as a NUL-terminated string in buf, for the raw
// calls of the stat path, which must not allocate (fstat and stat of a
// tmpfs file are the sandbox's hot calls).
func cName(buf *[24]byte, prefix byte, ino uint64) uintptr {
	b := strconv.AppendUint(append(buf[:0], prefix), ino, 10)
	buf[len(b)] = 0
	return uintptr(unsafe.Pointer(&buf[0]))
}

// statFile fills st from regular inode ino's backing.
func (s *store) statFile(ino uint64, st *unix.Stat_t) error {
	var buf [24]byte
	_, _, e := unix.RawSyscall6(unix.SYS_NEWFSTATAT, uintptr(s.root), cName(&buf, 'r', ino),
		uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// statxFile fills stx from regular inode ino's backing (its birth time
// included).
func (s *store) statxFile(ino uint64, stx *unix.Statx_t) error {
	var buf [24]byte
	_, _, e := unix.RawSyscall6(unix.SYS_STATX, uintptr(s.root), cName(&buf, 'r', ino),
		unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_BASIC_STATS|unix.STATX_BTIME,
		uintptr(unsafe.Pointer(stx)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// chmodFile sets the permission bits of regular inode ino's backing.
func (s *store) chmodFile(ino uint64, mode uint32) error {
	var buf [24]byte
	return unix.Fchmodat(s.root, backingName(&buf, 'r', ino), mode&07777, 0)
}

// chownFile sets the owner of regular inode ino's backing; uid or gid -1
// leaves it. chown(-1, -1) changes nothing but ctime, which is how the
// sentry moves a backing's ctime when it changes the file's metadata
// (links, names, attributes): the host stamps it with its own clock.
func (s *store) chownFile(ino uint64, uid, gid int) error {
	var buf [24]byte
	return unix.Fchownat(s.root, backingName(&buf, 'r', ino), uid, gid, unix.AT_SYMLINK_NOFOLLOW)
}

// utimesFile sets the access and modification times of regular inode
// ino's backing (utimensat's times, UTIME_NOW and UTIME_OMIT included).
func (s *store) utimesFile(ino uint64, ts *[2]unix.Timespec) error {
	var buf [24]byte
	return unix.UtimesNanoAt(s.root, backingName(&buf, 'r', ino), ts[:], unix.AT_SYMLINK_NOFOLLOW)
}

// setSize changes a detached store's size limit (a remount: fspick,
// fsconfig size=, FSCONFIG_CMD_RECONFIGURE), which fails (EINVAL) when the
// store already holds more. The sentry lowers the limit by the pages it
// allocates itself (long symlinks), so that files and symlinks share the
// mount's size as in Linux.
func (s *store) setSize(bytes int64) error {
	if s.dir != "" {
		return nil
	}
	fd, err := unix.Fspick(s.root, "", unix.FSPICK_EMPTY_PATH|unix.FSPICK_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.FsconfigSetString(fd, "size", strconv.FormatInt(bytes, 10)); err != nil {
		return err
	}
	return unix.FsconfigReconfigure(fd)
}

// usedBlocks is the store's allocated space in 512-byte blocks (a
// detached tmpfs's own statfs); false when the store cannot tell (the
// fallback directory, an unlimited tmpfs).
func (s *store) usedBlocks() (int64, bool) {
	if s.dir != "" {
		return 0, false
	}
	var st unix.Statfs_t
	if unix.Fstatfs(s.root, &st) != nil || st.Blocks == 0 {
		// An unlimited tmpfs reports no figures (size=0).
		return 0, false
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize / 512, true
}

// bumpCtime moves regular inode ino's ctime to now, as the sentry changing
// the file's metadata (a link, a name, an attribute) does: a chmod of the
// backing to the mode it has is what moves a ctime and nothing else (a
// chown to -1, -1 would drop SUID).
func (s *store) bumpCtime(ino uint64) {
	var st unix.Stat_t
	if s.statFile(ino, &st) == nil {
		s.chmodFile(ino, st.Mode)
	}
}

// mirrorAttrLocked gives a regular file's backing what SetAttr changed:
// the owner and the exact mode (a chown drops SUID on the host as here),
// the times (the backing's are the file's). i.mu must be held.
func (i *inode) mirrorAttrLocked(a *vfs.Attr) {
	if !i.isRegular() {
		return
	}
	st := i.fs.store
	if a.Mask&(vfs.AttrUID|vfs.AttrGID) != 0 {
		st.chownFile(i.ino, int(i.uid), int(i.gid))
	}
	st.chmodFile(i.ino, i.mode)
	if a.Mask&(vfs.AttrAtime|vfs.AttrMtime) != 0 {
		ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if a.Mask&vfs.AttrAtime != 0 {
			ts[0] = unix.NsecToTimespec(i.atime)
			if a.AtimeNow {
				ts[0] = unix.Timespec{Nsec: unix.UTIME_NOW}
			}
		}
		if a.Mask&vfs.AttrMtime != 0 {
			ts[1] = unix.NsecToTimespec(i.mtime)
			if a.MtimeNow {
				ts[1] = unix.Timespec{Nsec: unix.UTIME_NOW}
			}
		}
		st.utimesFile(i.ino, &ts)
	}
}

// OpenHost implements vfs.Inode.OpenHost: the placeholder of a guest's
// descriptor of the inode (storage.go). A regular file's is an open of its
// backing with the guest's access mode and status flags (O_APPEND,
// O_NONBLOCK, O_DIRECT, O_SYNC, O_NOATIME, ...: the host applies them to
// the guest's I/O); a directory's an open of its backing directory; with
// O_PATH, or for the other types, the store's empty file (openAnon; the
// sentry serves what is asked of it: fstat, F_GETFL, *at calls). A regular
// file freed
// since the caller found it is ENOENT.
func (i *inode) OpenHost(flags uint32) (int, error) {
	f := int(flags & hostOpenFlags)
	switch {
	case flags&unix.O_PATH != 0 && i.isDir():
		return i.fs.store.openDir(i, unix.O_RDONLY)
	case flags&unix.O_PATH != 0:
		return i.fs.store.openAnon()
	case i.isRegular():
		// O_TMPFILE carries O_DIRECTORY; the file itself is not one.
		return i.fs.store.openFile(i.ino, f&^unix.O_DIRECTORY)
	case i.isDir():
		return i.fs.store.openDir(i, f&^unix.O_ACCMODE)
	}
	return i.fs.store.openAnon()
}
