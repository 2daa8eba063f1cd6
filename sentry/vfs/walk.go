package vfs

import (
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Limits of a path walk, as Linux's.
const (
	// MaxSymlinks is MAXSYMLINKS: the 41st symlink followed in one walk
	// fails with ELOOP. Symlinks of the sentry's file systems, host
	// symlinks and magic links all count.
	MaxSymlinks = 40
	// NameMax is NAME_MAX.
	NameMax = 255
)

// Location is a point in the guest's path tree: a dentry in one of the
// sentry's mounts, or (Mount == nil) a host file named by Host.
type Location struct {
	Mount  *Mount
	Dentry Dentry
	// Host is an absolute host path the kernel resolves to the file: a
	// canonical one (no symlink in it), or one through a magic link
	// ("/proc/7/fd/3/x") when the file has no usable path of its own.
	Host string
	// Dir, when set, is the directory Host named when it was read, held
	// open: a working directory, which renames may have moved since.
	Dir *HostDir
}

// IsHost reports a host location.
func (l Location) IsHost() bool { return l.Mount == nil }

// Walk is the result of resolving a path.
type Walk struct {
	// Location is where the path ends: for a sentry mount, Dentry is the
	// file (nil if the last component does not exist); for the host,
	// Host is the path, whose existence only the host kernel knows.
	Location
	// Parent is the directory in which the last component was looked up
	// (sentry mounts only; nil when the walk ended on a mount's root).
	Parent Dentry
	// Name is the last component; "." or ".." when the path ended with
	// one, "" when it ended on a root or a followed link.
	Name string
	// TrailingSlash is set when the path ends with '/': the file must be
	// a directory (Linux's LOOKUP_DIRECTORY on the last component).
	TrailingSlash bool
	// Entered is set when the walk went through something the sentry
	// serves (a mount, a guest's virtual descriptor or working directory
	// in /proc), so that a host result is not what the host kernel would
	// find by the guest's path: the host must be given Host instead.
	Entered bool
	// Jumped is set when the walk followed a magic link to the kernel's
	// target (nd_jump_link: a descriptor the sentry does not hold): the
	// host, walking the guest's path again, follows it again, and by
	// then the number may hold a placeholder.
	Jumped bool
	// LinkNamed is set when Host still names the magic link the walk
	// jumped last (its target had no path of its own that leads back to
	// it, or was not open): the host, given Host, follows that link
	// again. Unset after a jump, Host is the target's own path.
	LinkNamed bool
	// JumpedAt is the magic link the walk jumped last, when the path
	// ended on it (a host open of it reopens what it points at), else "".
	JumpedAt string
	// Link is set when the path ends on a magic link of a guest process
	// that the walk did not follow (lstat, readlink, O_NOFOLLOW) and that
	// points at a file of the sentry's: that file.
	Link Location
	// LinkText is set when the path ends on /proc/self or
	// /proc/thread-self, not followed: what readlink of it gives the
	// caller ("1234", "1234/task/1235").
	LinkText string
	// ProcPID is the process of the last /proc/PID directory of another
	// process than the caller's the walk went into on the host (0: none):
	// what the kernel lets the caller do there is checked against that
	// process (ptrace_may_access), which the sentry's own threads, acting
	// for the caller, cannot stand in for (syscalls' mayEnterProc).
	ProcPID int32
	// HostErr is set with an error a host lookup gave before the walk
	// went through anything the sentry serves: the host kernel gives the
	// guest's own path the same error, so the call may pass through.
	HostErr bool
}

// Caller is the guest task a walk resolves for, as far as the host half
// of the walk needs it: /proc/self is its process, the magic links of the
// sentry's guests lead to what the sentry knows, and host lookups that
// decide where the walk goes are made with its credentials.
type Caller interface {
	// TGID and TID are what /proc/self and /proc/thread-self name.
	TGID() int32
	TID() int32
	// Guest reports whether id is a task the sentry serves, and its
	// thread group.
	Guest(id int32) (tgid int32, ok bool)
	// ProcLink is the target of magic link name ("cwd", "root", "exe",
	// or "fd" with descriptor fd) of guest task tid as the sentry knows
	// it: a sentry file, Location{Host: "/"} for a root, or the zero
	// Location when the kernel's target stands (a host descriptor, a host
	// working directory, the executable).
	ProcLink(tid int32, name string, fd int32) Location
	// Privileged reports that host lookups made as the caller are the
	// sentry's own (AsCaller changes nothing).
	Privileged() bool
	// AsCaller runs fn on the current thread with the caller's file
	// system credentials and capabilities in force.
	AsCaller(fn func() error) error
	// MayReadProc is whether the caller may read the magic links of
	// task tid (ptrace_may_access), where the sentry decides it: decided
	// is false where the kernel, asked as the caller, decides.
	MayReadProc(tid int32) (decided bool, err error)
}

// WalkPath resolves path from start as Linux's path_lookupat does: it
// checks search permission on every sentry directory it passes, follows
// symlinks (the last one only if follow is set or the path ends in '/'),
// and treats ".." at a mount's root as the mount point's parent on the
// host. A missing last component is not an error: Walk.Dentry is nil.
// Host components are resolved as the host kernel resolves them (see
// Resolve), for the sentry's own process.
func (v *VirtualFilesystem) WalkPath(c *Credentials, start Location, path string, follow bool) (Walk, error) {
	return v.Resolve(nil, c, start, path, follow, 0)
}

// Resolve restrictions of openat2 (RESOLVE_*).
const (
	ResolveNoXdev       = 0x01
	ResolveNoMagiclinks = 0x02
	ResolveNoSymlinks   = 0x04
	ResolveBeneath      = 0x08
	ResolveInRoot       = 0x10
)

// WalkPathResolve is WalkPath under openat2's restrictions: BENEATH
// refuses (EXDEV) absolute paths and ".." above start, IN_ROOT treats
// start as "/", NO_SYMLINKS refuses every symlink (ELOOP), NO_MAGICLINKS
// every magic link, NO_XDEV crossing a mount (EXDEV).
func (v *VirtualFilesystem) WalkPathResolve(c *Credentials, start Location, path string, follow bool, resolve uint64) (Walk, error) {
	return v.Resolve(nil, c, start, path, follow, resolve)
}

// Resolve is WalkPathResolve for caller (nil: the sentry itself). On the
// host it follows what the host kernel's walk of the same path would:
// every symlink and magic link is read and the walk goes on from its
// target, entering a sentry mount when it reaches the mount point, as the
// kernel crosses into a file system mounted there; /proc/self is the
// caller's process, and a guest's magic links lead to the sentry's files
// where the sentry serves them. Host lookups are made with the sentry's
// credentials; when their outcome led the walk into something the sentry
// serves, the walk is made again as the caller, so that it stops where
// the caller's own would (search permission, ptrace_may_access on
// /proc/PID).
func (v *VirtualFilesystem) Resolve(caller Caller, c *Credentials, start Location, path string, follow bool, resolve uint64) (Walk, error) {
	if caller == nil {
		caller = selfCaller{}
	}
	ws := walker{v: v, caller: caller, c: c, start: start, path: path, follow: follow, resolve: resolve}
	w, err := ws.run()
	if ws.recheck && ws.diverged && !caller.Privileged() {
		return runAsCaller(walker{v: v, caller: caller, c: c, start: start, path: path, follow: follow, resolve: resolve, asCaller: true})
	}
	return w, err
}

// runAsCaller is ws.run with the caller's credentials in force (apart, so
// that the common walk allocates no closure).
func runAsCaller(ws walker) (w Walk, err error) {
	if cerr := ws.caller.AsCaller(func() error {
		w, err = ws.run()
		return nil
	}); cerr != nil {
		return Walk{}, cerr
	}
	return w, err
}

// walker is one walk's state, as Linux's nameidata.
type walker struct {
	v       *VirtualFilesystem
	caller  Caller
	c       *Credentials
	start   Location
	path    string
	follow  bool
	resolve uint64
	// asCaller is set when host lookups run with the caller's
	// credentials (the second walk of Resolve).
	asCaller bool

	w    Walk
	cur  Location
	h    hostState
	rest string
	// links counts the links followed (nd->total_link_count); depth is
	// how far below start the walk is, for RESOLVE_BENEATH/IN_ROOT.
	links, depth int
	parent       Dentry
	name         string
	scoped       bool
	// slow is set when host components are looked up one at a time: a
	// link is on the way.
	slow bool
	// diverged is set when the walk went through something the sentry
	// serves; recheck when host lookups made with the sentry's own
	// credentials decided where it went.
	diverged, recheck bool
	// hostErr is set when the error being returned is a host lookup's.
	hostErr bool
}

func (ws *walker) run() (Walk, error) {
	err := ws.walk()
	// The start's descriptor is in use until here (hostFast, refreshDir).
	runtime.KeepAlive(ws.start.Dir)
	w := ws.w
	w.Entered = ws.diverged
	if err != nil {
		w.Location = ws.cur
		// Not after a jump through a magic link: the host, walking the
		// guest's path again, would follow the link again, to whatever
		// the number holds by then (a placeholder: the call would act
		// in the store), so a failure there is the sentry's answer.
		w.HostErr = ws.hostErr && !ws.diverged && !ws.w.Jumped && ws.cur.IsHost()
		return w, err
	}
	w.Location = ws.cur
	w.Dir = nil
	w.Parent = ws.parent
	w.Name = ws.name
	if ws.cur.Mount != nil && ws.parent == nil && ws.name != "." && ws.name != ".." {
		// Ended on a mount's root (or a followed link) without a last
		// component.
		w.Name = ""
	}
	return w, nil
}

func (ws *walker) walk() error {
	p := ws.path
	if p == "" {
		return unix.ENOENT
	}
	ws.w.TrailingSlash = p[len(p)-1] == '/'
	ws.scoped = ws.resolve&(ResolveBeneath|ResolveInRoot) != 0
	if !ws.start.IsHost() && p[0] != '/' {
		// The kernel would resolve the path from the placeholder: any
		// host result is the sentry's to name.
		ws.diverged = true
	}
	ws.setCur(ws.start)
	if p[0] == '/' {
		if err := ws.jumpRoot(); err != nil {
			return err
		}
	}
	ws.rest = p
	for {
		for len(ws.rest) > 0 && ws.rest[0] == '/' {
			ws.rest = ws.rest[1:]
		}
		if ws.rest == "" {
			return nil
		}
		if ws.cur.IsHost() {
			if !ws.slow {
				done, err := ws.hostFast()
				if err != nil {
					return err
				}
				if done {
					continue
				}
				ws.slow = true
			}
			comp, last := ws.next()
			if err := ws.hostStep(comp, last); err != nil {
				return err
			}
			continue
		}
		comp, last := ws.next()
		if err := ws.sentryStep(comp, last); err != nil {
			return err
		}
	}
}

// next takes the next component off the rest of the path.
func (ws *walker) next() (comp string, last bool) {
	rest := ws.rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		comp, ws.rest = rest[:i], rest[i:]
	} else {
		comp, ws.rest = rest, ""
	}
	ws.name = comp
	return comp, isLast(ws.rest)
}

// setCur moves the walk to l.
func (ws *walker) setCur(l Location) {
	ws.cur = l
	if l.IsHost() {
		ws.h = hostState{fixed: 1, procRoot: -2}
		if l.Host == "/" {
			ws.h = ws.v.host.root
		}
		ws.slow = false
	}
}

// jumpRoot is nd_jump_root: an absolute path or symlink target starts
// again at the root (IN_ROOT: at start; BENEATH: EXDEV).
func (ws *walker) jumpRoot() error {
	switch {
	case ws.resolve&ResolveInRoot != 0:
		ws.depth = 0
		ws.setCur(ws.start)
	case ws.resolve&ResolveBeneath != 0:
		return unix.EXDEV
	default:
		ws.setCur(ws.v.hostRoot())
	}
	return nil
}

// enterMount moves the walk onto m's root from the host, as the kernel
// crosses into a file system mounted on a directory it reached.
func (ws *walker) enterMount(m *Mount) error {
	if ws.resolve&ResolveNoXdev != 0 {
		return unix.EXDEV
	}
	ws.setCur(ws.v.Cross(Location{Mount: m, Dentry: m.Root}))
	ws.parent = nil
	ws.diverged = true
	return nil
}

// sentryStep walks one component in a sentry mount.
func (ws *walker) sentryStep(comp string, last bool) error {
	d := ws.cur.Dentry
	if d == nil {
		// A missing directory in the middle of the path.
		return unix.ENOENT
	}
	ino := d.Inode()
	if ino.Mode()&unix.S_IFMT != unix.S_IFDIR {
		return unix.ENOTDIR
	}
	if err := ino.CheckPermission(ws.c, MayExec); err != nil {
		return err
	}
	switch comp {
	case ".":
		ws.parent = nil
		return nil
	case "..":
		ws.parent = nil
		if ws.scoped && ws.depth == 0 {
			if ws.resolve&ResolveInRoot != 0 {
				return nil
			}
			return unix.EXDEV
		}
		ws.depth--
		for {
			if p := d.Parent(); p != nil {
				ws.cur = ws.v.Cross(Location{Mount: ws.cur.Mount, Dentry: p})
				return nil
			}
			m := ws.cur.Mount
			if m.Parent == nil {
				break
			}
			if ws.resolve&ResolveNoXdev != 0 {
				return unix.EXDEV
			}
			if m.Detached() {
				// follow_dotdot: a detached mount's root is its
				// own parent.
				return nil
			}
			// A guest's mount: ".." of its root is its mount
			// point's, in the mount below (follow_dotdot climbs).
			ws.cur = Location{Mount: m.Parent, Dentry: m.MountPoint}
			d = m.MountPoint
		}
		// ".." of a mount's root is the mount point's parent, and what
		// is mounted there.
		if ws.resolve&ResolveNoXdev != 0 {
			return unix.EXDEV
		}
		ws.setCur(ws.v.enter(parentPath(ws.v.hostPointOf(ws.cur.Mount))))
		return nil
	}
	if len(comp) > NameMax {
		return unix.ENAMETOOLONG
	}
	child, err := d.Lookup(comp)
	if err == unix.ENOENT {
		if !last {
			return unix.ENOENT
		}
		ws.parent = d
		ws.cur.Dentry = nil
		return nil
	}
	if err != nil {
		return err
	}
	if child.Inode().Mode()&unix.S_IFMT == unix.S_IFLNK && (!last || ws.follow || ws.w.TrailingSlash) {
		// pick_link's order: the count, the trailing link's
		// protection, RESOLVE_NO_SYMLINKS.
		ws.links++
		if ws.links > MaxSymlinks {
			return unix.ELOOP
		}
		if last && ws.v.host.protectedSymlinks && !ws.maySentryLink(ino, child.Inode()) {
			return unix.EACCES
		}
		if ws.resolve&ResolveNoSymlinks != 0 {
			return unix.ELOOP
		}
		target, err := child.Inode().Readlink()
		if err != nil {
			return err
		}
		if target == "" {
			return unix.ENOENT
		}
		if target[0] == '/' {
			if ws.resolve&ResolveNoXdev != 0 && ws.resolve&ResolveInRoot == 0 {
				// nd_jump_root: a jump to the root from another mount.
				return unix.EXDEV
			}
			if err := ws.jumpRoot(); err != nil {
				return err
			}
		}
		ws.rest = target + ws.rest
		// The symlink's own name no longer counts as the last one.
		ws.parent, ws.name = nil, ""
		return nil
	}
	ws.parent = d
	ws.cur.Dentry = child
	ws.depth++
	if m := ws.v.mountedOn(ws.cur.Mount, child); m != nil {
		// A guest's mount on it: its root, and the path no longer
		// ends on a name in a directory (a mount point is busy for
		// unlink, rename, rmdir).
		if ws.resolve&ResolveNoXdev != 0 {
			return unix.EXDEV
		}
		ws.cur = ws.v.Cross(ws.cur)
		ws.parent = nil
	}
	return nil
}

// maySentryLink is may_follow_link for a trailing symlink link of the
// sentry's in directory dir (fs.protected_symlinks, as the host has it:
// /tmp is sticky and world-writable, so another user's symlink there is
// not followed).
func (ws *walker) maySentryLink(dir, link Inode) bool {
	var d, l unix.Stat_t
	dir.Stat(&d)
	link.Stat(&l)
	return mayFollowLink(ws.c.UID, l.Uid, d.Mode, d.Uid)
}

func isLast(rest string) bool {
	for i := 0; i < len(rest); i++ {
		if rest[i] != '/' {
			return false
		}
	}
	return true
}

// parentPath is the parent of absolute clean path p ("/" for "/").
func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

// hostRoot is "/" (or the root of a mount at "/").
func (v *VirtualFilesystem) hostRoot() Location {
	return v.enter("/")
}

// enter is host path host, or the root of the mount on it.
func (v *VirtualFilesystem) enter(host string) Location {
	if i := v.pointIndex(host); i >= 0 {
		m := v.mounts[i]
		return v.Cross(Location{Mount: m, Dentry: m.Root})
	}
	return Location{Host: host}
}

// Covered reports whether host path p is a sentry mount point or below
// one: in the guest's mount namespace, a cover is there.
func (v *VirtualFilesystem) Covered(p string) bool {
	for i, m := range v.mounts {
		for _, point := range [2]string{m.Point, v.host.points[i].path} {
			if p == point || strings.HasPrefix(p, point) && (point == "/" || p[len(point)] == '/') {
				return true
			}
		}
	}
	return false
}

// pointIndex is the index of the mount whose mount point is host path p,
// or -1.
func (v *VirtualFilesystem) pointIndex(p string) int {
	for i, m := range v.mounts {
		if m.Point == p || v.host.points[i].path == p {
			return i
		}
	}
	return -1
}

// hostPointOf is m's mount point on the host.
func (v *VirtualFilesystem) hostPointOf(m *Mount) string {
	for i, mm := range v.mounts {
		if mm == m {
			return v.host.points[i].path
		}
	}
	return m.Point
}
