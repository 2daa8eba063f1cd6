package syscalls

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/sentry"
	"sentry/sentry/vfs"
)

// resolved is where a path argument leads.
type resolved struct {
	vfs.Walk
	// host is set when the host kernel must serve the call as the guest
	// issued it.
	host bool
	// file is the description when the path was empty and the dirfd a
	// virtual fd (AT_EMPTY_PATH); the caller releases it.
	file *vfs.FileDescription
	// pathLen is the length of the path read (its NUL is at addr+pathLen).
	pathLen int
	// hostPath is set when the host must use this path instead of the
	// guest's (the walk went through a sentry mount back to the host).
	hostPath string
	// hostErr is the error the host kernel gives the guest's own path
	// when a host lookup failed before the walk reached its end; a call
	// whose other path is the sentry's reports it in Linux's order.
	hostErr error
	// badDirfd is set when the path is relative to a descriptor that is
	// no host directory with a path (hostDirfdErr tells which error).
	badDirfd bool
}

// resolveAt resolves (dirfd, path) as Linux's *at calls do: the path is
// copied first (EFAULT, ENAMETOOLONG, ENOENT for an empty one unless
// emptyOK), then the walk starts at "/", the working directory or dirfd.
// Paths that stay on the host are left to the host kernel (host = true),
// which then reports its own errors (EBADF for a bad dirfd, ...).
func resolveAt(c *sentry.Call, dirfd int32, addr uintptr, follow, emptyOK bool) (resolved, error) {
	return resolveAtScoped(c, dirfd, addr, follow, emptyOK, 0)
}

// resolveAtScoped is resolveAt under openat2's RESOLVE_* restrictions.
// Every path goes through the walk, host paths too: only the walk tells
// whether the host kernel's own resolution of the path would meet a
// symlink or magic link leading into the sentry's files (vfs.Resolve).
func resolveAtScoped(c *sentry.Call, dirfd int32, addr uintptr, follow, emptyOK bool, resolve uint64) (resolved, error) {
	var r resolved
	p, err := c.ReadPath(addr)
	if err != nil {
		return r, err
	}
	r.pathLen = len(p)
	if len(p) == 0 {
		if !emptyOK {
			return r, unix.ENOENT
		}
		return resolveEmpty(c, dirfd)
	}
	var start vfs.Location
	startPinned := false
	if p[0] != '/' {
		switch {
		case dirfd == unix.AT_FDCWD:
			start = c.FSContext().Cwd()
		default:
			f := c.FDTable().Get(dirfd)
			if f == nil && racedDirfd(c) {
				start, startPinned, err = pinDirfd(c, dirfd)
				if err != nil {
					return r, err
				}
				break
			}
			if f == nil {
				dir, ok := hostFDPath(c, dirfd)
				if ok && storeName(dir) && onSentryStore(c, dirfd) {
					// A placeholder the sentry does not know: the host
					// would resolve the path in the store itself.
					return r, errUnserved
				}
				if !ok {
					// Not a directory with a path (a pipe, a bad
					// descriptor): the host reports its error.
					r.host = true
					r.badDirfd = true
					return r, nil
				}
				// A host fd is a host directory, even where a sentry
				// mount now hides its path.
				start = vfs.Location{Host: dir}
				break
			}
			start = vfs.Location{Mount: f.Mount, Dentry: f.Dentry}
			f.DecRef()
		}
	}
	w, err := c.Kernel().VFS.Resolve(guestCaller{c}, c.Creds(), start, string(p), follow, resolve)
	if err != nil {
		if w.HostErr {
			// Nothing of the sentry's on the way: the host kernel
			// finds the same error in the guest's own path.
			r.host = true
			r.hostErr = err
			return r, nil
		}
		return r, err
	}
	r.Walk = w
	if w.Entered || w.Jumped {
		pids := [2]int32{w.ProcPID, procPIDOf(w.Host)}
		for i, pid := range pids {
			if pid == 0 || i == 1 && pid == pids[0] {
				continue
			}
			if err := mayEnterProc(c, pid); err != nil {
				return r, err
			}
		}
	}
	// A walk that ends on the host is the host's to serve; if it went
	// through something of the sentry's (a mount, a symlink there, ".."
	// out of it, a working directory in it, a virtual descriptor in
	// /proc), the host gets the path the sentry resolved.
	r.host = w.IsHost()
	endPinned := false
	if r.host && w.JumpedAt != "" && racedDirfd(c) {
		loc, pinned, err := pinEnd(c, w.JumpedAt)
		switch {
		case err != nil:
			return r, err
		case !loc.IsHost():
			r.Walk.Location, r.host = loc, false
			return r, nil
		case pinned:
			w.Host, r.Walk.Host, endPinned = loc.Host, loc.Host, true
		}
	}
	if r.host && (w.Entered || pinJump(c, w) || (startPinned || endPinned) && pinnable(c, w.Host)) {
		host := w.Host
		if w.TrailingSlash && host != "/" {
			host += "/"
		}
		if len(host) >= unix.PathMax {
			if !w.Entered {
				// The guest's own path, as before the jump was
				// pinned (the target's path is too long to give).
				return r, nil
			}
			return r, unix.ENAMETOOLONG
		}
		r.hostPath = host
		if c.Notified() {
			c.RedirectHost(host)
			return r, nil
		}
		newAddr, err := c.WriteStackString(host)
		if err != nil {
			return r, err
		}
		c.RedirectPath(addr, newAddr)
	}
	return r, nil
}

// pinJump reports whether a walk that followed a magic link of a
// descriptor the sentry does not hold (Walk.Jumped), and ended on the
// host, is given to the host by the path it found: the target's own path
// (Walk.LinkNamed unset: the walk read it from the link and found the
// same file there), outside the sentry's mount points (where the guest's
// namespace has covers). The guest's own path would have the host follow
// the link again, and a racing thread that puts a placeholder at that
// number in between makes the call act in the sandbox's store
// (mkdir("/proc/self/fd/N/x") against a dup2 moving N between a host
// directory and a tmpfs one: 661 of 2,994 made in the store on ptrace, 507
// of 2,999 on unotify; TestPathRaceKeepsTheStore). What has no such path
// (a deleted directory, one under a cover) is still the guest's path. So
// is a path that ends on the link (Walk.JumpedAt): the link reaches the
// file without the search of its directories that its path needs (a
// reopen, an exec of /proc/self/exe, checked by their own handlers). A
// stopped call's walk is made in the tracer's mount namespace, the host's:
// for a guest that may mount (CAP_SYS_ADMIN of the host: the host's root),
// whose own mounts may make the path lead elsewhere in its namespace, the
// path's directory must be the same file through the guest's root (a
// notified call's walk is made in the guest's namespace).
func pinJump(c *sentry.Call, w vfs.Walk) bool {
	return w.Jumped && w.JumpedAt == "" && !w.LinkNamed && pinnable(c, w.Host)
}

// pinnable reports whether host path p, where a walk the sentry made
// ended, may be given to the host for the guest's call: outside the
// sentry's mount points, and, for a stopped call of a guest that may
// mount, the same place in the guest's mount namespace (see pinJump).
func pinnable(c *sentry.Call, p string) bool {
	if c.Kernel().VFS.Covered(p) {
		return false
	}
	if c.Notified() || !c.Creds().Capable(vfs.CapSysAdmin) {
		return true
	}
	dir := p[:max(strings.LastIndexByte(p, '/'), 1)]
	var mine, guest unix.Statx_t
	const flags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_STATX_DONT_SYNC
	return unix.Statx(unix.AT_FDCWD, dir, flags, 0, &mine) == nil &&
		unix.Statx(unix.AT_FDCWD, "/proc/"+strconv.Itoa(int(c.TID))+"/root"+dir, flags, 0, &guest) == nil &&
		mine.Dev_major == guest.Dev_major && mine.Dev_minor == guest.Dev_minor && mine.Ino == guest.Ino
}

// mayEnterProc decides, for a walk that went through /proc/PID of another
// process and whose host part the sentry resolved or acts on itself (it
// went through something of the sentry's, or followed a magic link),
// what the kernel's ptrace_may_access would for the guest, where the
// sentry's threads cannot ask the kernel as the guest:
//
//   - PID is a thread of the sentry itself: its threads pass every check
//     on their own process (same_thread_group), /proc/PID/mem and the
//     descriptors of the sentry among them. Only a guest with
//     CAP_SYS_PTRACE of the sentry's namespace (the host's root) may go
//     there, as Linux lets it.
//   - the guest is in a user namespace of its own (the sandbox's) and PID
//     in another: cap_ptrace_access_check wants CAP_SYS_PTRACE in PID's
//     namespace, which the guest never has; the sentry's threads, of the
//     initial namespace, would be judged as its tasks.
//
// Both are EACCES, as proc_fd_access_allowed gives; stricter than Linux
// for the few /proc/PID files anyone may read (status, cmdline), reached
// this way only.
func mayEnterProc(c *sentry.Call, pid int32) error {
	var st unix.Stat_t
	if unix.Stat("/proc/self/task/"+strconv.Itoa(int(pid)), &st) == nil {
		if !c.Creds().Capable(vfs.CapSysPtrace) {
			return unix.EACCES
		}
		return nil
	}
	if cr := c.Creds(); cr.Foreign {
		other, err := os.Readlink("/proc/" + strconv.Itoa(int(pid)) + "/ns/user")
		if err != nil || cr.UserNS == "" || other != cr.UserNS {
			return unix.EACCES
		}
	}
	return nil
}

// procPIDOf is PID when host path p is in /proc/PID (0 if not): where a
// walk through no link ended (the walk's ProcPID sees the others).
func procPIDOf(p string) int32 {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return 0
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	n, err := strconv.ParseInt(rest, 10, 32)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != rest {
		return 0
	}
	return int32(n)
}

// resolveEmpty is an empty path with AT_EMPTY_PATH: the dirfd itself.
func resolveEmpty(c *sentry.Call, dirfd int32) (resolved, error) {
	var r resolved
	if dirfd == unix.AT_FDCWD {
		loc := c.FSContext().Cwd()
		r.Location = loc
		r.host = loc.IsHost()
		return r, nil
	}
	f := c.FDTable().Get(dirfd)
	if f == nil {
		r.host = true
		return r, nil
	}
	r.file = f
	r.Location = vfs.Location{Mount: f.Mount, Dentry: f.Dentry}
	return r, nil
}

// hostFDPath is the host path of one of the guest's host fds, as the
// kernel names it.
func hostFDPath(c *sentry.Call, fd int32) (string, bool) {
	if fd < 0 {
		return "", false
	}
	var buf [unix.PathMax]byte
	n, err := unix.Readlink(c.FDLink(fd), buf[:])
	if err != nil || n == 0 || buf[0] != '/' {
		return "", false
	}
	return string(buf[:n]), true
}

// racedDirfd reports whether a descriptor of c's task that the table
// does not hold may become a placeholder between the sentry's look and
// the kernel's use of it, and whether the kernel would then let the task
// into the store: another thread sharing the table can put one there
// (dup2 of a tmpfs directory's descriptor, an open), and the store's
// directories (root's, mode 0700) are closed to all but their owner and
// a task that overrides their mode. An unshared table changes only by
// the task's own calls, one at a time.
func racedDirfd(c *sentry.Call) bool {
	if !c.FDTable().Shared() {
		return false
	}
	cr := c.Creds()
	return cr.UID == 0 || cr.Caps.Has(vfs.CapDacOverride) || cr.Caps.Has(vfs.CapDacReadSearch)
}

// pinDirfd is where a walk relative to dirfd starts, a descriptor of the
// guest's the table does not hold, when another thread may change the
// number meanwhile (racedDirfd): a placeholder put there between the
// sentry's look and the kernel's use of it made the host resolve the
// guest's path in the store (mkdirat against a thread moving the number
// between a host directory and a tmpfs one: some hundreds of 3,000 made
// in the store on both platforms). So the file is taken once, by an
// O_PATH open of its link (the very file, an O_PATH descriptor's too),
// and the walk starts at that file's own path, which the host then gets
// whole (pinned is set when the path leads back to the file): the kernel
// never looks at the number again. The errors are path_init's: EBADF,
// ENOTDIR.
func pinDirfd(c *sentry.Call, dirfd int32) (start vfs.Location, pinned bool, err error) {
	if dirfd < 0 {
		return start, false, unix.EBADF
	}
	start, pl, err := pinTarget(c, c.FDLink(dirfd), dirfd)
	switch {
	case err == unix.ENOENT:
		// Not open.
		return start, false, unix.EBADF
	case err != nil || !start.IsHost():
		// A placeholder there is the table's virtual directory.
		return start, false, err
	case pl.Stat.Mode&unix.S_IFMT != unix.S_IFDIR || pl.Path == "":
		return start, false, unix.ENOTDIR
	}
	return vfs.Location{Host: pl.Path}, pl.PathLeadsBack, nil
}

// pinEnd is where a path that ends on magic link link leads (chdir,
// chroot or an opendir of "/proc/self/fd/N", followed), when another
// thread may change the number meanwhile (racedDirfd): the host, given
// the guest's path, would follow the link again, and a directory's
// placeholder put there by then made the call act in the store (chdir:
// the working directory; see fchdirPinned). A directory is taken once
// (pinTarget) and given to the host by its own path (pinned), or is the
// table's virtual directory; a placeholder of a file is the table's
// virtual file. A host file that is no directory is left to the guest's
// path (an open or exec of it checks what it got), and so is a directory
// whose own path does not lead back to it.
func pinEnd(c *sentry.Call, link string) (loc vfs.Location, pinned bool, err error) {
	fd, own := ownFDLink(c, link)
	if !own {
		fd = -1
	}
	loc, pl, err := pinTarget(c, link, fd)
	switch {
	case err != nil || !loc.IsHost():
		return loc, false, err
	case pl.Stat.Mode&unix.S_IFMT == unix.S_IFDIR && pl.PathLeadsBack:
		return vfs.Location{Host: pl.Path}, true, nil
	}
	return loc, false, nil
}

// pinTarget takes the file magic link link of c's task leads to now
// (vfs.PinLink; descriptor fd's link, or -1). A placeholder there is the
// table's virtual file (loc), found by its backing when the table does
// not have it at fd yet (a stopped dup2 before its exit); else loc is the
// host's (empty) and pl tells what the file is.
func pinTarget(c *sentry.Call, link string, fd int32) (loc vfs.Location, pl vfs.PinnedLink, err error) {
	pl, err = vfs.PinLink(link)
	if err != nil || !c.Kernel().VFS.StoreDev(pl.Dev()) {
		return loc, pl, err
	}
	var f *vfs.FileDescription
	if fd >= 0 {
		f = c.FDTable().Get(fd)
	}
	if f == nil {
		f = c.FDTable().Find(func(d *vfs.FileDescription) bool {
			if d.HostFD < 0 || d.Dentry == nil {
				return false
			}
			dev, ino, ok := vfs.HostFileID(d.HostFD, "")
			return ok && dev == pl.Dev() && ino == pl.Stat.Ino
		})
	}
	if f == nil {
		return loc, pl, errUnserved
	}
	defer f.DecRef()
	return vfs.Location{Mount: f.Mount, Dentry: f.Dentry}, pl, nil
}

// hostDirfdErr is the error path_init gives a relative path from dirfd,
// one of the guest's descriptors that is no host directory with a path:
// EBADF when there is no such descriptor, else ENOTDIR.
func hostDirfdErr(c *sentry.Call, fd int32) error {
	var st unix.Stat_t
	if fd < 0 || unix.Lstat(c.FDLink(fd), &st) != nil {
		return unix.EBADF
	}
	return unix.ENOTDIR
}

// storeName reports whether host path p could name a file of a sentry
// store ("r<ino>", "d<ino>", "anon", fs/tmpfs/storage.go, maybe deleted):
// a cheap test before the exact one (onSentryStore).
func storeName(p string) bool {
	p = strings.TrimSuffix(p, " (deleted)")
	name := p[strings.LastIndexByte(p, '/')+1:]
	if name == "anon" {
		return true
	}
	if len(name) < 2 || name[0] != 'r' && name[0] != 'd' {
		return false
	}
	for _, ch := range name[1:] {
		if ch < '0' || ch > '9' {
			return false
		}
	}
	return true
}

// statBytes views a stat buffer as the bytes the guest receives.
func statBytes(st *unix.Stat_t) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(st)), unsafe.Sizeof(*st))
}

func statxBytes(st *unix.Statx_t) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(st)), unsafe.Sizeof(*st))
}

// guestCaller is the walk's vfs.Caller for call c: /proc/self is its
// process, the sentry's guests' magic links lead to the sentry's files
// (proc_fd_link of a virtual descriptor, proc_cwd_link of a working
// directory in a mount; the sentry does not model chroot, so a guest's
// root is "/"), and host lookups are made as c's task.
type guestCaller struct{ c *sentry.Call }

func (g guestCaller) TGID() int32 { return g.c.TG.TGID }
func (g guestCaller) TID() int32  { return g.c.TID }

func (g guestCaller) Guest(id int32) (int32, bool) {
	if id == g.c.TID {
		return g.c.TG.TGID, true
	}
	o := g.c.Kernel().Task(id)
	if o == nil {
		return 0, false
	}
	return o.TG.TGID, true
}

func (g guestCaller) ProcLink(tid int32, name string, fd int32) vfs.Location {
	k := g.c.Kernel()
	switch name {
	case "root":
		return vfs.Location{Host: "/"}
	case "cwd":
		o := g.c.Task
		if tid != g.c.TID {
			if o = k.Task(tid); o == nil {
				return vfs.Location{}
			}
		}
		if cwd := o.FSContext().Cwd(); !cwd.IsHost() {
			return vfs.Location{Mount: cwd.Mount, Dentry: cwd.Dentry}
		}
	case "fd":
		fdt := g.c.FDTable()
		if tid != g.c.TID {
			// Another guest thread's table (ls -l /proc/PID/fd).
			if fdt = k.FDTableOf(tid); fdt == nil {
				return vfs.Location{}
			}
		}
		if f := fdt.Get(fd); f != nil {
			// The table's reference keeps the file alive after ours
			// goes.
			defer f.DecRef()
			return vfs.Location{Mount: f.Mount, Dentry: f.Dentry}
		}
	}
	return vfs.Location{}
}

// Privileged reports that asGuest would change nothing: the guest acts
// with the sentry's own identity.
func (g guestCaller) Privileged() bool {
	return g.c.Kernel().IsHostIdentity(g.c.Creds())
}

// AsCaller runs fn with t's identity (asGuest: fsuid, fsgid, groups and
// effective capabilities, so that ptrace_may_access on /proc/PID is the
// guest's and not the sentry's CAP_SYS_PTRACE) on this thread, locked to
// it.
func (g guestCaller) AsCaller(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return asGuest(g.c.Task, false, fn)
}

// MayReadProc is Task.MayReadProc: the sentry's answer for its own
// guests of the caller's user namespace.
func (g guestCaller) MayReadProc(tid int32) (bool, error) { return g.c.Task.MayReadProc(tid) }

// existing takes a resolution for calls that act on an existing sentry
// file in place (readlink, access, chmod, ...): ok is false with res the
// answer when the resolution failed, the host must serve the call, or the
// file does not exist (ENOENT); a trailing slash on a non-directory is
// ENOTDIR (the walk's LOOKUP_DIRECTORY).
func existing(r resolved, err error) (d vfs.Dentry, res sentry.Result, ok bool) {
	switch {
	case err != nil:
		return nil, sentry.ErrOf(err), false
	case r.file != nil:
		// The table's reference keeps the file alive after ours goes.
		d = r.file.Dentry
		r.file.DecRef()
		return d, res, true
	case r.host:
		return nil, sentry.Pass(), false
	case r.Dentry == nil:
		return nil, sentry.Err(unix.ENOENT), false
	case r.TrailingSlash && r.Dentry.Inode().Mode()&unix.S_IFMT != unix.S_IFDIR:
		return nil, sentry.Err(unix.ENOTDIR), false
	}
	return r.Dentry, res, true
}
