package sentry

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// Host special files. A FIFO, Unix socket or device node of the sentry's
// is stood for by a host special file of the same type, which the guest's
// descriptor then refers to: pipes, sockets and devices are the host
// kernel's to run, between guest processes as Linux runs them. Each
// sandbox keeps them in one private directory, the registry's, where only
// its own guest reaches them by path:
//
//   - normally a tmpfs that exists only in the guest's mount namespace,
//     in the cover over a mount point (platform/launch/namespace.go): the
//     guest's own calls name it by its path there (SpecialPath), the
//     sentry, which runs in the host's namespace, by an O_PATH descriptor
//     the init stage made there. Another sandbox's guest has its own
//     namespace, where the same path is its own directory; a host user
//     would need /proc/PID/root of a guest process, which takes ptrace
//     access to it. Nothing of it outlives the guest: the kernel frees the
//     tmpfs with the namespace, even when the sentry was killed.
//   - without a namespace (a sentry that is not root), a directory the
//     registry makes in $TMPDIR: mode 0700 (the guest has the sentry's uid
//     and cannot change it), or 0711 for a root sentry whose namespace
//     failed, with the files one level down in a directory named by a
//     random secret (the directory is not listable, and the secret never
//     shows in a socket's address). A killed sentry leaves it behind until
//     the next sentry sweeps it (SweepPrivateDirs).
//
// The directory is root-owned and never writable by the guest: the sentry
// makes every node (binding a guest's socket itself, on the guest's
// descriptor), and gives it the sentry inode's mode and owner, so that the
// host's permission checks on the node agree with the sentry's.
type hostSpecials struct {
	// dirMu guards dir and hidden.
	dirMu sync.Mutex
	// dir is the private directory: set by SetGuestNamespace, or made
	// on first use.
	dir *specialDir
	// hidden are the guest namespace's own mounts, left out of the mount
	// lists the guest reads.
	hidden []uint64

	// sockNamesMu guards sockNames.
	sockNamesMu sync.Mutex
	// sockNames maps the address a guest socket is bound to on the host
	// to the path the guest bound it at (what getsockname reports); nsock
	// is its size, readable without the lock.
	sockNames map[string]string
	nsock     atomic.Int32
}

// specialDir is a private directory of host special files.
type specialDir struct {
	// guestPath is the directory's path as a guest's own call names it.
	// Immutable.
	guestPath string
	// remove is the host directory to remove once the descriptor is
	// closed ("" for the namespace's, which goes with the namespace).
	// Immutable.
	remove string

	// fdMu guards fd, users and closing: the descriptor outlives the
	// kernel's release while a call still uses it (a FIFO open waiting
	// for its other end, and the open of that other end which the
	// kernel's Shutdown makes to release it).
	fdMu sync.Mutex
	// fd is an O_PATH descriptor of the directory, valid in any mount
	// namespace; -1 once closed.
	fd      int
	users   int
	closing bool
}

// get is the directory's descriptor for one use, which put ends; false
// once it is closed.
func (d *specialDir) get() (int, bool) {
	d.fdMu.Lock()
	defer d.fdMu.Unlock()
	if d.fd < 0 {
		return -1, false
	}
	d.users++
	return d.fd, true
}

func (d *specialDir) put() {
	d.fdMu.Lock()
	defer d.fdMu.Unlock()
	if d.users--; d.closing && d.users == 0 {
		d.closeLocked()
	}
}

// release closes the descriptor (and removes a host directory) once its
// last use ends.
func (d *specialDir) release() {
	d.fdMu.Lock()
	defer d.fdMu.Unlock()
	d.closing = true
	if d.users == 0 {
		d.closeLocked()
	}
}

func (d *specialDir) closeLocked() {
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
	if d.remove != "" {
		os.RemoveAll(d.remove)
	}
}

// at runs fn with the directory's descriptor; EBADF once it is closed.
func (d *specialDir) at(fn func(dirfd int) error) error {
	fd, ok := d.get()
	if !ok {
		return unix.EBADF
	}
	defer d.put()
	return fn(fd)
}

// GuestNamespace is what the sentry holds of the guest's mount namespace
// (platform/launch.Namespace).
type GuestNamespace struct {
	// SpecialDir is an O_PATH descriptor of the private directory for
	// host special files, which the kernel now owns; -1 for none.
	SpecialDir int
	// SpecialPath is its path in the guest's namespace.
	SpecialPath string
	// Hidden are the ids of the namespace's own mounts (covers, the
	// private directory's), which the guest's mount lists leave out.
	Hidden []uint64
}

// SetGuestNamespace records the guest's mount namespace, before the guest
// runs.
func (k *Kernel) SetGuestNamespace(ns GuestNamespace) {
	s := &k.specials
	s.dirMu.Lock()
	defer s.dirMu.Unlock()
	s.hidden = append([]uint64(nil), ns.Hidden...)
	if ns.SpecialDir >= 0 {
		if s.dir != nil {
			s.dir.release()
		}
		s.dir = &specialDir{fd: ns.SpecialDir, guestPath: ns.SpecialPath}
	}
}

// HiddenMounts are the ids of the guest namespace's own mounts, which its
// mount lists must not show. The slice is never changed.
func (k *Kernel) HiddenMounts() []uint64 {
	s := &k.specials
	s.dirMu.Lock()
	defer s.dirMu.Unlock()
	return s.hidden
}

// HostSpecial is one host special file of the sandbox's private directory.
type HostSpecial struct {
	dir  *specialDir
	name string
}

// GuestPath is the file's path for a guest's own call (the ptrace
// platform rewrites the guest's open or connect to it).
func (h HostSpecial) GuestPath() string { return h.dir.guestPath + "/" + h.name }

// Open opens the file for the sentry, with flags (O_CLOEXEC and
// O_NOFOLLOW added). It may wait (a FIFO's other end).
func (h HostSpecial) Open(flags int) (int, error) {
	fd := -1
	err := h.dir.at(func(dirfd int) error {
		var err error
		fd, err = unix.Openat(dirfd, h.name, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		return err
	})
	return fd, err
}

// SetAttr gives the file a sentry inode's permission bits and owner when
// they differ, so that the host's checks at the guest's open or connect,
// and fstat of the descriptor, agree with the sentry's inode.
func (h HostSpecial) SetAttr(mode, uid, gid uint32) { h.dir.setAttr(h.name, mode, uid, gid) }

func (d *specialDir) setAttr(name string, mode, uid, gid uint32) {
	d.at(func(dirfd int) error {
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return err
		}
		if st.Uid != uid || st.Gid != gid {
			// chown clears set-id bits, so it goes first.
			unix.Fchownat(dirfd, name, int(uid), int(gid), unix.AT_SYMLINK_NOFOLLOW)
		}
		if st.Mode&07777 != mode&07777 || st.Uid != uid || st.Gid != gid {
			unix.Fchmodat(dirfd, name, mode&07777, 0)
		}
		return nil
	})
}

// Bind binds sock (the sentry's copy of a guest's socket) to the file,
// with a sentry inode's mode and owner, and returns the address the
// socket now has (the key of SetSocketName). The sentry binds rather than
// the guest: the directory is not the guest's to write in. The node is
// bound under a temporary name, given its mode and owner, then renamed
// (over a stale node of an earlier socket, if any), so no other guest
// process finds it with the sentry's own umask and owner.
func (h HostSpecial) Bind(sock int, mode, uid, gid uint32) (string, error) {
	tmp := "t" + h.name
	var addr string
	err := h.dir.at(func(dirfd int) error {
		// Through the descriptor: the directory may be in another
		// mount namespace than the sentry's.
		addr = "/proc/self/fd/" + strconv.Itoa(dirfd) + "/" + tmp
		unix.Unlinkat(dirfd, tmp, 0)
		if err := unix.Bind(sock, &unix.SockaddrUnix{Name: addr}); err != nil {
			return err
		}
		h.dir.setAttr(tmp, mode, uid, gid)
		if err := unix.Renameat(dirfd, tmp, dirfd, h.name); err != nil {
			unix.Unlinkat(dirfd, tmp, 0)
			return err
		}
		return nil
	})
	return addr, err
}

// HostFIFO is the host FIFO that stands for FIFO inode ino of mount m,
// made on first use (the opener gives it the inode's mode and owner).
func (k *Kernel) HostFIFO(m *vfs.Mount, ino uint64) (HostSpecial, error) {
	h, err := k.specials.file("f", m, ino)
	if err != nil {
		return h, err
	}
	return h, h.dir.at(func(dirfd int) error {
		if err := unix.Mknodat(dirfd, h.name, unix.S_IFIFO|0o600, 0); err != nil && err != unix.EEXIST {
			return err
		}
		return nil
	})
}

// HostDevice is the host device node that stands for device inode ino of
// mount m (type S_IFCHR or S_IFBLK, number rdev), made on first use. A
// node of that name with another type or number (the sentry's inode was
// replaced) is made again.
func (k *Kernel) HostDevice(m *vfs.Mount, ino uint64, typ uint32, rdev uint64) (HostSpecial, error) {
	h, err := k.specials.file("d", m, ino)
	if err != nil {
		return h, err
	}
	return h, h.dir.at(func(dirfd int) error {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, h.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			if st.Mode&unix.S_IFMT == typ && st.Rdev == rdev {
				return nil
			}
			unix.Unlinkat(dirfd, h.name, 0)
		}
		return unix.Mknodat(dirfd, h.name, typ|0o600, int(rdev))
	})
}

// HostSocket is the host socket that stands for socket inode ino of mount
// m (HostSpecial.Bind makes it).
func (k *Kernel) HostSocket(m *vfs.Mount, ino uint64) (HostSpecial, error) {
	return k.specials.file("s", m, ino)
}

// SetSocketName records that the socket bound at host address host was
// bound by the guest at path guest ("" forgets it).
func (k *Kernel) SetSocketName(host, guest string) {
	s := &k.specials
	s.sockNamesMu.Lock()
	defer s.sockNamesMu.Unlock()
	if s.sockNames == nil {
		s.sockNames = map[string]string{}
	}
	if guest == "" {
		delete(s.sockNames, host)
	} else {
		s.sockNames[host] = guest
	}
	s.nsock.Store(int32(len(s.sockNames)))
}

// SocketName is the guest's path for a socket bound at host address host.
func (k *Kernel) SocketName(host string) (string, bool) {
	s := &k.specials
	if s.nsock.Load() == 0 {
		return "", false
	}
	s.sockNamesMu.Lock()
	defer s.sockNamesMu.Unlock()
	g, ok := s.sockNames[host]
	return g, ok
}

// HasSocketNames reports whether any guest socket is bound in a sentry
// mount.
func (k *Kernel) HasSocketNames() bool { return k.specials.nsock.Load() > 0 }

// file names the host special file of kind standing for inode ino of
// mount m (short: sockaddr_un holds 108 bytes).
func (s *hostSpecials) file(kind string, m *vfs.Mount, ino uint64) (HostSpecial, error) {
	s.dirMu.Lock()
	defer s.dirMu.Unlock()
	if s.dir == nil {
		d, err := newFallbackDir()
		if err != nil {
			return HostSpecial{}, err
		}
		s.dir = d
	}
	return HostSpecial{dir: s.dir, name: kind + strconv.FormatUint(m.ID, 10) + "-" + strconv.FormatUint(ino, 10)}, nil
}

// release closes the private directory and removes a host one, once the
// guest is gone.
func (s *hostSpecials) release() {
	s.dirMu.Lock()
	defer s.dirMu.Unlock()
	if s.dir != nil {
		s.dir.release()
		s.dir = nil
	}
}

// newFallbackDir makes the private directory in the host's $TMPDIR, for a
// guest without a mount namespace of its own (see hostSpecials).
func newFallbackDir() (*specialDir, error) {
	perm := uint32(0o700)
	if os.Geteuid() == 0 {
		// Guests of any uid must reach the nodes (the sentry checked
		// their permission on its own inode).
		perm = 0o711
	}
	var secret [8]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, err
	}
	top, err := os.MkdirTemp("", PrivateDirPrefix("special"))
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(top, hex.EncodeToString(secret[:]))
	fd := -1
	err = os.Chmod(top, os.FileMode(perm))
	if err == nil {
		err = unix.Mkdir(dir, perm)
	}
	if err == nil {
		// mkdir applied the umask.
		err = os.Chmod(dir, os.FileMode(perm))
	}
	if err == nil {
		fd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		os.RemoveAll(top)
		return nil, err
	}
	return &specialDir{fd: fd, guestPath: dir, remove: top}, nil
}

// PrivateDirPrefix is the os.MkdirTemp pattern of a private host
// directory of this sentry process's: "sentry-KIND-PID-". A directory
// whose process is gone (a sentry that was killed) is stale, and the next
// sentry removes it (SweepPrivateDirs).
func PrivateDirPrefix(kind string) string {
	return "sentry-" + kind + "-" + strconv.Itoa(os.Getpid()) + "-"
}

// SweepPrivateDirs removes the private directories of KIND in base left
// by sentry processes that no longer exist and were run by this user.
func SweepPrivateDirs(base, kind string) {
	matches, _ := filepath.Glob(filepath.Join(base, "sentry-"+kind+"-*-*"))
	for _, m := range matches {
		rest := strings.TrimPrefix(filepath.Base(m), "sentry-"+kind+"-")
		pid, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, '-'), 0)])
		if err != nil || pid <= 0 || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(m, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Uid == uint32(os.Geteuid()) {
			os.RemoveAll(m)
		}
	}
}
