package vfs

import (
	"strings"

	"golang.org/x/sys/unix"
)

// Limits of a path walk, as Linux's.
const (
	// MaxSymlinks is MAXSYMLINKS: the 41st symlink followed in one walk
	// fails with ELOOP.
	MaxSymlinks = 40
	// NameMax is NAME_MAX.
	NameMax = 255
)

// Location is a point in the guest's path tree: a dentry in one of the
// sentry's mounts, or (Mount == nil) an absolute host path.
type Location struct {
	Mount  *Mount
	Dentry Dentry
	Host   string
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
	// one, "" when it ended on a root.
	Name string
	// TrailingSlash is set when the path ends with '/': the file must be
	// a directory (Linux's LOOKUP_DIRECTORY on the last component).
	TrailingSlash bool
	// Entered is set when the walk went through a sentry mount, so that a
	// host result is not what the host kernel would find by the guest's
	// path.
	Entered bool
}

// WalkPath resolves path from start as Linux's path_lookupat does: it
// checks search permission on every sentry directory it passes, follows
// symlinks (the last one only if follow is set or the path ends in '/'),
// and treats ".." at a mount's root as the mount point's parent on the
// host. A missing last component is not an error: Walk.Dentry is nil.
// Host components are resolved lexically; the host kernel resolves them
// again when the call passes through.
func (v *VirtualFilesystem) WalkPath(c *Credentials, start Location, path string, follow bool) (Walk, error) {
	return v.WalkPathResolve(c, start, path, follow, 0)
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
// start as "/", NO_SYMLINKS refuses every symlink (ELOOP), NO_XDEV refuses
// crossing a mount (EXDEV).
func (v *VirtualFilesystem) WalkPathResolve(c *Credentials, start Location, path string, follow bool, resolve uint64) (Walk, error) {
	var w Walk
	if path == "" {
		return w, unix.ENOENT
	}
	w.TrailingSlash = path[len(path)-1] == '/'
	cur := start
	scoped := resolve&(ResolveBeneath|ResolveInRoot) != 0
	depth := 0
	root := func() (Location, error) {
		switch {
		case resolve&ResolveInRoot != 0:
			depth = 0
			return start, nil
		case resolve&ResolveBeneath != 0:
			return Location{}, unix.EXDEV
		}
		return v.hostRoot(), nil
	}
	if path[0] == '/' {
		r, err := root()
		if err != nil {
			return w, err
		}
		cur = r
	}
	if scoped && start.Mount == nil {
		// Scoped resolution from a host directory is the host's to do.
		w.Location = start
		return w, nil
	}
	var parent Dentry
	name := ""
	links := 0
	rest := path
	for {
		for len(rest) > 0 && rest[0] == '/' {
			rest = rest[1:]
		}
		if rest == "" {
			break
		}
		comp := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			comp, rest = rest[:i], rest[i:]
		} else {
			rest = ""
		}
		last := isLast(rest)
		name = comp
		if cur.Mount == nil {
			cur = v.hostStep(cur.Host, comp)
			parent = nil
			if cur.Mount != nil {
				if resolve&ResolveNoXdev != 0 {
					return w, unix.EXDEV
				}
				w.Entered = true
			}
			continue
		}
		d := cur.Dentry
		if d == nil {
			// A missing directory in the middle of the path.
			return w, unix.ENOENT
		}
		ino := d.Inode()
		if ino.Mode()&unix.S_IFMT != unix.S_IFDIR {
			return w, unix.ENOTDIR
		}
		if err := ino.CheckPermission(c, MayExec); err != nil {
			return w, err
		}
		switch comp {
		case ".":
			parent = nil
			continue
		case "..":
			parent = nil
			if scoped && depth == 0 {
				if resolve&ResolveInRoot != 0 {
					continue
				}
				return w, unix.EXDEV
			}
			depth--
			if p := d.Parent(); p != nil {
				cur.Dentry = p
			} else {
				// ".." of a mount's root is the mount point's parent.
				if resolve&ResolveNoXdev != 0 {
					return w, unix.EXDEV
				}
				cur = v.hostStep(cur.Mount.Point, "..")
			}
			continue
		}
		if len(comp) > NameMax {
			return w, unix.ENAMETOOLONG
		}
		child, err := d.Lookup(comp)
		if err == unix.ENOENT {
			if !last {
				return w, unix.ENOENT
			}
			parent = d
			cur.Dentry = nil
			continue
		}
		if err != nil {
			return w, err
		}
		if child.Inode().Mode()&unix.S_IFMT == unix.S_IFLNK && (!last || follow || w.TrailingSlash) {
			if resolve&ResolveNoSymlinks != 0 {
				return w, unix.ELOOP
			}
			links++
			if links > MaxSymlinks {
				return w, unix.ELOOP
			}
			target, err := child.Inode().Readlink()
			if err != nil {
				return w, err
			}
			if target == "" {
				return w, unix.ENOENT
			}
			if target[0] == '/' {
				r, err := root()
				if err != nil {
					return w, err
				}
				cur = r
			}
			rest = target + rest
			// The symlink's own name no longer counts as the last one.
			parent, name = nil, ""
			continue
		}
		parent = d
		cur.Dentry = child
		depth++
	}
	w.Location = cur
	w.Parent = parent
	w.Name = name
	if cur.Mount != nil && parent == nil && name != "." && name != ".." {
		// Ended on a mount's root without a last component.
		w.Name = ""
	}
	return w, nil
}

func isLast(rest string) bool {
	for i := 0; i < len(rest); i++ {
		if rest[i] != '/' {
			return false
		}
	}
	return true
}

// hostRoot is "/" (or the root of a mount at "/").
func (v *VirtualFilesystem) hostRoot() Location {
	return v.enter("/")
}

// hostStep moves one component on the host, lexically, and into a mount
// when the new path is a mount point.
func (v *VirtualFilesystem) hostStep(host, comp string) Location {
	switch comp {
	case ".", "":
	case "..":
		if i := strings.LastIndexByte(host, '/'); i > 0 {
			host = host[:i]
		} else {
			host = "/"
		}
	default:
		if host == "/" {
			host = "/" + comp
		} else {
			host = host + "/" + comp
		}
	}
	return v.enter(host)
}

func (v *VirtualFilesystem) enter(host string) Location {
	for _, m := range v.mounts {
		if m.Point == host {
			return Location{Mount: m, Dentry: m.Root}
		}
	}
	return Location{Host: host}
}

// MayLeadToMount reports whether a walk from host directory dir along a
// relative path could reach a sentry mount: only if the path climbs with
// ".." or dir is a mount point's ancestor. Calls for which it is false
// pass through without a walk.
func (v *VirtualFilesystem) MayLeadToMount(dir, path string) bool {
	if strings.Contains(path, "..") {
		return true
	}
	for _, m := range v.mounts {
		if dir == "/" || strings.HasPrefix(m.Point, dir) && (len(m.Point) == len(dir) || m.Point[len(dir)] == '/') {
			return true
		}
	}
	return false
}
