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
// its host path), and SCM_RIGHTS control data may not carry a virtual fd
// (errUnserved): the receiver, another guest process or a host one, would
// get the placeholder.
func Sendmsg(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	var h [msghdrSize]byte
	if c.CopyIn(args[1], h[:]) != nil {
		return sentry.Err(unix.EFAULT)
	}
	res, changed, ok := checkMsghdr(c, h[:])
	if !ok || !changed {
		return res
	}
	addr, err := c.StackBuffer(len(h), h[:])
	if err != nil {
		return sentry.ErrOf(err)
	}
	na := *args
	na[1] = addr
	return sentry.RewriteTo(c, unix.SYS_SENDMSG, na, sentry.Identity{})
}

// Sendmmsg is sendmmsg(fd, msgvec, vlen, flags): each message as sendmsg.
// Linux sends the messages in order and returns how many went; the host
// gets the messages before the first one the sentry must refuse or
// redirect (a shorter vlen), and that one alone, redirected, is sent as
// sendmsg when it comes first.
func Sendmmsg(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	vlen := min(uint32(args[2]), uioMaxIOV)
	for i := uint32(0); i < vlen; i++ {
		var h [mmsghdrSize]byte
		entry := args[1] + uintptr(i)*mmsghdrSize
		if c.CopyIn(entry, h[:]) != nil {
			if i == 0 {
				return sentry.Err(unix.EFAULT)
			}
			return sendFirst(c, args, i)
		}
		res, changed, ok := checkMsghdr(c, h[:msghdrSize])
		switch {
		case ok && !changed:
			continue
		case i > 0:
			return sendFirst(c, args, i)
		case !ok:
			return res
		}
		addr, err := c.StackBuffer(msghdrSize, h[:msghdrSize])
		if err != nil {
			return sentry.ErrOf(err)
		}
		na := platform.SyscallArgs{args[0], addr, args[3]}
		return sentry.RewriteTo(c, unix.SYS_SENDMSG, na, &sendmmsgFirstExit{entry: entry})
	}
	return sentry.Pass()
}

// sendmmsgFirstExit makes the sendmsg a sendmmsg's first message was sent
// by that sendmmsg's answer: one message sent, its msg_len set.
type sendmmsgFirstExit struct {
	// entry is the guest's struct mmsghdr.
	entry uintptr
}

func (s *sendmmsgFirstExit) Exit(c *sentry.Call, ret int64) int64 {
	if ret < 0 {
		return ret
	}
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(ret))
	if c.CopyOut(s.entry+msghdrSize, n[:]) != nil {
		return -int64(unix.EFAULT)
	}
	return 1
}

// sendFirst lets the host send only the first n messages of a sendmmsg.
func sendFirst(c *sentry.Call, args *platform.SyscallArgs, n uint32) sentry.Result {
	na := *args
	na[2] = uintptr(n)
	return sentry.Observe(c, unix.SYS_SENDMMSG, &na, sentry.Identity{}, false)
}

// checkMsghdr checks one struct msghdr h (the guest's copy): ok false
// with res the answer when the message must fail, changed when h now
// names a host socket path the sentry resolved (written below the
// guest's stack) and must be sent from a copy.
func checkMsghdr(c *sentry.Call, h []byte) (res sentry.Result, changed, ok bool) {
	name, namelen := uintptr(binary.LittleEndian.Uint64(h[0:])), uintptr(binary.LittleEndian.Uint32(h[8:]))
	ctl, ctllen := uintptr(binary.LittleEndian.Uint64(h[32:])), uintptr(binary.LittleEndian.Uint64(h[40:]))
	if ctl != 0 && ctllen > 0 {
		if res, ok := checkRights(c, ctl, ctllen); !ok {
			return res, false, false
		}
	}
	if name == 0 || namelen == 0 {
		return res, false, true
	}
	p, isPath, err := unixPath(c, name, namelen)
	if err != nil {
		return sentry.ErrOf(err), false, false
	}
	if !isPath {
		return res, false, true
	}
	host, res, ok := socketTarget(c, p)
	if !ok || host == "" {
		return res, false, ok
	}
	if len(host) >= sockaddrUnSize-2 {
		return sentry.Err(unix.ENAMETOOLONG), false, false
	}
	b, n := sockaddrUn(host)
	addr, err := c.StackBuffer(n, b[:n])
	if err != nil {
		return sentry.ErrOf(err), false, false
	}
	binary.LittleEndian.PutUint64(h[0:], uint64(addr))
	binary.LittleEndian.PutUint32(h[8:], uint32(n))
	return res, true, true
}

// cmsgHeader is sizeof(struct cmsghdr).
const cmsgHeader = 16

// checkRights walks the control messages as __scm_send does and refuses
// SCM_RIGHTS carrying a virtual fd. A malformed message ends the walk:
// the host refuses the call there (EINVAL) before sending anything.
func checkRights(c *sentry.Call, ctl, ctllen uintptr) (sentry.Result, bool) {
	if ctllen > maxControl {
		return sentry.Err(unix.ENOBUFS), false
	}
	buf := make([]byte, ctllen)
	if c.CopyIn(ctl, buf) != nil {
		return sentry.Err(unix.EFAULT), false
	}
	fdt := c.FDTable()
	for off := 0; off+cmsgHeader <= len(buf); {
		clen := int(binary.LittleEndian.Uint64(buf[off:]))
		if clen < cmsgHeader || clen > len(buf)-off {
			break
		}
		level, typ := int32(binary.LittleEndian.Uint32(buf[off+8:])), int32(binary.LittleEndian.Uint32(buf[off+12:]))
		if level == unix.SOL_SOCKET && typ == unix.SCM_RIGHTS {
			for i := off + cmsgHeader; i+4 <= off+clen; i += 4 {
				if fdt.Has(int32(binary.LittleEndian.Uint32(buf[i:]))) {
					return sentry.Err(errUnserved), false
				}
			}
		}
		off += (clen + 7) &^ 7
	}
	return sentry.Pass(), true
}

// PidfdGetfd is pidfd_getfd(pidfd, targetfd, flags): a copy of another
// process's descriptor. A virtual fd of a guest process comes with its
// description: the new number (close-on-exec, as pidfd_getfd sets) shares
// it, as the kernel's copy shares the file.
func PidfdGetfd(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	pid := pidfdPid(c, int32(args[0]))
	if pid <= 0 {
		return sentry.Pass()
	}
	fdt := c.Kernel().FDTableOf(pid)
	if fdt == nil || !fdt.Has(int32(args[1])) {
		return sentry.Pass()
	}
	return sentry.Observe(c, unix.SYS_PIDFD_GETFD, args, &pidfdGetfdExit{pid: pid, target: int32(args[1])}, true)
}

// pidfdGetfdExit gives the new number the description of process pid's
// descriptor target.
type pidfdGetfdExit struct {
	pid, target int32
}

func (p *pidfdGetfdExit) Exit(c *sentry.Call, ret int64) int64 {
	if ret < 0 {
		return ret
	}
	fdt := c.Kernel().FDTableOf(p.pid)
	if fdt == nil {
		return ret
	}
	if f := fdt.Get(p.target); f != nil {
		if old := c.FDTable().Install(int32(ret), f, true); old != nil {
			old.DecRef()
		}
		f.DecRef()
	}
	return ret
}

// pidfdPid is the process a guest's pidfd refers to (its fdinfo's Pid,
// in the sentry's pid namespace), 0 if fd is no pidfd.
func pidfdPid(c *sentry.Call, fd int32) int32 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(int(c.TID)) + "/fdinfo/" + strconv.Itoa(int(fd)))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return int32(n)
		}
	}
	return 0
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
