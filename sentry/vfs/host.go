package vfs

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file is the host half of the walk: what the host kernel's
// resolution of a host path meets (symlinks, magic links in /proc, mount
// points of the sentry's file systems), found with the host's own lookups.

// HostDir is a host directory held open (O_PATH): the directory the
// kernel means, whatever has been renamed since its path was read. A
// guest's working directory keeps one, so that a path relative to it is
// checked in the directory the kernel will use.
type HostDir struct {
	fd int
}

// OpenHostDir opens path (following links) as a HostDir; nil when it
// cannot be opened. The descriptor is closed when the HostDir is no
// longer referenced (a Location is copied by value, through every walk:
// no count of its holders is kept). The garbage collector finds it
// unreferenced only when it runs, which a guest that changes directory in
// a loop and allocates little else would leave for long: 200,000 chdirs
// held the sentry's whole RLIMIT_NOFILE (20,000 here), and its own opens
// failed. So every hostDirsCollect open ones, a collection is asked for.
func (v *VirtualFilesystem) OpenHostDir(path string) *HostDir {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	d := &HostDir{fd: fd}
	n := v.hostDirs.Add(1)
	runtime.AddCleanup(d, func(fd int) {
		unix.Close(fd)
		v.hostDirs.Add(-1)
	}, fd)
	if n%hostDirsCollect == 0 {
		runtime.GC()
	}
	return d
}

// hostDirsCollect is how many HostDirs may be open before OpenHostDir has
// the unreferenced ones collected (and then at every multiple, while
// that many are referenced).
const hostDirsCollect = 1024

// HostLocation is the host directory path as a Location, held open when
// it can be.
func (v *VirtualFilesystem) HostLocation(path string) Location {
	return Location{Host: path, Dir: v.OpenHostDir(path)}
}

// hostID identifies a directory on the host: the mount it is seen
// through and its inode, as statx reports them. Two paths name the same
// place in the mount tree exactly when their hostIDs are equal.
type hostID struct {
	mnt uint64
	dev uint64
	ino uint64
}

func idOf(stx *unix.Statx_t) hostID {
	return hostID{mnt: stx.Mnt_id, dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), ino: stx.Ino}
}

// sameFile reports whether a and b are the same file, whichever mount
// each was seen through: the guest runs in a mount namespace of its own,
// a copy of the sentry's, so the kernel's path for a file of the guest's
// (d_path of its working directory or of a descriptor) names it through
// the sentry's copy of the mount, and the walk may use that path.
func sameFile(a, b *unix.Statx_t) bool {
	return a.Dev_major == b.Dev_major && a.Dev_minor == b.Dev_minor && a.Ino == b.Ino
}

// mountPoint is where a sentry mount sits on the host.
type mountPoint struct {
	// path is the mount point's canonical host path (no symlink in it):
	// the host kernel's walk of the guest's path is there exactly when
	// its lexical one is (see hostFast).
	path string
	// id is the mount point directory's hostID; ok is false when the
	// mount point does not exist on the host.
	id hostID
	ok bool
}

// hostMounts records where each mount sits on the host, for New.
func hostMounts(mounts []*Mount) []mountPoint {
	pts := make([]mountPoint, len(mounts))
	for i, m := range mounts {
		pts[i].path = m.Point
		fd, err := unix.Open(m.Point, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var stx unix.Statx_t
		if unix.Statx(fd, "", unix.AT_EMPTY_PATH, statxMask, &stx) == nil {
			pts[i].id, pts[i].ok = idOf(&stx), true
		}
		var buf [unix.PathMax]byte
		if n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:]); err == nil && n > 0 && buf[0] == '/' {
			// Through a host symlink (/tmp -> /private/tmp), the mount
			// sits where the link leads, as mount(2) puts it.
			pts[i].path = string(buf[:n])
		}
		unix.Close(fd)
	}
	return pts
}

// statxMask is what the walk asks of every host lookup. The unique
// mount id (Linux 6.8) is never reused; older kernels give the plain one.
const statxMask = unix.STATX_TYPE | unix.STATX_MODE | unix.STATX_UID | unix.STATX_INO | unix.STATX_MNT_ID_UNIQUE

// procRootIno is the inode number of a procfs root (PROC_ROOT_INO).
const procRootIno = 1

// stNoSymfollow is ST_NOSYMFOLLOW of statfs f_flags (a nosymfollow mount).
const stNoSymfollow = 0x2000

// mountInfo is what the walk needs to know of a host mount.
type mountInfo struct {
	proc        bool // a procfs
	noSymfollow bool // mounted nosymfollow: its symlinks are not followed
}

// hostState is the walk's position on the host.
type hostState struct {
	// fixed is how much of the Location's Host string ".." must not pop:
	// 1 for a canonical path (its "/"), all of a magic link's name
	// ("/proc/7/cwd") after the walk followed one to something without a
	// path of its own; ".." past it is left to the kernel ("/proc/7/cwd/..").
	fixed int
	// known is set when the rest describes the current file: it was
	// looked up (statx).
	known    bool
	isDir    bool
	mode     uint32
	uid      uint32
	mnt      uint64
	mntKnown bool
	// procRoot is the length of the Host prefix that is a procfs root:
	// -1 when the current directory is not in a procfs, -2 when not known
	// yet.
	procRoot int
}

// selfCaller is the Caller of walks made for no guest (the sentry's own
// and the tests'): /proc/self is the sentry, no process is a guest, host
// lookups are the sentry's.
type selfCaller struct{}

func (selfCaller) TGID() int32                            { return int32(unix.Getpid()) }
func (selfCaller) TID() int32                             { return int32(unix.Gettid()) }
func (selfCaller) Guest(int32) (int32, bool)              { return 0, false }
func (selfCaller) ProcLink(int32, string, int32) Location { return Location{} }
func (selfCaller) Privileged() bool                       { return true }
func (selfCaller) AsCaller(fn func() error) error         { return fn() }
func (selfCaller) MayReadProc(int32) (bool, error)        { return false, nil }

// hostConfig is what New learns of the host once.
type hostConfig struct {
	points []mountPoint
	// protectedSymlinks is fs.protected_symlinks.
	protectedSymlinks bool
	// uniqueMntID is set when statx gives unique mount ids, which may
	// key mntCache.
	uniqueMntID bool
	// procPath is the canonical path of the procfs at /proc ("" if
	// /proc is not one), for the fast path's check of guest magic links.
	procPath string
	// rootMnt is the mount id of "/", for RESOLVE_NO_XDEV's absolute
	// symlinks (nd_jump_root); root is what a lookup of "/" finds, so
	// that a walk from the root need not look it up again.
	rootMnt  uint64
	root     hostState
	mntCache sync.Map // uint64 -> mountInfo
}

// mountInfo is what the walk needs of host mount mnt, in which dir is
// (statfs once per mount when mount ids are unique, so never stale).
func (h *hostConfig) mountInfo(mnt uint64, dir string) mountInfo {
	if mi, ok := h.mntCache.Load(mnt); ok {
		return mi.(mountInfo)
	}
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return mountInfo{}
	}
	mi := mountInfo{proc: st.Type == unix.PROC_SUPER_MAGIC, noSymfollow: st.Flags&stNoSymfollow != 0}
	if h.uniqueMntID {
		h.mntCache.Store(mnt, mi)
	}
	return mi
}

func newHostConfig(mounts []*Mount) *hostConfig {
	h := &hostConfig{points: hostMounts(mounts)}
	if b, err := os.ReadFile("/proc/sys/fs/protected_symlinks"); err == nil {
		h.protectedSymlinks = strings.TrimSpace(string(b)) != "0"
	}
	var stx unix.Statx_t
	h.root = hostState{fixed: 1, procRoot: -1}
	if unix.Statx(unix.AT_FDCWD, "/", 0, statxMask, &stx) == nil {
		h.uniqueMntID = stx.Mask&unix.STATX_MNT_ID_UNIQUE != 0
		h.rootMnt = stx.Mnt_id
		h.root = hostState{fixed: 1, procRoot: -1, known: true, isDir: true,
			mode: uint32(stx.Mode), uid: stx.Uid, mnt: stx.Mnt_id, mntKnown: true}
	}
	var st unix.Statfs_t
	if unix.Statfs("/proc", &st) == nil && st.Type == unix.PROC_SUPER_MAGIC {
		h.procPath = "/proc"
	}
	return h
}

// pointByID is the index of the mount whose mount point directory is id
// on the host, or -1.
func (h *hostConfig) pointByID(id hostID) int {
	for i := range h.points {
		if h.points[i].ok && h.points[i].id == id {
			return i
		}
	}
	return -1
}

// procPid is the process whose directory of the procfs at /proc host
// path p is in, if it is in one.
func (h *hostConfig) procPid(p string) (int32, bool) {
	if h.procPath == "" || len(p) <= len(h.procPath)+1 || !strings.HasPrefix(p, h.procPath) || p[len(h.procPath)] != '/' {
		return 0, false
	}
	p = p[len(h.procPath)+1:]
	if i := strings.IndexByte(p, '/'); i >= 0 {
		p = p[:i]
	}
	return procNum(p)
}

func statxPath(p string, flags int, stx *unix.Statx_t) error {
	if err := unix.Statx(unix.AT_FDCWD, p, flags, statxMask, stx); err != nil {
		return hostErrno(err)
	}
	return nil
}

// PinnedLink is what a magic link led to when PinLink took it: the file's
// identity and its own path (Path, empty when the kernel names it by no
// absolute path; PathLeadsBack when that path names the same file now),
// both read from one O_PATH open of it. Read from the link twice (a stat,
// then a readlink), a racing dup2 in between could make them two files.
type PinnedLink struct {
	Stat          unix.Statx_t
	Path          string
	PathLeadsBack bool
}

// PinLink takes the file magic link link leads to now (the host's errors
// as the walk returns them; ENOENT: not open).
func PinLink(link string) (PinnedLink, error) {
	var pl PinnedLink
	fd, err := unix.Open(link, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return pl, hostErrno(err)
	}
	defer unix.Close(fd)
	// Identities only, read without asking the file system
	// (AT_STATX_DONT_SYNC, as HostFileID).
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, statxMask, &pl.Stat); err != nil {
		return pl, hostErrno(err)
	}
	if t, err := readlinkPath("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && len(t) > 0 && t[0] == '/' {
		pl.Path = t
		var s2 unix.Statx_t
		pl.PathLeadsBack = statxPath(t, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, &s2) == nil && sameFile(&s2, &pl.Stat)
	}
	return pl, nil
}

// Dev is the pinned file's device.
func (pl *PinnedLink) Dev() uint64 { return unix.Mkdev(pl.Stat.Dev_major, pl.Stat.Dev_minor) }

func readlinkPath(p string) (string, error) {
	var buf [unix.PathMax]byte
	n, err := unix.Readlink(p, buf[:])
	if err != nil {
		return "", hostErrno(err)
	}
	return string(buf[:n]), nil
}

// hostErrno is err as the walk returns a host lookup's failure.
func hostErrno(err error) error {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}

// isProcRoot reports whether stx is a procfs root candidate: a mount's
// root directory with procfs's root inode number (mountInfo tells
// whether the mount is a procfs).
func isProcRoot(stx *unix.Statx_t) bool {
	return stx.Mode&unix.S_IFMT == unix.S_IFDIR && stx.Ino == procRootIno &&
		stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}

// joinPath is dir/name for an absolute dir.
func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// openat2Check opens dir+sep+p with O_PATH under resolve and closes it:
// the error says whether the host kernel's walk of that path meets a
// symlink (ELOOP under RESOLVE_NO_SYMLINKS) or something else. The path
// is built in a buffer on the stack, so that the hot path allocates
// nothing; ours is set when the path is too long for the kernel to take.
func openat2Check(dirfd int, dir, sep, p string, flags, resolve uint64) (e unix.Errno, ours bool) {
	var buf [unix.PathMax]byte
	n := len(dir) + len(sep) + len(p)
	if n >= len(buf) {
		return unix.ENAMETOOLONG, true
	}
	k := copy(buf[:], dir)
	k += copy(buf[k:], sep)
	copy(buf[k:], p)
	buf[n] = 0
	how := unix.OpenHow{Flags: flags | unix.O_PATH | unix.O_CLOEXEC, Resolve: resolve}
	fd, _, e := unix.Syscall6(unix.SYS_OPENAT2, uintptr(dirfd), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	if e != 0 {
		return e, false
	}
	unix.Syscall(unix.SYS_CLOSE, fd, 0, 0)
	return 0, false
}

// maxFastComps bounds the components hostFast holds; a path with more is
// walked one component at a time.
const maxFastComps = 64

// span is a component of the rest of a path: rest[i:j].
type span struct{ i, j int32 }

// A host path as hostFast holds it, without building it: base
// (absolute, clean), then each span of rest as one more component.

// lexMatch reports whether the path is p (eq) or a directory above it
// (above).
func lexMatch(base, rest string, comps []span, p string) (eq, above bool) {
	if base == "/" {
		if len(comps) == 0 {
			return p == "/", len(p) > 1 && p[0] == '/'
		}
		base = ""
	}
	if len(p) < len(base) || p[:len(base)] != base {
		return false, false
	}
	p = p[len(base):]
	for _, c := range comps {
		comp := rest[c.i:c.j]
		if len(p) < 1+len(comp) || p[0] != '/' || p[1:1+len(comp)] != comp {
			return false, false
		}
		p = p[1+len(comp):]
	}
	return p == "", len(p) > 0 && p[0] == '/'
}

// joinLex builds the path.
func joinLex(base, rest string, comps []span) string {
	if len(comps) == 0 {
		return base
	}
	var b strings.Builder
	if base != "/" {
		b.WriteString(base)
	}
	for _, c := range comps {
		b.WriteByte('/')
		b.WriteString(rest[c.i:c.j])
	}
	return b.String()
}

// lexMount is the index of the mount whose mount point the path is (or
// -1), and whether it is a directory above a mount point: the way there
// is known to hold no symlink (hostMounts found the mount point's
// canonical path), or does not exist on the host at all.
func (v *VirtualFilesystem) lexMount(base, rest string, comps []span) (int, bool) {
	onWay := false
	for i, m := range v.mounts {
		if eq, _ := lexMatch(base, rest, comps, m.Point); eq {
			return i, true
		}
		eq, above := lexMatch(base, rest, comps, v.host.points[i].path)
		if eq {
			return i, true
		}
		onWay = onWay || above
	}
	return -1, onWay
}

// hostFast resolves as much of the rest of the path on the host as it can
// with string operations, after one host lookup (openat2 of O_PATH under
// RESOLVE_NO_SYMLINKS, one system call for anything but a directory) that
// shows the kernel's walk of it meets no symlink: without one, the kernel's resolution of a path from a
// directory named canonically is the lexical one, "..", mounts and all.
// A mount point is entered when the lexical path is the mount point's
// canonical path (the kernel crosses into what is mounted on that
// directory there; a bind mount of the same directory elsewhere is
// another path, not entered). It reports false when it resolved nothing:
// a link is on the way, or the walk is in a state that needs one
// component at a time.
func (ws *walker) hostFast() (bool, error) {
	if ws.scoped || ws.h.fixed != 1 {
		return false, nil
	}
	dirfd := unix.AT_FDCWD
	if ws.cur.Dir != nil {
		dirfd = ws.cur.Dir.fd
	}
	var stack [maxFastComps]span
	base, rest, comps := ws.cur.Host, ws.rest, stack[:0]
	needCheck := false
	last := ""
	for i := 0; i < len(rest); {
		if rest[i] == '/' {
			i++
			continue
		}
		j := i
		for j < len(rest) && rest[j] != '/' {
			j++
		}
		comp := rest[i:j]
		last = comp
		switch comp {
		case ".":
		case "..":
			switch {
			case len(comps) > 0:
				comps = comps[:len(comps)-1]
			case dirfd != unix.AT_FDCWD:
				// Above a directory known by its descriptor, whose
				// path may have changed since it was read.
				return false, nil
			default:
				base = parentPath(base)
			}
		default:
			if len(comps) == maxFastComps {
				return false, nil
			}
			comps = comps[:len(comps)+1]
			comps[len(comps)-1] = span{int32(i), int32(j)}
			m, onWay := ws.v.lexMount(base, rest, comps)
			if m >= 0 {
				if needCheck {
					// The way to the mount point's parent must hold no
					// link and exist, as the kernel's walk would find.
					ws.recheck = true
					if e, _ := ws.check(dirfd, rest[:i], unix.O_DIRECTORY); e != 0 {
						if e == unix.ELOOP {
							return false, nil
						}
						return false, e
					}
				}
				ws.name = comp
				ws.rest = rest[j:]
				return true, ws.enterMount(ws.v.mounts[m])
			}
			if !onWay {
				needCheck = true
			}
		}
		i = j
	}
	// O_DIRECTORY: the walk of a path to anything but a directory then
	// ends in ENOTDIR, after every link on the way would have stopped it
	// (ELOOP), and leaves no descriptor to close.
	flags := uint64(unix.O_DIRECTORY)
	if !ws.follow && !ws.w.TrailingSlash {
		flags |= unix.O_NOFOLLOW
	}
	e, ours := ws.check(dirfd, rest, flags)
	switch {
	case e == unix.ELOOP:
		return false, nil
	case ours:
		return false, e
	}
	// Any other outcome (found, or a failure the kernel reports alike)
	// is the lexical path's.
	end := ws.path
	if eq, _ := lexMatch(base, rest, comps, end); !eq {
		end = joinLex(base, rest, comps)
	}
	if flags&unix.O_NOFOLLOW != 0 && ws.v.host.procPath != "" && strings.HasPrefix(end, ws.v.host.procPath+"/") {
		switch end[len(ws.v.host.procPath)+1:] {
		case "self", "thread-self":
			// /proc/self itself: the slow walk says what it reads.
			return false, nil
		}
	}
	if pid, ok := ws.v.host.procPid(end); ok {
		if _, guest := ws.caller.Guest(pid); guest {
			// In a guest's /proc/PID: its magic links, followed or
			// not, are the sentry's to answer.
			return false, nil
		}
	}
	ws.cur.Host, ws.cur.Dir = end, nil
	ws.h.known = false
	ws.name, ws.parent, ws.rest = last, nil, ""
	return true, nil
}

// check is the fast path's host lookup of p from the current directory.
func (ws *walker) check(dirfd int, p string, flags uint64) (unix.Errno, bool) {
	resolve := uint64(unix.RESOLVE_NO_SYMLINKS)
	if ws.resolve&ResolveNoXdev != 0 {
		resolve |= unix.RESOLVE_NO_XDEV
	}
	if dirfd != unix.AT_FDCWD {
		return openat2Check(dirfd, "", "", p, flags, resolve)
	}
	base, sep := ws.cur.Host, "/"
	if base == "/" {
		sep = ""
	}
	return openat2Check(unix.AT_FDCWD, base, sep, p, flags, resolve)
}

// setKnown records what a lookup of the current file found.
func (ws *walker) setKnown(stx *unix.Statx_t) {
	h := &ws.h
	h.known = true
	h.isDir = stx.Mode&unix.S_IFMT == unix.S_IFDIR
	h.mode = uint32(stx.Mode)
	h.uid = stx.Uid
	h.mnt, h.mntKnown = stx.Mnt_id, true
}

// refreshDir replaces a start known by descriptor with a path the
// kernel gives for it now: its own canonical one if that still leads to
// it, else the descriptor's name in the sentry's /proc/self/fd.
func (ws *walker) refreshDir() {
	d := ws.cur.Dir
	ws.cur.Dir = nil
	self := "/proc/self/fd/" + strconv.Itoa(d.fd)
	ws.cur.Host = self
	ws.h = hostState{fixed: len(self), procRoot: -2}
	var stx unix.Statx_t
	if err := unix.Statx(d.fd, "", unix.AT_EMPTY_PATH, statxMask, &stx); err != nil {
		return
	}
	if t, err := readlinkPath(self); err == nil && len(t) > 0 && t[0] == '/' {
		var s2 unix.Statx_t
		if statxPath(t, 0, &s2) == nil && sameFile(&s2, &stx) {
			ws.cur.Host = t
			ws.h.fixed = 1
		}
	}
	ws.setKnown(&stx)
}

// needDir makes sure the current host file is a directory to look
// something up in (link_path_walk's d_can_lookup).
func (ws *walker) needDir() error {
	if !ws.h.known {
		var stx unix.Statx_t
		if err := statxPath(ws.cur.Host, 0, &stx); err != nil {
			ws.hostErr = true
			return err
		}
		ws.setKnown(&stx)
	}
	if !ws.h.isDir {
		ws.hostErr = true
		return unix.ENOTDIR
	}
	return nil
}

// hostStep resolves one component on the host as walk_component does,
// with one host lookup (statx, or readlink for a link), or none where
// the sentry knows the answer (a guest's own /proc directory).
func (ws *walker) hostStep(comp string, last bool) error {
	ws.recheck = true
	if ws.cur.Dir != nil {
		ws.refreshDir()
	}
	if err := ws.needDir(); err != nil {
		return err
	}
	h := &ws.h
	if ws.asCaller && (comp == "." || comp == "..") {
		// may_lookup: search permission on the directory for these too.
		var stx unix.Statx_t
		if err := statxPath(joinPath(ws.cur.Host, "."), 0, &stx); err != nil {
			ws.hostErr = true
			return err
		}
	}
	switch comp {
	case ".":
		ws.parent = nil
		return nil
	case "..":
		return ws.hostDotDot()
	}
	if len(comp) > NameMax {
		ws.hostErr = true
		return unix.ENAMETOOLONG
	}
	np := joinPath(ws.cur.Host, comp)
	if len(np) >= unix.PathMax {
		return unix.ENAMETOOLONG
	}
	if h.fixed == 1 {
		if i := ws.v.pointIndex(np); i >= 0 {
			return ws.enterMount(ws.v.mounts[i])
		}
	}
	if done, err := ws.procStep(comp, np, last); done || err != nil {
		return err
	}
	var stx unix.Statx_t
	if err := statxPath(np, unix.AT_SYMLINK_NOFOLLOW, &stx); err != nil {
		if err == unix.ENOENT && last {
			ws.cur.Host = np
			h.known = false
			return nil
		}
		ws.hostErr = true
		return err
	}
	if h.fixed != 1 && stx.Mode&unix.S_IFMT == unix.S_IFDIR {
		// A path through a magic link: the mount point by identity.
		if i := ws.v.host.pointByID(idOf(&stx)); i >= 0 {
			return ws.enterMount(ws.v.mounts[i])
		}
	}
	if ws.resolve&ResolveNoXdev != 0 && h.mntKnown && stx.Mnt_id != h.mnt {
		ws.hostErr = true
		return unix.EXDEV
	}
	if stx.Mode&unix.S_IFMT == unix.S_IFLNK && (!last || ws.follow || ws.w.TrailingSlash) {
		return ws.hostSymlink(np, &stx, last)
	}
	ws.cur.Host = np
	ws.setKnown(&stx)
	ws.depth++
	ws.parent = nil
	if h.procRoot == -1 && isProcRoot(&stx) && ws.v.host.mountInfo(stx.Mnt_id, np).proc {
		h.procRoot = len(np)
	}
	return nil
}

// hostDotDot is follow_dotdot on the host: the parent of a canonical
// path is its lexical parent (a mount root's ".." is its mount point's
// parent, which the path names); past a magic link, the kernel's.
func (ws *walker) hostDotDot() error {
	h := &ws.h
	ws.parent = nil
	if ws.scoped && ws.depth == 0 {
		if ws.resolve&ResolveInRoot != 0 {
			return nil
		}
		ws.hostErr = true
		return unix.EXDEV
	}
	ws.depth--
	p := ws.cur.Host
	var np string
	switch {
	case h.fixed == 1 && p == "/":
		// The root's ".." is the root.
		return nil
	case h.fixed == 1:
		np = parentPath(p)
	case len(p) > h.fixed:
		np = p[:strings.LastIndexByte(p, '/')]
	default:
		np = p + "/.."
		h.fixed = len(np)
	}
	oldMnt, oldKnown := h.mnt, h.mntKnown
	ws.cur.Host = np
	h.known = false
	if h.procRoot >= 0 && len(np) < h.procRoot {
		h.procRoot = -1
	}
	if h.fixed == 1 {
		if i := ws.v.pointIndex(np); i >= 0 {
			return ws.enterMount(ws.v.mounts[i])
		}
		if ws.resolve&ResolveNoXdev == 0 {
			return nil
		}
	}
	var stx unix.Statx_t
	if err := statxPath(np, 0, &stx); err != nil {
		ws.hostErr = true
		return err
	}
	if h.fixed != 1 {
		if i := ws.v.host.pointByID(idOf(&stx)); i >= 0 {
			return ws.enterMount(ws.v.mounts[i])
		}
	}
	if ws.resolve&ResolveNoXdev != 0 && oldKnown && stx.Mnt_id != oldMnt {
		ws.hostErr = true
		return unix.EXDEV
	}
	ws.setKnown(&stx)
	return nil
}

// hostSymlink follows host symlink np (pick_link): the count first, then
// fs.protected_symlinks for a trailing one, RESOLVE_NO_SYMLINKS and
// nosymfollow mounts; the walk goes on from the target.
func (ws *walker) hostSymlink(np string, stx *unix.Statx_t, last bool) error {
	h := &ws.h
	ws.hostErr = true
	ws.links++
	if ws.links > MaxSymlinks {
		return unix.ELOOP
	}
	if last && ws.v.host.protectedSymlinks && !mayFollowLink(ws.c.UID, stx.Uid, h.mode, h.uid) {
		return unix.EACCES
	}
	if ws.resolve&ResolveNoSymlinks != 0 || ws.v.host.mountInfo(stx.Mnt_id, ws.cur.Host).noSymfollow {
		return unix.ELOOP
	}
	target, err := readlinkPath(np)
	if err != nil {
		return err
	}
	if target == "" {
		return unix.ENOENT
	}
	if target[0] == '/' {
		if ws.resolve&(ResolveNoXdev|ResolveInRoot) == ResolveNoXdev && stx.Mnt_id != ws.v.host.rootMnt {
			return unix.EXDEV
		}
		if err := ws.jumpRoot(); err != nil {
			return err
		}
	}
	ws.hostErr = false
	ws.rest = target + ws.rest
	ws.name, ws.parent = "", nil
	// What follows may hold no other link.
	ws.slow = false
	return nil
}

// mayFollowLink is may_follow_link's rule (fs.protected_symlinks): a
// trailing symlink in a sticky world-writable directory is followed only
// by its owner, or when the directory's owner owns it too.
func mayFollowLink(fsuid, linkUID, dirMode, dirUID uint32) bool {
	if fsuid == linkUID {
		return true
	}
	if dirMode&(unix.S_ISVTX|0o002) != unix.S_ISVTX|0o002 {
		return true
	}
	return dirUID == linkUID
}

// HostFileID is the device and inode of the file path names (relative
// to dirfd; "" for dirfd itself), read without asking the file system
// (AT_STATX_DONT_SYNC): a FUSE file's server may be a guest thread that
// waits for the very sentry thread asking. ok is false if there is none.
func HostFileID(dirfd int, path string) (dev, ino uint64, ok bool) {
	flags := unix.AT_STATX_DONT_SYNC
	if path == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	var stx unix.Statx_t
	if unix.Statx(dirfd, path, flags, 0, &stx) != nil {
		return 0, 0, false
	}
	return unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino, true
}

// OnStore reports whether the file path names (as HostFileID) is a file
// of a sentry mount's store; false if there is none.
func (v *VirtualFilesystem) OnStore(dirfd int, path string) bool {
	dev, _, ok := HostFileID(dirfd, path)
	return ok && v.StoreDev(dev)
}

// StoreDev reports whether dev is the device of a sentry mount's store
// (BackingStore): a host file there is a sentry file's placeholder.
func (v *VirtualFilesystem) StoreDev(dev uint64) bool {
	for _, m := range v.mounts {
		if s, ok := m.FS.(BackingStore); ok && s.BackingDev() == dev {
			return true
		}
	}
	return false
}
