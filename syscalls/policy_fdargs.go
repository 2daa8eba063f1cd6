package syscalls

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Calls that hand a descriptor (or a path inside a struct) to a host
// kernel object: a loop device, a reflink, a seccomp listener's target, a
// socket's receiver, a module loader. A virtual fd's host descriptor is
// a placeholder, the sentry's open of the file's private backing (or an
// anonymous stand-in): a host object that took it would hold the
// sandbox's storage past the sandbox and act on it behind the sentry,
// whose names, modes and owners it does not see. Each is refused with the
// errno Linux gives for a file the operation does not support, where
// there is one, and errUnserved where Linux takes any file.

// ioctl requests whose argument is (or holds) a descriptor or a path.
const (
	loopChangeFD = 0x4C06
	btrfsIocSend = 0x40489426 // _IOW(0x94, 38, struct btrfs_ioctl_send_args)
	// autofsDevIoctl is _IOWR(0x93, 0, struct autofs_dev_ioctl) less the
	// command number; the path follows the 24-byte header.
	autofsDevIoctl          = 0xC0189300
	autofsDevIoctlMask      = 0xFFFFFF00
	autofsOpenMount         = 0x74
	autofsRequester         = 0x7b
	autofsIsMountpoint      = 0x7e
	autofsDevIoctlHeaderLen = 24
)

// ioctlRewritten are the requests CheckedIoctl may rewrite for the host
// (dedupeRange's copy of the argument). The autofs commands' paths are
// never redirected (hostPathAsIs refuses them instead).
var ioctlRewritten = []uint32{unix.FIDEDUPERANGE}

// ioctlBlocking are the requests that wait on a terminal or a console,
// interruptibly and for as long as the other side wants (tty_wait_until_sent,
// TIOCMIWAIT, vt_waitactive): stopped, the host's interruption is the
// guest's to see, as natively (a notified call interrupted is restarted:
// Kernel.Interrupted).
var ioctlBlocking = []uint32{unix.TCSETSW, unix.TCSETSF, unix.TCSETAW, unix.TCSETAF,
	unix.TCSETSW2, unix.TCSETSF2, unix.TCSBRK, unix.TCSBRKP, unix.TIOCMIWAIT,
	vtWaitActive, vtWaitEvent}

// The console's waiting requests (linux/vt.h).
const (
	vtWaitActive = 0x5607
	vtWaitEvent  = 0x560E
)

// CheckedIoctl is ioctl(fd, request, arg). On a virtual fd the sentry
// serves it (Ioctl). On a host fd it passes, unless the request hands the
// host's driver a virtual fd (or a path into a sentry mount):
//   - LOOP_SET_FD, LOOP_CHANGE_FD, LOOP_CONFIGURE: EINVAL, as
//     loop_validate_file for a file a loop device cannot use;
//   - FICLONE, FICLONERANGE: EXDEV, as ioctl_file_clone across mounts;
//   - FIDEDUPERANGE: the virtual destinations get status EXDEV, as
//     vfs_dedupe_file_range_one across superblocks, the others are
//     deduplicated by the host;
//   - SECCOMP_IOCTL_NOTIF_ADDFD, BTRFS_IOC_SEND: errUnserved (Linux takes
//     any file there);
//   - the autofs control device's path commands: their path is checked.
//
// Other requests that take descriptors check their type in the driver
// (an eventfd, a bpf program, a socket, a dma-buf, a namespace), and the
// driver refuses a placeholder with the errno it gives a tmpfs file.
func CheckedIoctl(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if uint32(args[1]) == userfaultfdIocNew && int32(args[2])&uffdUserModeOnly == 0 && userfaultfdDev(c, int32(args[0])) {
		// /dev/userfaultfd's userfaultfd(flags), which its opener makes
		// without CAP_SYS_PTRACE: refused as the call is (Userfaultfd),
		// on a host fd or a sentry device node's placeholder alike.
		return sentry.Err(unix.EPERM)
	}
	if c.FDTable().Has(int32(args[0])) {
		return Ioctl(c, args)
	}
	req, arg := uint32(args[1]), args[2]
	switch req {
	case unix.LOOP_SET_FD, loopChangeFD:
		return hostFD(c, int32(arg), unix.EINVAL)
	case unix.LOOP_CONFIGURE, unix.FICLONERANGE, btrfsIocSend, unix.SECCOMP_IOCTL_NOTIF_ADDFD:
		// The descriptor field: loop_config.fd (u32), file_clone_range
		// .src_fd and btrfs_ioctl_send_args.send_fd (s64, read as the
		// kernel truncates it to int), seccomp_notif_addfd.srcfd (u32).
		off, errno := uintptr(0), unix.EINVAL
		switch req {
		case unix.FICLONERANGE:
			errno = unix.EXDEV
		case btrfsIocSend:
			errno = errUnserved
		case unix.SECCOMP_IOCTL_NOTIF_ADDFD:
			off, errno = 12, errUnserved
		}
		var b [4]byte
		if c.CopyIn(arg+off, b[:]) != nil {
			return sentry.Err(unix.EFAULT)
		}
		return hostFD(c, int32(binary.LittleEndian.Uint32(b[:])), errno)
	case unix.FICLONE:
		return hostFD(c, int32(arg), unix.EXDEV)
	case unix.FIDEDUPERANGE:
		return dedupeRange(c, args)
	}
	if req&autofsDevIoctlMask == autofsDevIoctl {
		switch req &^ autofsDevIoctlMask {
		case autofsOpenMount, autofsRequester, autofsIsMountpoint:
			return autofsPath(c, arg)
		}
	}
	return sentry.Pass()
}

// autofsPath checks the path of an autofs control-device command (struct
// autofs_dev_ioctl: size at 8, ioctlfd at 12, the path after the header).
// ISMOUNTPOINT with an ioctlfd uses the descriptor instead.
func autofsPath(c *sentry.Call, arg uintptr) sentry.Result {
	var h [autofsDevIoctlHeaderLen]byte
	if c.CopyIn(arg, h[:]) != nil {
		return sentry.Err(unix.EFAULT)
	}
	size := binary.LittleEndian.Uint32(h[8:])
	if size <= autofsDevIoctlHeaderLen {
		// No path: the host refuses the commands that need one.
		return sentry.Pass()
	}
	res, _ := hostPathAsIs(c, unix.AT_FDCWD, arg+autofsDevIoctlHeaderLen, true, false)
	return res
}

// file_dedupe_range layout (linux/fs.h).
const (
	dedupeHeader  = 24
	dedupeInfo    = 32
	dedupeMaxSize = 4096 // ioctl_file_dedupe_range: ENOMEM past a page
)

// dedupeRange is FIDEDUPERANGE on a host source with destinations in
// info[]. Virtual destinations are taken out of the host's copy (dest_fd
// -1) and, after the host deduplicated the others, get the status Linux
// gives a destination on another superblock (vfs_dedupe_file_range_one:
// EINVAL for a bad range, EPERM when the caller may not write it, else
// EXDEV). The host reads the copy the sentry made below the guest's
// stack, and the result is copied back as the kernel copies it.
func dedupeRange(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	var h [dedupeHeader]byte
	if c.CopyIn(args[2], h[:]) != nil {
		return sentry.Err(unix.EFAULT)
	}
	count := int(binary.LittleEndian.Uint16(h[16:]))
	size := dedupeHeader + dedupeInfo*count
	if size > dedupeMaxSize {
		return sentry.Err(unix.ENOMEM)
	}
	buf := make([]byte, size)
	if c.CopyIn(args[2], buf) != nil {
		return sentry.Err(unix.EFAULT)
	}
	srcLen := int64(binary.LittleEndian.Uint64(buf[8:]))
	orig := make([]byte, size)
	copy(orig, buf)
	status := map[int]int32{}
	for i := 0; i < count; i++ {
		e := buf[dedupeHeader+dedupeInfo*i:]
		f := c.FDTable().Get(int32(binary.LittleEndian.Uint64(e)))
		if f == nil {
			continue
		}
		status[i] = dedupeStatus(c, f, e, srcLen)
		f.DecRef()
		binary.LittleEndian.PutUint64(e, ^uint64(0))
	}
	if len(status) == 0 {
		return sentry.Pass()
	}
	copyAddr, err := c.StackBuffer(size, buf)
	if err != nil {
		return sentry.ErrOf(err)
	}
	na := *args
	na[2] = copyAddr
	return sentry.RewriteTo(c, unix.SYS_IOCTL, na, &dedupeExit{copyAddr: copyAddr, orig: orig, status: status})
}

// dedupeExit copies the host's answer to FIDEDUPERANGE back to the guest's
// struct file_dedupe_range, with the virtual destinations' entries as the
// guest gave them and their status as dedupeStatus decided.
type dedupeExit struct {
	// copyAddr is the sentry's copy below the guest's stack, orig the
	// guest's struct as it was, status the statuses of the entries the
	// host did not see, by index.
	copyAddr uintptr
	orig     []byte
	status   map[int]int32
}

func (d *dedupeExit) Exit(c *sentry.Call, ret int64) int64 {
	if ret != 0 {
		return ret
	}
	out := make([]byte, len(d.orig))
	if c.CopyIn(d.copyAddr, out) != nil {
		return -int64(unix.EFAULT)
	}
	for i, st := range d.status {
		e, o := out[dedupeHeader+dedupeInfo*i:], d.orig[dedupeHeader+dedupeInfo*i:]
		copy(e[:8], o[:8])
		binary.LittleEndian.PutUint64(e[16:], 0)
		binary.LittleEndian.PutUint32(e[24:], uint32(st))
	}
	if c.CopyOut(c.Args[2], out) != nil {
		return -int64(unix.EFAULT)
	}
	return ret
}

// dedupeStatus is the status vfs_dedupe_file_range gives a destination
// on another superblock: entry e (struct file_dedupe_range_info) of f.
func dedupeStatus(c *sentry.Call, f *vfs.FileDescription, e []byte, srcLen int64) int32 {
	off := int64(binary.LittleEndian.Uint64(e[8:]))
	switch {
	case binary.LittleEndian.Uint32(e[28:]) != 0:
		return -int32(unix.EINVAL)
	case off < 0 || off+srcLen < off:
		// remap_verify_area.
		return -int32(unix.EINVAL)
	}
	// may_dedupe_file: opened for writing, the owner, write permission,
	// or CAP_SYS_ADMIN (root, as the sandbox models it).
	cr := c.Creds()
	var st unix.Stat_t
	f.Inode.Stat(&st)
	if !f.Writable() && cr.UID != st.Uid && cr.UID != 0 && f.Inode.CheckPermission(cr, vfs.MayWrite) != nil {
		return -int32(unix.EPERM)
	}
	return -int32(unix.EXDEV)
}

// msghdr and mmsghdr layouts (x86-64).
const (
	msghdrSize  = 56
	mmsghdrSize = 64
	uioMaxIOV   = 1024 // UIO_MAXIOV: sendmmsg's bound on vlen
	// maxControl bounds the control data the sentry reads; Linux takes
	// at most optmem_max (sock_kmalloc), far less by default.
	maxControl = 1 << 20
)

// Sendmsg is sendmsg(fd, msg, flags): an AF_UNIX path in msg_name is
// resolved as sendto's is (a socket bound in a sentry mount is reached at
// its host path), and the descriptions of virtual fds in SCM_RIGHTS are
// kept for their receiver to be told (scm_rights.go).
func Sendmsg(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	var h [msghdrSize]byte
	if c.CopyIn(args[1], h[:]) != nil {
		return sentry.Err(unix.EFAULT)
	}
	var names sockNames
	res, files, changed, ok := checkMsghdr(c, h[:], &names)
	if !ok {
		return res
	}
	if res, ok := passFiles(c, files); !ok {
		return res
	}
	var then sentry.Continuation = sentry.Identity{}
	if len(files) > 0 {
		then = &sendRightsExit{files: [][]*vfs.FileDescription{files}}
	}
	if !changed {
		if len(files) == 0 {
			return res
		}
		return sentry.Observe(c, unix.SYS_SENDMSG, args, then, false)
	}
	addr, err := c.StackBuffer(len(h), h[:])
	if err != nil {
		c.Kernel().UnpassFiles(files)
		return sentry.ErrOf(err)
	}
	na := *args
	na[1] = addr
	return sentry.RewriteTo(c, unix.SYS_SENDMSG, na, then)
}

// Sendmmsg is sendmmsg(fd, msgvec, vlen, flags): each message as sendmsg.
// Linux sends the messages in order and returns how many went. When a
// message names a socket of the sentry's, the host gets a copy of the
// vector below the guest's stack with the host paths the sentry resolved
// (one copy of each path), and the msg_len of each message sent is copied
// back to the guest's (sendmmsgExit). A message the sentry must refuse,
// or cannot read, ends the vector: the host sends those before it, and
// it alone fails. The descriptions each message passes in SCM_RIGHTS are
// taken back for the messages the host did not send.
func Sendmmsg(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	vlen := min(uint32(args[2]), uioMaxIOV)
	vec := c.IOBuf(int(vlen) * mmsghdrSize)
	var names sockNames
	var res sentry.Result
	var passed [][]*vfs.FileDescription
	n, changed, some := uint32(0), false, false
	for ; n < vlen; n++ {
		h := vec[n*mmsghdrSize : (n+1)*mmsghdrSize]
		if c.CopyIn(args[1]+uintptr(n)*mmsghdrSize, h) != nil {
			res = sentry.Err(unix.EFAULT)
			break
		}
		r, files, ch, ok := checkMsghdr(c, h[:msghdrSize], &names)
		if ok {
			r, ok = passFiles(c, files)
		}
		if !ok {
			res = r
			break
		}
		passed = append(passed, files)
		changed = changed || ch
		some = some || len(files) > 0
	}
	switch {
	case n == 0 && vlen > 0:
		return res
	case !changed && n == vlen && !some:
		return sentry.Pass()
	case !changed:
		return sendFirst(c, args, n, passed)
	}
	// The copy of the vector; a stack without room for all of it sends
	// fewer, as a nonblocking sendmmsg may.
	var addr uintptr
	for {
		var err error
		if addr, err = c.StackBuffer(int(n)*mmsghdrSize, vec[:n*mmsghdrSize]); err == nil {
			break
		}
		if n == 1 {
			c.Kernel().UnpassFiles(passed[0])
			return sentry.ErrOf(err)
		}
		n /= 2
		for _, p := range passed[n:] {
			c.Kernel().UnpassFiles(p)
		}
		passed = passed[:n]
	}
	na := platform.SyscallArgs{args[0], addr, uintptr(n), args[3]}
	return sentry.RewriteTo(c, unix.SYS_SENDMMSG, na, &sendmmsgExit{entry: args[1], copy: addr,
		rights: sendRightsExit{files: passed, mmsg: true}})
}

// sendmmsgExit copies the msg_len the host set in the sentry's copy of a
// sendmmsg's vector to the guest's, for each message sent, and takes back
// the passes of the messages not sent.
type sendmmsgExit struct {
	// entry is the guest's vector, copy the sentry's.
	entry, copy uintptr
	rights      sendRightsExit
}

func (s *sendmmsgExit) Exit(c *sentry.Call, ret int64) int64 {
	var n [4]byte
	for i := uintptr(0); i < uintptr(max(ret, 0)); i++ {
		off := i*mmsghdrSize + msghdrSize
		if c.CopyIn(s.copy+off, n[:]) != nil || c.CopyOut(s.entry+off, n[:]) != nil {
			// put_user of msg_len failed: Linux stops there (the
			// messages were sent all the same).
			s.rights.Exit(c, ret)
			if i == 0 {
				return -int64(unix.EFAULT)
			}
			return int64(i)
		}
	}
	return s.rights.Exit(c, ret)
}

// sendFirst lets the host send only the first n messages of a sendmmsg,
// which pass the descriptions in passed (per message).
func sendFirst(c *sentry.Call, args *platform.SyscallArgs, n uint32, passed [][]*vfs.FileDescription) sentry.Result {
	some := false
	for _, p := range passed {
		some = some || len(p) > 0
	}
	na := *args
	na[2] = uintptr(n)
	var then sentry.Continuation = sentry.Identity{}
	if some {
		then = &sendRightsExit{files: passed, mmsg: true}
	}
	return sentry.Observe(c, unix.SYS_SENDMMSG, &na, then, false)
}

// sendRightsExit takes back the passes of the messages a sendmsg or
// sendmmsg did not send.
type sendRightsExit struct {
	// files are the descriptions each message passes.
	files [][]*vfs.FileDescription
	// mmsg: the result is the number of messages sent.
	mmsg bool
}

func (s *sendRightsExit) Exit(c *sentry.Call, ret int64) int64 {
	sent := 0
	switch {
	case ret < 0:
	case s.mmsg:
		sent = int(min(ret, int64(len(s.files))))
	default:
		sent = len(s.files)
	}
	for _, f := range s.files[sent:] {
		c.Kernel().UnpassFiles(f)
	}
	return ret
}

// passFiles records the descriptions a message passes before the host
// sends it: ETOOMANYREFS past the sentry's bound (maxPassedFiles). The
// references checkRights took go either way.
func passFiles(c *sentry.Call, files []*vfs.FileDescription) (sentry.Result, bool) {
	if len(files) == 0 {
		return sentry.Result{}, true
	}
	ok := c.Kernel().PassFiles(files)
	for _, f := range files {
		f.DecRef()
	}
	if !ok {
		return sentry.Err(unix.ETOOMANYREFS), false
	}
	return sentry.Result{}, true
}

// sockNames is the socket addresses the sentry wrote below the guest's
// stack for one call, so that messages of a sendmmsg to the same socket
// share one.
type sockNames struct {
	host string
	addr uintptr
	n    int
}

// checkMsghdr checks one struct msghdr h (the guest's copy): ok false
// with res the answer when the message must fail, files the descriptions
// of the virtual fds its SCM_RIGHTS carry (with a reference each), changed
// when h now names a host socket path the sentry resolved (written below
// the guest's stack, or the one names holds when it is the same) and must
// be sent from a copy.
func checkMsghdr(c *sentry.Call, h []byte, names *sockNames) (res sentry.Result, files []*vfs.FileDescription, changed, ok bool) {
	name, namelen := uintptr(binary.LittleEndian.Uint64(h[0:])), uintptr(binary.LittleEndian.Uint32(h[8:]))
	ctl, ctllen := uintptr(binary.LittleEndian.Uint64(h[32:])), uintptr(binary.LittleEndian.Uint64(h[40:]))
	if ctl != 0 && ctllen > 0 {
		if files, res, ok = checkRights(c, ctl, ctllen); !ok {
			return res, nil, false, false
		}
	}
	fail := func(r sentry.Result) (sentry.Result, []*vfs.FileDescription, bool, bool) {
		for _, f := range files {
			f.DecRef()
		}
		return r, nil, false, false
	}
	if name == 0 || namelen == 0 {
		return res, files, false, true
	}
	p, isPath, err := unixPath(c, name, namelen)
	if err != nil {
		return fail(sentry.ErrOf(err))
	}
	if !isPath {
		return res, files, false, true
	}
	host, res, ok := socketTarget(c, p)
	if !ok {
		return fail(res)
	}
	if host == "" {
		return res, files, false, true
	}
	if len(host) >= sockaddrUnSize-2 {
		return fail(sentry.Err(unix.ENAMETOOLONG))
	}
	if names.addr == 0 || names.host != host {
		b, n := sockaddrUn(host)
		addr, err := c.StackBuffer(n, b[:n])
		if err != nil {
			return fail(sentry.ErrOf(err))
		}
		*names = sockNames{host: host, addr: addr, n: n}
	}
	binary.LittleEndian.PutUint64(h[0:], uint64(names.addr))
	binary.LittleEndian.PutUint32(h[8:], uint32(names.n))
	return res, files, true, true
}

// cmsgHeader is sizeof(struct cmsghdr).
const cmsgHeader = 16

// checkRights walks the control messages as __scm_send does and returns
// the descriptions of the virtual fds SCM_RIGHTS carry, with a reference
// each. A virtual fd without a placeholder the kernel can carry (no host
// descriptor the sentry holds, which a receipt could be told by) is
// errUnserved. A malformed message ends the walk: the host refuses the
// call there (EINVAL) before sending anything.
func checkRights(c *sentry.Call, ctl, ctllen uintptr) ([]*vfs.FileDescription, sentry.Result, bool) {
	if ctllen > maxControl {
		return nil, sentry.Err(unix.ENOBUFS), false
	}
	buf := make([]byte, ctllen)
	if c.CopyIn(ctl, buf) != nil {
		return nil, sentry.Err(unix.EFAULT), false
	}
	var files []*vfs.FileDescription
	for _, fd := range rightsFDs(buf) {
		f := c.FDTable().Get(fd)
		if f == nil {
			continue
		}
		files = append(files, f)
		if f.HostFD < 0 {
			for _, f := range files {
				f.DecRef()
			}
			return nil, sentry.Err(errUnserved), false
		}
	}
	return files, sentry.Pass(), true
}

// rightsFDs are the descriptors of the SCM_RIGHTS messages in control
// data buf, walked as __scm_send and scm_detach_fds lay them out.
func rightsFDs(buf []byte) []int32 {
	var fds []int32
	for off := 0; off+cmsgHeader <= len(buf); {
		clen := int(binary.LittleEndian.Uint64(buf[off:]))
		if clen < cmsgHeader || clen > len(buf)-off {
			break
		}
		level, typ := int32(binary.LittleEndian.Uint32(buf[off+8:])), int32(binary.LittleEndian.Uint32(buf[off+12:]))
		if level == unix.SOL_SOCKET && typ == unix.SCM_RIGHTS {
			for i := off + cmsgHeader; i+4 <= off+clen; i += 4 {
				fds = append(fds, int32(binary.LittleEndian.Uint32(buf[i:])))
			}
		}
		off += (clen + 7) &^ 7
	}
	return fds
}

// PidfdGetfd is pidfd_getfd(pidfd, targetfd, flags): a copy of another
// process's descriptor. A virtual fd of a guest process comes with its
// description: the new number (close-on-exec, as pidfd_getfd sets) shares
// it, as the kernel's copy shares the file. The other process runs
// meanwhile, so any copy from a guest is followed at the exit by what the
// kernel copied (Call.FollowCopy).
func PidfdGetfd(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	pid := pidfdPid(c, int32(args[0]))
	if pid <= 0 || c.Kernel().FDTableOf(pid) == nil {
		return sentry.Pass()
	}
	return sentry.Observe(c, unix.SYS_PIDFD_GETFD, args, &pidfdGetfdExit{pid: pid, target: int32(args[1])}, true)
}

// pidfdGetfdExit gives the new number the description of process pid's
// descriptor target, or whichever of that process's descriptions the
// kernel copied, target having changed meanwhile.
type pidfdGetfdExit struct {
	pid, target int32
}

func (p *pidfdGetfdExit) Exit(c *sentry.Call, ret int64) int64 {
	if ret < 0 {
		return ret
	}
	newfd := int32(ret)
	var cands []*vfs.FileDescription
	if fdt := c.Kernel().FDTableOf(p.pid); fdt != nil {
		if f := fdt.Get(p.target); f != nil {
			cands = append(cands, f)
		}
		if len(cands) == 0 || !c.HoldsPlaceholder(newfd, cands[0]) {
			if f := fdt.Find(func(f *vfs.FileDescription) bool { return c.HoldsPlaceholder(newfd, f) }); f != nil {
				cands = append(cands, f)
			}
		}
	}
	ok := c.FollowCopy(newfd, -1, true, cands...)
	for _, f := range cands {
		f.DecRef()
	}
	if !ok {
		closeUnplaced(c, []int32{newfd}, -int64(unix.EBADF))
		return -int64(unix.EBADF)
	}
	return ret
}

// pidfdPid is the process a guest's pidfd refers to (its fdinfo's Pid,
// in the sentry's pid namespace), 0 if fd is no pidfd.
func pidfdPid(c *sentry.Call, fd int32) int32 {
	data, err := fdInfo(c, fd)
	if err != nil {
		return 0
	}
	return int32(platform.ProcNumber(data, "Pid"))
}

// fdInfo reads the calling thread's /proc/TID/fdinfo/N for fd: the
// kernel's own view of the descriptor (its flags, a pidfd's Pid).
func fdInfo(c *sentry.Call, fd int32) ([]byte, error) {
	return os.ReadFile("/proc/" + strconv.Itoa(int(c.TID)) + "/fdinfo/" + strconv.Itoa(int(fd)))
}

// LandlockAddRule is landlock_add_rule(ruleset_fd, rule_type, attr,
// flags): a path-beneath rule's parent_fd (struct
// landlock_path_beneath_attr, packed: at offset 8) may not be a
// placeholder; EBADFD, as get_path_from_fd gives for a file Landlock
// cannot restrict (an internal mount's).
func LandlockAddRule(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if args[1] != unix.LANDLOCK_RULE_PATH_BENEATH {
		return sentry.Pass()
	}
	var b [4]byte
	if c.CopyIn(args[2]+8, b[:]) != nil {
		return sentry.Err(unix.EFAULT)
	}
	return hostFD(c, int32(binary.LittleEndian.Uint32(b[:])), unix.EBADFD)
}

// Prctl is prctl(option, ...): PR_SET_MM_EXE_FILE would make a
// placeholder the process's /proc/self/exe; refused with EACCES, as
// prctl_set_mm_exe_file refuses a file it cannot take as an executable,
// after the CAP_SYS_RESOURCE check (EPERM, the host's). PR_SET_SECCOMP
// takes no flags, so it cannot install a filter with a listener.
func Prctl(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	if args[0] != unix.PR_SET_MM || args[1] != unix.PR_SET_MM_EXE_FILE || !c.FDTable().Has(int32(args[2])) {
		return sentry.Pass()
	}
	if !hasCap(c, unix.CAP_SYS_RESOURCE) {
		return sentry.Pass()
	}
	return sentry.Err(unix.EACCES)
}

// hasCap reports whether the task's effective capabilities (the kernel's
// record, /proc/TID/status) hold capability cp.
func hasCap(c *sentry.Call, cp uint) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(int(c.TID)) + "/status")
	if err != nil {
		return false
	}
	i := bytes.Index(data, []byte("\nCapEff:"))
	if i < 0 {
		return false
	}
	line := data[i+len("\nCapEff:"):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(line)), 16, 64)
	return err == nil && v&(1<<cp) != 0
}

// userfaultfdIocNew is USERFAULTFD_IOC_NEW, _IO(0xAA, 0x00)
// (include/uapi/linux/userfaultfd.h).
const userfaultfdIocNew = 0xAA00

// userfaultfdDev reports whether the guest's fd fd is the userfaultfd
// misc device (character device 10, the minor /proc/misc gives it).
func userfaultfdDev(c *sentry.Call, fd int32) bool {
	var stx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, c.FDLink(fd), 0, unix.STATX_TYPE, &stx) != nil ||
		stx.Mode&unix.S_IFMT != unix.S_IFCHR || stx.Rdev_major != 10 {
		return false
	}
	misc, err := os.ReadFile("/proc/misc")
	if err != nil {
		// No misc devices listed: take any of them for it.
		return true
	}
	for line := range strings.Lines(string(misc)) {
		if minor, name, ok := strings.Cut(strings.TrimSpace(line), " "); ok && name == "userfaultfd" {
			return minor == strconv.Itoa(int(stx.Rdev_minor))
		}
	}
	return false
}

// bpf(2) commands and attach types that take paths.
const (
	bpfObjPin              = 6
	bpfObjGet              = 7
	bpfLinkCreate          = 28
	bpfFPathFD             = 1 << 14
	bpfTraceUprobeMulti    = 48
	bpfTraceUprobeSession  = 57
	bpfLinkCreateUnionOff  = 16
	bpfObjAttrSize         = 20
	bpfLinkCreateAttrSize  = 24
	perfAttrConfig1        = 56
	perfAttrMinSize        = 64
	uprobePMUTypeSysfsPath = "/sys/bus/event_source/devices/uprobe/type"
)

// Bpf is bpf(cmd, attr, size): BPF_OBJ_PIN and BPF_OBJ_GET name a bpffs
// file by path (relative to path_fd with BPF_F_PATH_FD; a pin creates,
// so it does not follow), and a uprobe-multi link its binary. The paths
// live in attr, where the host reads them itself.
func Bpf(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	switch args[0] {
	case bpfObjPin, bpfObjGet:
		var a [bpfObjAttrSize]byte
		if c.CopyIn(args[1], a[:min(args[2], bpfObjAttrSize)]) != nil {
			return sentry.Err(unix.EFAULT)
		}
		dirfd := int32(unix.AT_FDCWD)
		if binary.LittleEndian.Uint32(a[12:])&bpfFPathFD != 0 {
			dirfd = int32(binary.LittleEndian.Uint32(a[16:]))
		}
		res, _ := hostPathAsIs(c, dirfd, uintptr(binary.LittleEndian.Uint64(a[:])), args[0] == bpfObjGet, false)
		return res
	case bpfLinkCreate:
		var a [bpfLinkCreateAttrSize]byte
		if c.CopyIn(args[1], a[:min(args[2], bpfLinkCreateAttrSize)]) != nil {
			return sentry.Err(unix.EFAULT)
		}
		switch binary.LittleEndian.Uint32(a[8:]) {
		case bpfTraceUprobeMulti, bpfTraceUprobeSession:
			res, _ := hostPathAsIs(c, unix.AT_FDCWD, uintptr(binary.LittleEndian.Uint64(a[bpfLinkCreateUnionOff:])), true, false)
			return res
		}
	}
	return sentry.Pass()
}

// PerfEventOpen is perf_event_open(attr, pid, cpu, group_fd, flags): an
// event of the uprobe PMU names its binary by path (attr.config1, which
// the host reads itself).
func PerfEventOpen(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	var a [perfAttrMinSize]byte
	if c.CopyIn(args[0], a[:]) != nil {
		return sentry.Err(unix.EFAULT)
	}
	data, err := os.ReadFile(uprobePMUTypeSysfsPath)
	if err != nil {
		return sentry.Pass()
	}
	typ, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 32)
	if err != nil || binary.LittleEndian.Uint32(a[:]) != uint32(typ) {
		return sentry.Pass()
	}
	res, _ := hostPathAsIs(c, unix.AT_FDCWD, uintptr(binary.LittleEndian.Uint64(a[perfAttrConfig1:])), true, false)
	return res
}
