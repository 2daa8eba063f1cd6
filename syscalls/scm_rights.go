package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// Receiving descriptors with SCM_RIGHTS (the sending side is Sendmsg). A
// virtual fd's placeholder travels as any open file; at the receiver's
// exit the sentry tells which received descriptors are its files
// (Kernel.ReceivedFile) and gives them their descriptions, so the
// receiver's reads, writes, fstat, getdents and close act on the same
// file with the same offset as the sender's, as on Linux.

// Recvmsg is recvmsg(fd, msg, flags): observed when the message has room
// for control data on an AF_UNIX socket, the only way a descriptor
// arrives (a UDP socket's ancillary data, packet info and timestamps,
// runs without the exit stop).
func Recvmsg(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if !hasControl(c, args[1]) || !unixSocket(c, int32(args[0])) {
		return sentry.Pass()
	}
	flags := uint32(args[2])
	return sentry.Observe(c, unix.SYS_RECVMSG, args, &recvRightsExit{msgs: args[1], cloexec: flags&unix.MSG_CMSG_CLOEXEC != 0, peek: flags&unix.MSG_PEEK != 0}, false)
}

// Recvmmsg is recvmmsg(fd, msgvec, vlen, flags, timeout): each message as
// recvmsg.
func Recvmmsg(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	vlen := min(uint32(args[2]), uioMaxIOV)
	for i := uint32(0); i < vlen; i++ {
		if hasControl(c, args[1]+uintptr(i)*mmsghdrSize) {
			if !unixSocket(c, int32(args[0])) {
				return sentry.Pass()
			}
			flags := uint32(args[3])
			return sentry.Observe(c, unix.SYS_RECVMMSG, args, &recvRightsExit{msgs: args[1], vec: true,
				cloexec: flags&unix.MSG_CMSG_CLOEXEC != 0, peek: flags&unix.MSG_PEEK != 0}, false)
		}
	}
	return sentry.Pass()
}

// hasControl reports whether the struct msghdr at addr has a control
// buffer (one the sentry cannot read the host cannot either).
func hasControl(c *sentry.Call, addr uintptr) bool {
	var h [msghdrSize]byte
	if c.CopyIn(addr, h[:]) != nil {
		return false
	}
	return binary.LittleEndian.Uint64(h[32:]) != 0 && binary.LittleEndian.Uint64(h[40:]) != 0
}

// unixSocket reports whether the guest's fd may be an AF_UNIX socket:
// anything the sentry cannot tell is taken for one.
func unixSocket(c *sentry.Call, fd int32) bool {
	s, err := platform.GetFD(c.TID, fd)
	if err != nil {
		return true
	}
	defer unix.Close(s)
	domain, err := unix.GetsockoptInt(s, unix.SOL_SOCKET, unix.SO_DOMAIN)
	return err != nil || domain == unix.AF_UNIX
}

// recvRightsExit places the descriptors a recvmsg or recvmmsg received.
type recvRightsExit struct {
	// msgs is the guest's struct msghdr, or its mmsghdr array for vec.
	msgs    uintptr
	vec     bool
	cloexec bool
	// peek: MSG_PEEK, the descriptors will be received again.
	peek bool
}

func (r *recvRightsExit) Exit(c *sentry.Call, ret int64) int64 {
	if ret < 0 {
		return ret
	}
	n, stride := int64(1), uintptr(0)
	if r.vec {
		n, stride = ret, mmsghdrSize
	}
	var unknown []int32
	for i := int64(0); i < n; i++ {
		unknown = r.place(c, r.msgs+uintptr(i)*stride, unknown)
	}
	if len(unknown) > 0 {
		closeUnplaced(c, unknown, ret)
	}
	return ret
}

// place gives the virtual fds among the descriptors the message at addr
// received their descriptions, and adds those of a sentry store it cannot
// place to unknown. The kernel wrote msg_controllen (the bytes of control
// data it wrote) and the descriptors.
func (r *recvRightsExit) place(c *sentry.Call, addr uintptr, unknown []int32) []int32 {
	var h [msghdrSize]byte
	if c.CopyIn(addr, h[:]) != nil {
		return unknown
	}
	ctl, ctllen := uintptr(binary.LittleEndian.Uint64(h[32:])), uintptr(binary.LittleEndian.Uint64(h[40:]))
	if ctl == 0 || ctllen < cmsgHeader {
		return unknown
	}
	buf := make([]byte, min(ctllen, maxControl))
	if c.CopyIn(ctl, buf) != nil {
		return unknown
	}
	for _, fd := range rightsFDs(buf) {
		f, ok := c.Kernel().ReceivedFile(c.TID, fd, r.peek)
		switch {
		case !ok:
			unknown = append(unknown, fd)
		case f != nil:
			if old := c.FDTable().Install(fd, f, r.cloexec); old != nil {
				old.DecRef()
			}
		}
	}
	return unknown
}

// closeUnplaced closes received descriptors of a sentry store that are
// none of the sentry's open files (which a guest could use to reach the
// store behind the sentry's names), one reissued close_range each, and
// then completes the guest's call with ret.
func closeUnplaced(c *sentry.Call, fds []int32, ret int64) {
	c.Reissue(unix.SYS_CLOSE_RANGE, platform.SyscallArgs{uintptr(fds[0]), uintptr(fds[0]), 0}, closeUnplacedExit{rest: fds[1:], ret: ret})
}

type closeUnplacedExit struct {
	rest []int32
	ret  int64
}

func (e closeUnplacedExit) Exit(c *sentry.Call, _ int64) int64 {
	if len(e.rest) > 0 {
		closeUnplaced(c, e.rest, e.ret)
	}
	return e.ret
}
