package sentry

import (
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// A call the sentry serves on a host path for the guest (on the unotify
// platform, a path that leads back to the host) runs on a serving thread
// with the guest's identity: fsuid, fsgid, groups and effective
// capabilities are per-thread in Linux, so the thread takes the guest's,
// acts, and takes the sentry's back. The raw calls change only the
// calling thread (glibc's and Go's setfsuid, setgroups and capset wrappers
// would change every thread of the sentry).
//
// Every step is checked: setgroups and capset report failure, setfsuid
// and setfsgid return the old id whatever happens and are verified by
// asking again with -1. A thread that could not take the guest's identity
// is given the sentry's back and the guest's call fails; one that could
// not take the sentry's back is tainted: nothing is served on it (every
// call it gets fails) until a later attempt restores it.

// capSets are a thread's capability sets as capget and capset (version 3)
// pass them: word 0 holds capabilities 0-31, word 1 32-63.
type capSets [2]unix.CapUserData

func (c *capSets) effective() vfs.CapSet {
	return vfs.CapSet(c[0].Effective) | vfs.CapSet(c[1].Effective)<<32
}

func (c *capSets) permitted() vfs.CapSet {
	return vfs.CapSet(c[0].Permitted) | vfs.CapSet(c[1].Permitted)<<32
}

func (c *capSets) setEffective(s vfs.CapSet) {
	c[0].Effective, c[1].Effective = uint32(s), uint32(s>>32)
}

func capCall(sysno uintptr, c *capSets) unix.Errno {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	_, _, e := unix.RawSyscall(sysno, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&c[0])), 0)
	return e
}

// fsCaps are the capabilities a change of fsuid from 0 drops from the
// effective set and one back to 0 raises from the permitted set
// (CAP_FS_MASK of cap_task_fix_setuid: CAP_CHOWN, CAP_DAC_OVERRIDE,
// CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID, CAP_LINUX_IMMUTABLE,
// CAP_MKNOD, CAP_MAC_OVERRIDE).
const fsCaps vfs.CapSet = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<9 | 1<<27 | 1<<32

// threadIdentity is what a thread acts with on the host's files, and its
// effective uid.
type threadIdentity struct {
	uid, gid uint32
	euid     uint32
	groups   []uint32
	caps     capSets
}

// currentIdentity reads the calling thread's identity.
func currentIdentity() (threadIdentity, error) {
	var id threadIdentity
	id.uid = getfsuid()
	id.gid = getfsgid()
	id.euid = geteuid()
	n, _, e := unix.RawSyscall(unix.SYS_GETGROUPS, 0, 0, 0)
	if e != 0 {
		return id, e
	}
	if n > 0 {
		id.groups = make([]uint32, n)
		m, _, e := unix.RawSyscall(unix.SYS_GETGROUPS, n, uintptr(unsafe.Pointer(&id.groups[0])), 0)
		if e != 0 {
			return id, e
		}
		id.groups = id.groups[:m]
	}
	if e := capCall(unix.SYS_CAPGET, &id.caps); e != 0 {
		return id, e
	}
	return id, nil
}

// noID is (uid_t)-1: setfsuid and setfsgid change nothing and say what is.
const noID = 1<<32 - 1

// ownerlessUID is the effective uid a thread takes to act for root in a
// user namespace of its own (actingEUID): 4294967294, the last valid id,
// which owns no namespace made by a process of the sentry's namespace.
const ownerlessUID = 1<<32 - 2

// actingEUID is the effective uid a thread takes to act for c. Linux
// grants every capability over a user namespace to a task of its parent
// namespace whose effective uid owns it (cap_capable), whatever its
// capability sets: a serving thread keeping the sentry's euid 0 holds
// CAP_SYS_PTRACE over every sandbox's namespace (made by a root sentry).
// So the thread takes the guest's uid as its euid, as the guest's own
// call has it, but for root of a namespace without CAP_SYS_PTRACE there,
// which takes an id that owns none. Root of the sandbox's namespace, which
// has CAP_SYS_PTRACE over it, keeps euid 0, and with it over every
// sandbox's namespace: the processes of another namespace are refused
// before the thread acts (syscalls' mayEnterProc; measured without that
// check on unotify: a root guest read another sandbox's file through its
// guest's /proc/PID/fd/N).
func actingEUID(c *vfs.Credentials) uint32 {
	if c.Foreign && c.UID == 0 && !c.Caps.Has(vfs.CapSysPtrace) {
		return ownerlessUID
	}
	return c.UID
}

func geteuid() uint32 {
	var r, e, s uint32
	unix.RawSyscall(unix.SYS_GETRESUID, uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&e)), uintptr(unsafe.Pointer(&s)))
	return e
}

// seteuid sets the calling thread's effective uid (and with it its
// fsuid) and checks that it took.
func seteuid(id uint32) unix.Errno {
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, noID, uintptr(id), noID); e != 0 {
		return e
	}
	if geteuid() != id {
		return unix.EPERM
	}
	return 0
}

func getfsuid() uint32 {
	r, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, noID, 0, 0)
	return uint32(r)
}

func getfsgid() uint32 {
	r, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, noID, 0, 0)
	return uint32(r)
}

func setgroups(groups []uint32) unix.Errno {
	var p uintptr
	if len(groups) > 0 {
		p = uintptr(unsafe.Pointer(&groups[0]))
	}
	_, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), p, 0)
	return e
}

// setfsid sets the fsuid (sysno SYS_SETFSUID) or fsgid to id and checks
// that it took: the call itself reports nothing (no privilege, no memory
// for new credentials).
func setfsid(sysno uintptr, id uint32) unix.Errno {
	unix.RawSyscall(sysno, uintptr(id), 0, 0)
	if r, _, _ := unix.RawSyscall(sysno, noID, 0, 0); uint32(r) != id {
		return unix.EPERM
	}
	return 0
}

// identities is the Kernel's record of its serving threads' identity.
type identities struct {
	// host is the sentry's own identity, every thread's when it is not
	// acting for a guest; hostErr is why it could not be read (then no
	// thread acts for a guest).
	host    threadIdentity
	hostErr error
	// recap is set when taking fsuid 0 back raises capabilities the
	// sentry does not have in its effective set: capset must follow.
	recap bool
	// tainted are the threads (by thread id) left with another
	// identity; ntainted is its size, read on every notified call.
	mu       sync.Mutex
	tainted  map[int]bool
	ntainted atomic.Int32
}

func (ids *identities) init() {
	ids.host, ids.hostErr = currentIdentity()
	c := &ids.host.caps
	ids.recap = ids.host.uid == 0 && fsCaps&c.permitted()&^c.effective() != 0
}

// guestCaps are the capabilities a thread acting for c takes: c's own in
// the sentry's user namespace. A task of another namespace holds its
// capabilities there only; over the host's files Linux grants it those
// that capable_wrt_inode_uidgid checks, on the files whose owner and
// group its namespace maps. With maps that cover every id (the sandbox's
// own namespace, launch/userns.go) that is every file, so the thread
// takes those five; with narrower ones, none (not modelled per file:
// stricter than Linux, never looser). Never CAP_SYS_PTRACE and the
// others the initial namespace keeps: a serving thread opening
// /proc/PID/fd/N for such a guest must be refused as the guest is.
func guestCaps(c *vfs.Credentials) vfs.CapSet {
	if c.Foreign {
		if c.UIDMap.MapsAll() && c.GIDMap.MapsAll() {
			return c.Caps & inodeCaps
		}
		return 0
	}
	return c.Caps
}

// inodeCaps are the capabilities Linux checks with
// capable_wrt_inode_uidgid: CAP_CHOWN, CAP_DAC_OVERRIDE,
// CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID.
const inodeCaps vfs.CapSet = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4

// IsHostIdentity reports whether c is the sentry's own identity: ActAs(c,
// fn) then runs fn as it is.
func (k *Kernel) IsHostIdentity(c *vfs.Credentials) bool {
	h := &k.ids.host
	return k.ids.hostErr == nil && c.UID == h.uid && c.GID == h.gid && actingEUID(c) == h.euid &&
		guestCaps(c) == h.caps.effective() && slices.Equal(c.Groups, h.groups)
}

// ActAs runs fn on the calling thread, which must be locked to its
// goroutine, with c's fsuid, fsgid, groups and effective capabilities,
// and gives the thread the sentry's identity back. It returns fn's
// result, or an errno if the thread could not take c's identity (fn did
// not run) or could not take the sentry's back (fn ran; the thread is
// tainted).
func (k *Kernel) ActAs(c *vfs.Credentials, fn func() error) error {
	ids := &k.ids
	if ids.hostErr != nil {
		return unix.EPERM
	}
	if err := k.ThreadUsable(); err != nil {
		return err
	}
	h := &ids.host
	caps := guestCaps(c)
	sameGroups := slices.Equal(c.Groups, h.groups)
	euid := actingEUID(c)
	if c.UID == h.uid && c.GID == h.gid && euid == h.euid && caps == h.caps.effective() && sameGroups {
		return fn()
	}
	if e := ids.enter(c, euid, caps, sameGroups); e != 0 {
		if rerr := ids.restore(!sameGroups, euid != h.euid); rerr != 0 {
			k.taint()
		}
		return e
	}
	err := fn()
	if rerr := ids.restore(!sameGroups, euid != h.euid); rerr != 0 {
		k.taint()
		return rerr
	}
	return err
}

// enter gives the calling thread c's identity with effective uid euid
// and capabilities caps. The euid and fsuid come after the groups and
// fsgid (changing those needs CAP_SETGID, which a guest may not have),
// the fsuid after the euid (setresuid sets the fsuid too), and the
// capabilities last: a change of euid or fsuid from 0 drops some from the
// effective set and capset then sets exactly the guest's. The permitted
// and inheritable sets stay the sentry's (SECBIT_KEEP_CAPS keeps them
// when no uid of the thread is 0: launch/keepcaps_cgo.go), so that it
// can take its euid and effective set back.
func (ids *identities) enter(c *vfs.Credentials, euid uint32, caps vfs.CapSet, sameGroups bool) unix.Errno {
	if !sameGroups {
		if e := setgroups(c.Groups); e != 0 {
			return e
		}
	}
	if e := setfsid(unix.SYS_SETFSGID, c.GID); e != 0 {
		return e
	}
	if euid != ids.host.euid {
		if e := seteuid(euid); e != 0 {
			return e
		}
		if euid != c.UID {
			// No uid of the thread is c.UID or 0 now (the sentry's real
			// and saved uids are platform.SentryUID), and the euid's
			// change emptied the effective set: setfsuid needs
			// CAP_SETUID back, which the permitted set kept
			// (SECBIT_KEEP_CAPS).
			if e := capCall(unix.SYS_CAPSET, &ids.host.caps); e != 0 {
				return e
			}
		}
	}
	if e := setfsid(unix.SYS_SETFSUID, c.UID); e != 0 {
		return e
	}
	want := ids.host.caps
	want.setEffective(caps)
	return capCall(unix.SYS_CAPSET, &want)
}

// restore gives the calling thread the sentry's identity back, the
// capabilities first (they are what allows the rest), and reports the
// first failure; with groups, the groups too; with euid, the effective
// uid too (before the fsuid, which it sets).
func (ids *identities) restore(groups, euid bool) unix.Errno {
	h := &ids.host
	first := capCall(unix.SYS_CAPSET, &h.caps)
	note := func(e unix.Errno) {
		if first == 0 {
			first = e
		}
	}
	if euid {
		note(seteuid(h.euid))
	}
	note(setfsid(unix.SYS_SETFSUID, h.uid))
	note(setfsid(unix.SYS_SETFSGID, h.gid))
	if groups {
		note(setgroups(h.groups))
	}
	if ids.recap || euid {
		// An euid back to 0 raised the effective set to the
		// permitted one (cap_task_fix_setuid), as fsuid 0 may.
		note(capCall(unix.SYS_CAPSET, &h.caps))
	}
	return first
}

// taint records the calling thread as left with another identity.
func (k *Kernel) taint() {
	ids := &k.ids
	ids.mu.Lock()
	if ids.tainted == nil {
		ids.tainted = map[int]bool{}
	}
	if tid := unix.Gettid(); !ids.tainted[tid] {
		ids.tainted[tid] = true
		ids.ntainted.Add(1)
	}
	ids.mu.Unlock()
}

// ThreadUsable is nil if the calling thread acts with the sentry's own
// identity; for a tainted thread it tries once more to restore it, and
// returns the errno that stops it.
func (k *Kernel) ThreadUsable() error {
	ids := &k.ids
	if ids.ntainted.Load() == 0 {
		return nil
	}
	tid := unix.Gettid()
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if !ids.tainted[tid] {
		return nil
	}
	if e := ids.restore(true, true); e != 0 {
		return e
	}
	delete(ids.tainted, tid)
	ids.ntainted.Add(-1)
	return nil
}
