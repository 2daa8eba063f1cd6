package syscalls

import (
	"bytes"
	"encoding/binary"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// sockaddrUnSize is sizeof(struct sockaddr_un).
const sockaddrUnSize = 110

// sockaddrUn is path as a struct sockaddr_un, and its length with the
// path's NUL (offsetof(sun_path) + strlen + 1); path must fit.
func sockaddrUn(path string) (b [sockaddrUnSize]byte, n int) {
	binary.LittleEndian.PutUint16(b[:2], unix.AF_UNIX)
	copy(b[2:], path)
	return b, 2 + len(path) + 1
}

// unixPath reads a sockaddr and returns the path of a pathname AF_UNIX
// address (not abstract, not unnamed), as unix_mkname_bsd takes it: the
// path ends at the first NUL or at addrlen. ok is false for any other
// address, which the host may have. An address the sentry cannot read is
// EFAULT, as move_addr_to_kernel's: it must not pass to the host, which
// may read what the sentry could not (a guest that made itself
// non-dumpable hides its memory from a sentry without CAP_SYS_PTRACE).
func unixPath(c *sentry.Call, addr, addrlen uintptr) (p string, ok bool, err error) {
	if addr == 0 || addrlen <= 2 || addrlen > sockaddrUnSize {
		return "", false, nil
	}
	var b [sockaddrUnSize]byte
	if err := c.CopyIn(addr, b[:addrlen]); err != nil {
		return "", false, err
	}
	if binary.LittleEndian.Uint16(b[:2]) != unix.AF_UNIX || b[2] == 0 {
		return "", false, nil
	}
	path := b[2:addrlen]
	if i := bytes.IndexByte(path, 0); i >= 0 {
		path = path[:i]
	}
	return string(path), true, nil
}

// redirectSockaddr makes the host's call use a sockaddr_un for host
// instead of the guest's (argument index i, its length at i+1).
func redirectSockaddr(c *sentry.Call, sysno uintptr, args *platform.SyscallArgs, i int, host string, then sentry.Continuation) sentry.Result {
	if len(host) >= sockaddrUnSize-2 {
		return sentry.Err(unix.ENAMETOOLONG)
	}
	b, n := sockaddrUn(host)
	addr, err := c.WriteStackString(string(b[:n-1]))
	if err != nil {
		return sentry.ErrOf(err)
	}
	na := *args
	na[i] = addr
	na[i+1] = uintptr(n)
	return sentry.RewriteTo(c, sysno, na, then)
}

// resolveString resolves a path the sentry holds (an AF_UNIX path from a
// sockaddr, a script's interpreter), written as a NUL-terminated string
// below the guest's stack so that the ordinary walk applies.
func resolveString(c *sentry.Call, p string, follow bool) (resolved, error) {
	addr, err := c.WriteStackString(p)
	if err != nil {
		return resolved{}, err
	}
	r, err := resolveAt(c, unix.AT_FDCWD, addr, follow, false)
	return r, err
}

// Bind is bind(fd, addr, addrlen). Binding a Unix socket at a path in the
// sentry's file system makes a socket inode there (mode 0777 less the
// umask, EADDRINUSE if the name exists, as unix_bind_bsd) and binds the
// guest's socket to the host node that stands for that inode: the sentry
// binds it, on its own copy of the descriptor (the private directory is
// not writable by the guest).
func Bind(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	// The descriptor comes first, as sockfd_lookup: a bad one, or one
	// that is not a socket, fails before the address is looked at.
	sock, err := platform.GetFD(c.TID, int32(args[0]))
	if err != nil {
		return sentry.ErrOf(errnoOf(err))
	}
	defer unix.Close(sock)
	domain, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return sentry.ErrOf(errnoOf(err))
	}
	if domain != unix.AF_UNIX {
		// Another family's bind never makes a file: the host says what
		// it makes of the address.
		return sentry.Pass()
	}
	p, ok, err := unixPath(c, args[1], args[2])
	if err != nil {
		return sentry.ErrOf(err)
	}
	if !ok {
		return sentry.Pass()
	}
	r, err := resolveString(c, p, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return passSockaddr(c, unix.SYS_BIND, args, 1, &r)
	}
	if r.Dentry != nil || r.Parent == nil {
		return sentry.Err(unix.EADDRINUSE)
	}
	if err := mntWantWrite(r.Parent.Inode()); err != nil {
		return sentry.ErrOf(err)
	}
	m, ok := r.Parent.(vfs.Mknoder)
	if !ok {
		return sentry.Err(unix.EPERM)
	}
	d, err := m.Mknod(r.Name, unix.S_IFSOCK|0777&^c.FSContext().Umask(), 0, c.Creds())
	if err != nil {
		return sentry.ErrOf(err)
	}
	host, err := c.Kernel().HostSocket(r.Mount, d.Inode().Ino())
	if err != nil {
		r.Parent.Unlink(r.Name, c.Creds())
		return sentry.Err(unix.EADDRNOTAVAIL)
	}
	var st unix.Stat_t
	d.Inode().Stat(&st)
	addr, err := host.Bind(sock, st.Mode, st.Uid, st.Gid)
	if err != nil {
		// Already bound (EINVAL), or the host refused: no name stays,
		// as unix_bind_bsd removes the node it made.
		r.Parent.Unlink(r.Name, c.Creds())
		return sentry.ErrOf(errnoOf(err))
	}
	// getsockname and getpeername report the guest's path, as the
	// kernel reports the one bind was given.
	c.Kernel().SetSocketName(addr, p)
	return sentry.Ret(0)
}

// Connect is connect(fd, addr, addrlen). A path in the sentry's file
// system must name a socket inode (ENOENT, ECONNREFUSED otherwise, write
// permission needed, as unix_find_bsd); the host connects to the host
// path standing for it.
func Connect(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return toSocketPath(c, unix.SYS_CONNECT, args, 1)
}

// Sendto is sendto(fd, buf, len, flags, addr, addrlen): a datagram sent to
// a path finds its socket as connect does (unix_dgram_sendmsg ->
// unix_find_other -> unix_find_bsd).
func Sendto(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return toSocketPath(c, unix.SYS_SENDTO, args, 4)
}

// toSocketPath serves a call that reaches the AF_UNIX socket named by the
// sockaddr at argument i (its length at i+1).
func toSocketPath(c *sentry.Call, sysno uintptr, args *platform.SyscallArgs, i int) sentry.Result {
	p, ok, err := unixPath(c, args[i], args[i+1])
	if err != nil {
		return sentry.ErrOf(err)
	}
	if !ok {
		return sentry.Pass()
	}
	host, res, ok := socketTarget(c, p)
	if !ok {
		return res
	}
	if host == "" {
		return sentry.Pass()
	}
	return redirectSockaddr(c, sysno, args, i, host, sentry.Identity{})
}

// socketTarget is where a call reaching the AF_UNIX socket at path p goes
// (connect, sendto, sendmsg): the path the host must use instead of p (""
// for p itself), or ok false with res the answer.
func socketTarget(c *sentry.Call, p string) (host string, res sentry.Result, ok bool) {
	if guest, ok := c.Kernel().SocketName(p); ok {
		// The host address of a socket bound in a sentry mount, as
		// recvfrom and accept report a peer's (they are not trapped):
		// it names the socket the guest bound at guest.
		p = guest
	}
	r, err := resolveString(c, p, true)
	if err != nil {
		return "", sentry.ErrOf(err), false
	}
	if r.host {
		return r.hostPath, res, true
	}
	if r.Dentry == nil {
		return "", sentry.Err(unix.ENOENT), false
	}
	ino := r.Dentry.Inode()
	if err := ino.CheckPermission(c.Creds(), vfs.MayWrite); err != nil {
		return "", sentry.ErrOf(err), false
	}
	if ino.Mode()&unix.S_IFMT != unix.S_IFSOCK {
		return "", sentry.Err(unix.ECONNREFUSED), false
	}
	hs, err := c.Kernel().HostSocket(r.Mount, ino.Ino())
	if err != nil {
		return "", sentry.Err(unix.ECONNREFUSED), false
	}
	return hs.GuestPath(), res, true
}

// passSockaddr lets the host run a call on a host socket path: the
// guest's own sockaddr, or the resolved host path where the walk went
// through a sentry mount.
func passSockaddr(c *sentry.Call, sysno uintptr, args *platform.SyscallArgs, i int, r *resolved) sentry.Result {
	if r.hostPath == "" {
		return sentry.Pass()
	}
	return redirectSockaddr(c, sysno, args, i, r.hostPath, sentry.Identity{})
}

// Getsockname is getsockname(fd, addr, addrlen), and Getpeername
// getpeername: the host reports the host path a guest socket in a sentry
// mount is bound to; the guest sees the path it bound (unix_getname
// copies the address bind stored: the path as given, its length
// offsetof(sun_path) + strlen + 1), truncated to its buffer as the kernel
// truncates.
func Getsockname(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if !c.Kernel().HasSocketNames() || args[1] == 0 || args[2] == 0 {
		return sentry.Pass()
	}
	var lb [4]byte
	if c.CopyIn(args[2], lb[:]) != nil {
		return sentry.Pass()
	}
	return sentry.Observe(c, c.Sysno, args, &socknameExit{userLen: int32(binary.LittleEndian.Uint32(lb[:]))}, false)
}

// socknameExit puts the guest's path in getsockname's (getpeername's)
// answer; userLen is the length of the guest's buffer as it gave it.
type socknameExit struct {
	userLen int32
}

func (s *socknameExit) Exit(c *sentry.Call, ret int64) int64 {
	fd, addr, lenAddr, userLen := int32(c.Args[0]), c.Args[1], c.Args[2], int(s.userLen)
	if ret != 0 || userLen < 0 {
		return ret
	}
	// The guest's buffer may hold a truncated address: ask the socket
	// itself for the whole one.
	local, err := platform.GetFD(c.TID, fd)
	if err != nil {
		return ret
	}
	var sa unix.Sockaddr
	if c.Sysno == unix.SYS_GETPEERNAME {
		sa, err = unix.Getpeername(local)
	} else {
		sa, err = unix.Getsockname(local)
	}
	unix.Close(local)
	su, ok := sa.(*unix.SockaddrUnix)
	if err != nil || !ok {
		return ret
	}
	guest, ok := c.Kernel().SocketName(su.Name)
	if !ok {
		return ret
	}
	nb, full := sockaddrUn(guest)
	if c.CopyOut(addr, nb[:min(full, userLen)]) != nil {
		return -int64(unix.EFAULT)
	}
	var lb [4]byte
	binary.LittleEndian.PutUint32(lb[:], uint32(full))
	if c.CopyOut(lenAddr, lb[:]) != nil {
		return -int64(unix.EFAULT)
	}
	return ret
}
