package syscalls

import (
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
}

// resolveAt resolves (dirfd, path) as Linux's *at calls do: the path is
// copied first (EFAULT, ENAMETOOLONG, ENOENT for an empty one unless
// emptyOK), then the walk starts at "/", the working directory or dirfd.
// Paths that stay on the host are left to the host kernel (host = true),
// which then reports its own errors (EBADF for a bad dirfd, ...).
func resolveAt(t *sentry.Task, dirfd int32, addr uintptr, follow, emptyOK bool) (resolved, error) {
	return resolveAtScoped(t, dirfd, addr, follow, emptyOK, 0)
}

// resolveAtScoped is resolveAt under openat2's RESOLVE_* restrictions.
func resolveAtScoped(t *sentry.Task, dirfd int32, addr uintptr, follow, emptyOK bool, resolve uint64) (resolved, error) {
	var r resolved
	p, err := t.ReadPath(addr)
	if err != nil {
		return r, err
	}
	r.pathLen = len(p)
	if len(p) == 0 {
		if !emptyOK {
			return r, unix.ENOENT
		}
		return resolveEmpty(t, dirfd)
	}
	k := t.Kernel()
	if p[0] == '/' && len(p) > 6 && string(p[:6]) == "/proc/" {
		if f, rest, ok := procFDLink(t, string(p)); ok {
			// /proc/self/fd/N of a virtual fd is a magic link to the
			// sentry's file, as the kernel's proc_fd_link.
			defer f.DecRef()
			if rest == "" && !follow {
				// Not followed (lstat, unlink, O_NOFOLLOW): the call is
				// on the magic link itself, a procfs symlink the host
				// serves as it would natively.
				r.host = true
				return r, nil
			}
			if rest == "" {
				// The link itself has no parent a name operation
				// could change (unlink, rename and mkdir refuse it).
				r.Location = vfs.Location{Mount: f.Mount, Dentry: f.Dentry}
				return r, nil
			}
			w, err := k.VFS.WalkPathResolve(t.Creds(), vfs.Location{Mount: f.Mount, Dentry: f.Dentry}, rest, follow, resolve)
			if err != nil {
				return r, err
			}
			r.Walk = w
			r.host = w.IsHost()
			return r, nil
		}
	}
	var start vfs.Location
	if p[0] != '/' {
		switch {
		case dirfd == unix.AT_FDCWD:
			start = t.FSContext().Cwd()
			if start.IsHost() && !k.VFS.MayLeadToMount(start.Host, string(p)) {
				r.host = true
				return r, nil
			}
		default:
			f := t.FDTable().Get(dirfd)
			if f == nil {
				dir, ok := hostFDPath(t, dirfd)
				if !ok || !k.VFS.MayLeadToMount(dir, string(p)) {
					r.host = true
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
	w, err := k.VFS.WalkPathResolve(t.Creds(), start, string(p), follow, resolve)
	if err != nil {
		return r, err
	}
	r.Walk = w
	r.pathLen = len(p)
	// A walk that ends on the host is the host's to serve; if it went
	// through a sentry mount (a symlink there, ".." out of it, a working
	// directory in it), the host gets the path the sentry resolved.
	r.host = w.IsHost()
	if r.host && (w.Entered || !start.IsHost()) {
		host := w.Host
		if w.TrailingSlash {
			host += "/"
		}
		r.hostPath = host
		if t.Notified() {
			t.RedirectHost(host)
			return r, nil
		}
		newAddr, err := t.WriteStackString(host)
		if err != nil {
			return r, err
		}
		t.RedirectPath(addr, newAddr)
	}
	return r, nil
}

// resolveEmpty is an empty path with AT_EMPTY_PATH: the dirfd itself.
func resolveEmpty(t *sentry.Task, dirfd int32) (resolved, error) {
	var r resolved
	if dirfd == unix.AT_FDCWD {
		loc := t.FSContext().Cwd()
		r.Location = loc
		r.host = loc.IsHost()
		return r, nil
	}
	f := t.FDTable().Get(dirfd)
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
func hostFDPath(t *sentry.Task, fd int32) (string, bool) {
	if fd < 0 {
		return "", false
	}
	var buf [unix.PathMax]byte
	n, err := unix.Readlink("/proc/"+strconv.Itoa(int(t.TID))+"/fd/"+strconv.Itoa(int(fd)), buf[:])
	if err != nil || n == 0 || buf[0] != '/' {
		return "", false
	}
	return string(buf[:n]), true
}

// statBytes views a stat buffer as the bytes the guest receives.
func statBytes(st *unix.Stat_t) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(st)), unsafe.Sizeof(*st))
}

func statxBytes(st *unix.Statx_t) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(st)), unsafe.Sizeof(*st))
}

// procFDLink recognizes /proc/{self,thread-self,PID}[/task/TID]/fd/N[/rest]
// naming a virtual fd of a guest process and returns its description (with
// a reference) and the rest of the path ("" for the link itself). TID must
// be a thread of the process, as proc_task_lookup requires.
func procFDLink(t *sentry.Task, p string) (*vfs.FileDescription, string, bool) {
	who, rest, ok := strings.Cut(p[len("/proc/"):], "/")
	if !ok {
		return nil, "", false
	}
	var pid int32
	switch who {
	case "self":
		pid = t.TG.TGID
	case "thread-self":
		// A symlink to self/task/TID.
		pid = t.TG.TGID
		rest = "task/" + strconv.Itoa(int(t.TID)) + "/" + rest
	default:
		n, err := strconv.Atoi(who)
		if err != nil || n <= 0 {
			return nil, "", false
		}
		pid = int32(n)
	}
	tid := pid
	if task, ok := strings.CutPrefix(rest, "task/"); ok {
		num, r, ok := strings.Cut(task, "/")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n <= 0 {
			return nil, "", false
		}
		tid, rest = int32(n), r
		if tt := t.Kernel().Task(tid); tt == nil || tt.TG.TGID != pid {
			return nil, "", false
		}
	}
	rest = "/" + rest
	fdt := t.FDTable()
	if tid != t.TID && tid != t.TG.TGID {
		// Another guest process's descriptors (ls -l /proc/PID/fd).
		if fdt = t.Kernel().FDTableOf(tid); fdt == nil {
			return nil, "", false
		}
	}
	if !strings.HasPrefix(rest, "/fd/") {
		return nil, "", false
	}
	rest = rest[len("/fd/"):]
	j := strings.IndexByte(rest, '/')
	num := rest
	if j >= 0 {
		num, rest = rest[:j], rest[j:]
	} else {
		rest = ""
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return nil, "", false
	}
	f := fdt.Get(int32(n))
	if f == nil {
		return nil, "", false
	}
	for len(rest) > 0 && rest[0] == '/' {
		rest = rest[1:]
	}
	return f, rest, true
}

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
