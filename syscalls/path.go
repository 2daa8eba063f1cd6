package syscalls

import (
	"strconv"
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
	// A walk that ends on the host is the host's to serve.
	r.host = w.IsHost()
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
