package vfs

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// This file is the walk in a procfs: /proc/self and /proc/thread-self,
// which name the caller; a guest's own /proc/PID, which the sentry knows;
// and the magic links (proc_fd_link, proc_cwd_link, proc_root_link,
// proc_exe_link) of guests, which lead to what the sentry serves, and of
// other processes, which lead where the kernel's do.

// Where a directory is in a procfs.
const (
	procNone = iota
	procAtRoot
	procAtPid  // /proc/PID
	procAtTask // /proc/PID/task
	procAtTid  // /proc/PID/task/TID
	procAtFD   // /proc/PID/fd, /proc/PID/task/TID/fd
)

type procPos struct {
	kind     int
	pid, tid int32
}

// procNum is a /proc directory name's number (name_to_int: decimal, no
// leading zero).
func procNum(s string) (int32, bool) {
	if s == "" || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := int64(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if n > 1<<31-1 {
		return 0, false
	}
	return int32(n), true
}

// parseProcPos is where rel (a path below a procfs root, "" for the
// root itself) is.
func parseProcPos(rel string) procPos {
	if rel == "" {
		return procPos{kind: procAtRoot}
	}
	var c [5]string
	n := 0
	for rel != "" {
		if n == len(c) || rel[0] != '/' {
			return procPos{}
		}
		rel = rel[1:]
		i := strings.IndexByte(rel, '/')
		if i < 0 {
			i = len(rel)
		}
		c[n], rel = rel[:i], rel[i:]
		n++
	}
	pid, ok := procNum(c[0])
	if !ok {
		return procPos{}
	}
	switch {
	case n == 1:
		return procPos{procAtPid, pid, pid}
	case n == 2 && c[1] == "fd":
		return procPos{procAtFD, pid, pid}
	case n == 2 && c[1] == "task":
		return procPos{procAtTask, pid, pid}
	}
	if c[1] != "task" {
		return procPos{}
	}
	tid, ok := procNum(c[2])
	switch {
	case !ok:
		return procPos{}
	case n == 3:
		return procPos{procAtTid, pid, tid}
	case n == 4 && c[3] == "fd":
		return procPos{procAtFD, pid, tid}
	}
	return procPos{}
}

// procPos is where the current host directory is in a procfs.
func (ws *walker) procPos() procPos {
	h := &ws.h
	if h.procRoot == -2 {
		ws.findProcRoot()
	}
	if h.procRoot < 0 {
		return procPos{}
	}
	return parseProcPos(ws.cur.Host[h.procRoot:])
}

// findProcRoot finds the procfs root above the current directory, if it
// is in a procfs: the walk started there, or a magic link led there.
func (ws *walker) findProcRoot() {
	h := &ws.h
	h.procRoot = -1
	if h.fixed != 1 || !h.mntKnown || !ws.v.host.mountInfo(h.mnt, ws.cur.Host).proc {
		return
	}
	for p := ws.cur.Host; ; p = parentPath(p) {
		var stx unix.Statx_t
		if statxPath(p, 0, &stx) != nil || stx.Mnt_id != h.mnt {
			return
		}
		if isProcRoot(&stx) {
			if p == "/" {
				h.procRoot = 0
			} else {
				h.procRoot = len(p)
			}
			return
		}
		if p == "/" {
			return
		}
	}
}

// own reports whether /proc/id is a directory of the caller's own
// process, whose entries the sentry knows without asking the host (the
// kernel lets a process into its own directories, whatever it could do
// to others: ptrace_may_access's same-thread-group rule).
func (ws *walker) own(id int32) bool {
	tg, ok := ws.caller.Guest(id)
	return ok && tg == ws.caller.TGID()
}

// knownDir steps into np, a directory of the caller's own /proc/PID the
// sentry knows exists.
func (ws *walker) knownDir(np string) {
	ws.cur.Host = np
	h := &ws.h
	h.known, h.isDir = true, true
	h.mode, h.uid = unix.S_IFDIR|0o555, 0
	ws.depth++
	ws.parent = nil
}

// procStep walks comp in a procfs directory where the sentry knows the
// answer (a guest's own /proc/PID, /proc/self) or must give its own (a
// guest's magic links): done when it did.
func (ws *walker) procStep(comp, np string, last bool) (bool, error) {
	pos := ws.procPos()
	switch pos.kind {
	case procAtRoot:
		switch comp {
		case "self", "thread-self":
			target := strconv.Itoa(int(ws.caller.TGID()))
			if comp == "thread-self" {
				target += "/task/" + strconv.Itoa(int(ws.caller.TID()))
			}
			if last && !ws.follow && !ws.w.TrailingSlash {
				// The link itself: the host's, but what it reads is
				// the caller's, whoever reads it for the caller.
				ws.w.LinkText = target
				return false, nil
			}
			return true, ws.procSelf(target)
		}
		if n, ok := procNum(comp); ok {
			if ws.own(n) {
				ws.knownDir(np)
				return true, nil
			}
			ws.w.ProcPID = n
		}
	case procAtPid, procAtTid:
		switch comp {
		case "task":
			if pos.kind == procAtPid && ws.own(pos.pid) {
				ws.knownDir(np)
				return true, nil
			}
		case "fd":
			if ws.own(pos.pid) {
				ws.knownDir(np)
				return true, nil
			}
		case "cwd", "root", "exe":
			return true, ws.magic(pos, comp, 0, np, last)
		}
	case procAtTask:
		if n, ok := procNum(comp); ok && ws.own(pos.pid) && ws.own(n) {
			ws.knownDir(np)
			return true, nil
		}
	case procAtFD:
		if n, ok := procNum(comp); ok {
			return true, ws.magic(pos, "fd", n, np, last)
		}
	}
	return false, nil
}

// procSelf follows /proc/self or /proc/thread-self, symlinks whose target
// is the caller's (proc_self_get_link): relative to the procfs root.
func (ws *walker) procSelf(target string) error {
	ws.hostErr = true
	ws.links++
	if ws.links > MaxSymlinks {
		return unix.ELOOP
	}
	if ws.resolve&ResolveNoSymlinks != 0 || ws.v.host.mountInfo(ws.h.mnt, ws.cur.Host).noSymfollow {
		return unix.ELOOP
	}
	ws.hostErr = false
	ws.rest = target + ws.rest
	ws.name, ws.parent = "", nil
	return nil
}

// magic resolves a magic link of /proc (proc_cwd_link, proc_root_link,
// proc_exe_link, proc_fd_link) at np: for a guest, to what the sentry
// knows (its virtual descriptors and working directory are the sentry's
// files, its root is "/"); for anything else, to the kernel's target. As
// the kernel, only the caller's own process is open to it whatever its
// credentials; another's magic links are checked as the caller
// (ptrace_may_access, by the host when the caller's walk reads them).
func (ws *walker) magic(pos procPos, name string, fd int32, np string, last bool) error {
	h := &ws.h
	var target Location
	own := false
	if tg, ok := ws.caller.Guest(pos.tid); ok {
		own = tg == ws.caller.TGID()
		target = ws.caller.ProcLink(pos.tid, name, fd)
	}
	if !own {
		// Another process's link: the sentry's own lookups may follow
		// what the caller's may not (ptrace_may_access), so a walk
		// that goes on into something of the sentry's is made again
		// as the caller, where the kernel's check is made.
		ws.recheck = true
	}
	if target == (Location{}) || !own && !ws.asCaller {
		// The link must exist as the host says (a descriptor the
		// sentry does not hold, another process's). Once is enough for
		// a guest's link the sentry knows: made again as the caller,
		// the walk asks mayReadLink, which the host cannot answer for
		// a guest of a user namespace (Caller.MayReadProc).
		var stx unix.Statx_t
		if err := statxPath(np, unix.AT_SYMLINK_NOFOLLOW, &stx); err != nil {
			if err == unix.ENOENT && last {
				// Not open now: the host's call may find it open
				// when it follows the link (a creat of it, or a
				// racing thread's dup2).
				ws.cur.Host, h.known = np, false
				ws.w.Jumped, ws.w.JumpedAt, ws.w.LinkNamed = true, np, true
				return nil
			}
			// The sentry's answer, not the host's: given the guest's
			// path, the host would look at the number again, where a
			// racing dup2 may have put a placeholder by then (pathrace:
			// a mkdir through a number not yet open made its directory
			// in the store).
			ws.hostErr = false
			return err
		}
	}
	if last && !ws.follow && !ws.w.TrailingSlash {
		// The link itself, which the host serves (lstat, unlink); Link
		// is where it points when that is the sentry's.
		ws.cur.Host, h.known = np, false
		if target.Mount != nil {
			if !own {
				// Reading another process's link is checked as the
				// caller: the walk is made again as the caller.
				ws.diverged = true
				if err := ws.mayReadLink(pos.tid, np); err != nil {
					return err
				}
			}
			ws.w.Link = target
		}
		return nil
	}
	ws.hostErr = true
	ws.links++
	switch {
	case ws.links > MaxSymlinks:
		return unix.ELOOP
	case ws.resolve&(ResolveNoSymlinks|ResolveNoMagiclinks) != 0:
		return unix.ELOOP
	case ws.v.host.mountInfo(h.mnt, ws.cur.Host).noSymfollow:
		return unix.ELOOP
	case ws.scoped:
		// nd_jump_link: not for scoped lookups.
		return unix.EXDEV
	}
	if target == (Location{}) {
		ws.w.JumpedAt = ""
		if last {
			ws.w.JumpedAt = np
		}
		return ws.kernelJump(np)
	}
	if !own {
		if err := ws.mayReadLink(pos.tid, np); err != nil {
			return err
		}
	}
	if ws.resolve&ResolveNoXdev != 0 {
		// Out of /proc, into another mount.
		return unix.EXDEV
	}
	ws.hostErr = false
	ws.setCur(target)
	if target.Mount != nil {
		ws.diverged = true
	}
	ws.name, ws.parent = "", nil
	return nil
}

// mayReadLink checks, on the walk made as the caller, that the caller
// may follow magic link np of another process, tid (the kernel checks
// ptrace_may_access when reading one and when following one).
func (ws *walker) mayReadLink(tid int32, np string) error {
	if !ws.asCaller {
		return nil
	}
	if decided, err := ws.caller.MayReadProc(tid); decided {
		if err != nil {
			ws.hostErr = true
		}
		return err
	}
	var buf [unix.PathMax]byte
	if _, err := unix.Readlink(np, buf[:]); err != nil {
		ws.hostErr = true
		return hostErrno(err)
	}
	return nil
}

// kernelJump follows magic link np to the kernel's target (nd_jump_link):
// no mount on the target is entered, as the kernel enters none. The walk
// names the target by the kernel's path for it when that leads back to
// it, else by the link.
func (ws *walker) kernelJump(np string) error {
	h := &ws.h
	ws.w.Jumped = true
	// The target is pinned (PinLink): read from the link twice, a racing
	// dup2 in between made the path lead to another file, the walk left
	// the host to follow the link again, and by then it could lead into
	// the store (pathrace: 1 mkdir of about 100,000 made in the store).
	pl, err := PinLink(np)
	if err != nil {
		return err
	}
	stx := &pl.Stat
	if ws.resolve&ResolveNoXdev != 0 && h.mntKnown && stx.Mnt_id != h.mnt {
		return unix.EXDEV
	}
	ws.hostErr = false
	if ws.v.StoreDev(pl.Dev()) {
		// A link of a process the sentry does not trace to a sentry
		// file (a guest passed it one): the kernel would open its
		// placeholder anew, a file of the sandbox's store the sentry
		// knows nothing of, from which the store's other files are a
		// lookup away. Refused, as the calls the sentry does not serve
		// on its files are.
		return unix.EOPNOTSUPP
	}
	name, fixed := np, len(np)
	if pl.PathLeadsBack {
		name, fixed = pl.Path, 1
	}
	ws.cur = Location{Host: name}
	ws.w.LinkNamed = fixed != 1
	ws.h = hostState{fixed: fixed, procRoot: -2}
	ws.setKnown(stx)
	ws.slow = false
	ws.name, ws.parent = "", nil
	return nil
}
