package syscalls

import (
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// pageSize is PAGE_SIZE: the largest struct a call copies in whole
// (open_how, xattr_args) before refusing more (copy_struct_from_user).
const pageSize = 4096

// validOpenFlags are the flags open and openat keep (VALID_OPEN_FLAGS);
// others are ignored by them and refused by openat2.
const validOpenFlags = unix.O_RDONLY | unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_EXCL |
	unix.O_NOCTTY | unix.O_TRUNC | unix.O_APPEND | unix.O_NONBLOCK | unix.O_DSYNC | unix.O_ASYNC |
	unix.O_DIRECT | unix.O_LARGEFILE | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NOATIME |
	unix.O_CLOEXEC | unix.O_PATH | unix.O_SYNC | unix.O_TMPFILE

// Open is open(path, flags, mode).
func Open(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return openat(c, unix.AT_FDCWD, args[0], uint32(args[1])&validOpenFlags, uint32(args[2]), 0, false)
}

// Openat is openat(dirfd, path, flags, mode).
func Openat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return openat(c, int32(args[0]), args[1], uint32(args[2])&validOpenFlags, uint32(args[3]), 0, false)
}

// Creat is open(path, O_CREAT|O_WRONLY|O_TRUNC, mode).
func Creat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return openat(c, unix.AT_FDCWD, args[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, uint32(args[1]), 0, false)
}

// openHow is struct open_how.
type openHow struct {
	Flags   uint64
	Mode    uint64
	Resolve uint64
}

const validResolve = unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS |
	unix.RESOLVE_BENEATH | unix.RESOLVE_IN_ROOT | resolveCached

// Openat2 is openat2(dirfd, path, how, size), with Linux's strict checks of
// how (build_open_flags, copy_struct_from_user).
func Openat2(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	how, errno := readOpenHow(c, args)
	if errno != 0 {
		return sentry.Err(errno)
	}
	return openat(c, int32(args[0]), args[1], uint32(how.Flags), uint32(how.Mode), how.Resolve, true)
}

// readOpenHow copies openat2's how (args[2], of size args[3]) and checks
// it as copy_struct_from_user and build_open_flags do.
func readOpenHow(c *sentry.Call, args *platform.SyscallArgs) (openHow, unix.Errno) {
	size := args[3]
	var how openHow
	const howSize = unsafe.Sizeof(how)
	if size < howSize {
		return how, unix.EINVAL
	}
	if size > pageSize {
		return how, unix.E2BIG
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&how)), howSize)
	if err := c.CopyIn(args[2], b); err != nil {
		return how, unix.EFAULT
	}
	if size > howSize {
		extra := make([]byte, size-howSize)
		if err := c.CopyIn(args[2]+howSize, extra); err != nil {
			return how, unix.EFAULT
		}
		for _, b := range extra {
			if b != 0 {
				return how, unix.E2BIG
			}
		}
	}
	if how.Flags&^uint64(validOpenFlags) != 0 || how.Resolve&^validResolve != 0 {
		return how, unix.EINVAL
	}
	if how.Flags&(unix.O_CREAT|unix.O_TMPFILE&^unix.O_DIRECTORY) == 0 && how.Mode != 0 {
		return how, unix.EINVAL
	}
	if how.Mode&^07777 != 0 {
		return how, unix.EINVAL
	}
	if how.Resolve&(unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT) == unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT {
		return how, unix.EINVAL
	}
	return how, 0
}

// OpenWaits, OpenatWaits, Openat2Waits and CreatWaits are the open
// family's sentry.Syscall.Waits.
func OpenWaits(c *sentry.Call, args *platform.SyscallArgs) bool {
	return openWaits(c, unix.AT_FDCWD, args[0], uint32(args[1])&validOpenFlags, 0)
}

func OpenatWaits(c *sentry.Call, args *platform.SyscallArgs) bool {
	return openWaits(c, int32(args[0]), args[1], uint32(args[2])&validOpenFlags, 0)
}

func Openat2Waits(c *sentry.Call, args *platform.SyscallArgs) bool {
	how, errno := readOpenHow(c, args)
	return errno == 0 && openWaits(c, int32(args[0]), args[1], uint32(how.Flags), how.Resolve)
}

func CreatWaits(c *sentry.Call, args *platform.SyscallArgs) bool {
	return openWaits(c, unix.AT_FDCWD, args[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, 0)
}

// openWaits reports whether openat would wait for the other end of one of
// the sentry's FIFOs, as fifo_open does for a blocking open for reading or
// for writing only, found by the walk openat makes and allowed by
// may_open; nothing is created or opened. Whether the other end is there
// already cannot be told without opening one (which a peer would see), so
// an open that finds it there is reported as waiting too. Host FIFOs are
// the host's to open (a path that stays on the host is not looked at).
func openWaits(c *sentry.Call, dirfd int32, pathAddr uintptr, flags uint32, resolve uint64) bool {
	switch {
	case flags&(unix.O_PATH|unix.O_NONBLOCK|unix.O_TMPFILE&^unix.O_DIRECTORY) != 0,
		flags&unix.O_ACCMODE != unix.O_RDONLY && flags&unix.O_ACCMODE != unix.O_WRONLY,
		flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL:
		// fifo_open waits only in a blocking open for one direction;
		// O_CREAT|O_EXCL finds an existing file EEXIST.
		return false
	}
	r, err := resolveAtScoped(c, dirfd, pathAddr, flags&unix.O_NOFOLLOW == 0, false, resolve)
	if err != nil || r.host || r.Dentry == nil || r.Dentry.Inode().Mode()&unix.S_IFMT != unix.S_IFIFO {
		return false
	}
	return mayOpen(c, r.Dentry, flags, r.TrailingSlash) == nil
}

// openat is do_sys_openat2 for the sentry's files. The descriptor number
// comes first, as in Linux (get_unused_fd_flags before do_filp_open): the
// call is rewritten into memfd_create, whose result is the lowest free
// number (or EMFILE), and only then is the file created or truncated, so an
// open that fails for want of a descriptor changes nothing.
func openat(c *sentry.Call, dirfd int32, pathAddr uintptr, flags, mode uint32, resolve uint64, strict bool) sentry.Result {
	// build_open_flags.
	if flags&unix.O_CREAT != 0 && flags&unix.O_DIRECTORY != 0 {
		return sentry.Err(unix.EINVAL)
	}
	if flags&unix.O_TMPFILE&^unix.O_DIRECTORY != 0 {
		if flags&unix.O_TMPFILE != unix.O_TMPFILE || flags&unix.O_ACCMODE == unix.O_RDONLY {
			return sentry.Err(unix.EINVAL)
		}
	}
	if flags&unix.O_PATH != 0 {
		flags &= unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_PATH | unix.O_CLOEXEC
	}
	if strict && flags&unix.O_ACCMODE == unix.O_ACCMODE && flags&unix.O_PATH == 0 {
		// openat2 refuses the "3" access mode; open(2) keeps it (ioctl-only).
		return sentry.Err(unix.EINVAL)
	}
	follow := flags&unix.O_NOFOLLOW == 0 && flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
	r, err := resolveAtScoped(c, dirfd, pathAddr, follow, false, resolve)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		if hostPath, mountinfo, ok := procMountsFile(c, r.Host); ok && r.hostPath == "" {
			return openProcMounts(c, hostPath, mountinfo, flags)
		}
		if r.hostPath == "" && readOnlyOpen(flags) {
			if hostPath, f, ok := procFDInfoFile(c, r.Host); ok {
				return openProcFDInfo(c, hostPath, f, flags)
			}
		}
		if r.Jumped {
			// Through a magic link to a descriptor the sentry does not
			// hold, which a racing thread may make a placeholder
			// before the open follows it again: what was opened is
			// checked (openJumped).
			return openJumped(c, r, flags, mode, resolve)
		}
		if c.Notified() && r.hostPath != "" {
			return openHost(c, r.hostPath, flags, mode, resolve)
		}
		return sentry.Pass()
	}
	if flags&unix.O_TMPFILE&^unix.O_DIRECTORY != 0 {
		// do_tmpfile: the path is the directory (O_TMPFILE carries
		// O_DIRECTORY).
		if r.Dentry == nil {
			return sentry.Err(unix.ENOENT)
		}
		if r.Dentry.Inode().Mode()&unix.S_IFMT != unix.S_IFDIR {
			return sentry.Err(unix.ENOTDIR)
		}
		tm, ok := r.Dentry.(vfs.TmpfileMaker)
		if !ok {
			return sentry.Err(unix.EOPNOTSUPP)
		}
		if err := mntWantWrite(r.Dentry.Inode()); err != nil {
			return sentry.ErrOf(err)
		}
		if err := r.Dentry.Inode().CheckPermission(c.Creds(), vfs.MayWrite|vfs.MayExec); err != nil {
			return sentry.ErrOf(err)
		}
		d, err := tm.CreateTmpfile(mode&07777&^c.FSContext().Umask(), flags&unix.O_EXCL != 0, c.Creds())
		if err != nil {
			return sentry.ErrOf(err)
		}
		return installOpen(c, r.Mount, d, flags, nil)
	}
	if flags&unix.O_CREAT != 0 && r.TrailingSlash {
		// open_last_lookups: O_CREAT with a trailing slash, before the
		// lookup.
		return sentry.Err(unix.EISDIR)
	}
	if r.Dentry == nil {
		// The last component does not exist.
		if flags&unix.O_CREAT == 0 || r.Parent == nil {
			return sentry.Err(unix.ENOENT)
		}
		if r.TrailingSlash {
			return sentry.Err(unix.EISDIR)
		}
		if err := mntWantWrite(r.Parent.Inode()); err != nil {
			// lookup_open: the create the file needs.
			return sentry.ErrOf(err)
		}
		if err := r.Parent.Inode().CheckPermission(c.Creds(), vfs.MayWrite|vfs.MayExec); err != nil {
			return sentry.ErrOf(err)
		}
		st := c.StatBuf()
		if r.Parent.Inode().Stat(st); st.Nlink == 0 {
			// A removed directory takes no new names.
			return sentry.Err(unix.ENOENT)
		}
		dir, name := r.Parent, r.Name
		d, err := dir.Create(name, mode&07777&^c.FSContext().Umask(), c.Creds())
		if err == unix.EEXIST && flags&unix.O_EXCL == 0 {
			// Another thread created it since the walk: open that one,
			// as a lookup after the create would have.
			if d, err = dir.Lookup(name); err == nil {
				return openExisting(c, r.Mount, d, flags, false)
			}
		}
		if err != nil {
			return sentry.ErrOf(err)
		}
		// No descriptor for the new file (EMFILE): it goes again, as
		// Linux, which takes the number first, never makes it.
		undo := func() {
			if cur, err := dir.Lookup(name); err == nil && cur == d {
				dir.Unlink(name, c.Creds())
			}
		}
		return installOpen(c, r.Mount, d, flags, undo)
	}
	return openExisting(c, r.Mount, r.Dentry, flags, r.TrailingSlash)
}

// openExisting opens a file the walk found: may_open's checks, special
// files to their host stand-ins, O_TRUNC, then the descriptor.
func openExisting(c *sentry.Call, m *vfs.Mount, d vfs.Dentry, flags uint32, trailingSlash bool) sentry.Result {
	if err := mayOpen(c, d, flags, trailingSlash); err != nil {
		return sentry.ErrOf(err)
	}
	ino := d.Inode()
	switch ino.Mode() & unix.S_IFMT {
	case unix.S_IFIFO:
		if flags&unix.O_PATH == 0 {
			return openFIFO(c, m, ino, flags)
		}
	case unix.S_IFCHR, unix.S_IFBLK:
		if flags&unix.O_PATH == 0 {
			return openDevice(c, m, ino, flags)
		}
	case unix.S_IFSOCK:
		if flags&unix.O_PATH == 0 {
			// open_last_lookups -> do_open: sockets cannot be opened.
			return sentry.Err(unix.ENXIO)
		}
	case unix.S_IFREG:
		if flags&unix.O_TRUNC != 0 && flags&unix.O_PATH == 0 {
			// handle_truncate, after the open (vfs_open's
			// fsnotify_open comes first: a watch sees the open, then
			// the truncate). Linux takes the descriptor number
			// first, so an open that fails with EMFILE truncates
			// nothing; here the number comes last, and such an open
			// has truncated (the one divergence of the order).
			return installOpenThen(c, m, d, flags, nil, func(hfd int) error {
				through, err := ino.TruncateOpened(hfd, c.Creds())
				if err == nil && !through {
					notifyChild(d, vfs.DNModify)
				}
				return err
			})
		}
	}
	return installOpen(c, m, d, flags, nil)
}

// installOpen gives the guest a descriptor of d for an open with flags:
// the file's placeholder (Inode.OpenHost: for a regular file its data
// itself) installed at the lowest free number, the description in the
// task's table. undo, set exactly when this open created d, runs when no
// number is free.
func installOpen(c *sentry.Call, m *vfs.Mount, d vfs.Dentry, flags uint32, undo func()) sentry.Result {
	return installOpenThen(c, m, d, flags, undo, nil)
}

// installOpenThen is installOpen with then run on the placeholder once it
// is open, before it is installed; its error fails the open.
func installOpenThen(c *sentry.Call, m *vfs.Mount, d vfs.Dentry, flags uint32, undo func(), then func(hfd int) error) sentry.Result {
	// The description first: its reference keeps an O_TMPFILE inode
	// (no name) until it goes with the description on failure.
	f := vfs.NewFileDescription(m, d, fileFlags(flags))
	defer f.DecRef()
	f.Created = undo != nil
	var hfd int
	var err error
	if o, ok := d.(vfs.NamedOpener); ok {
		hfd, err = o.OpenHostNamed(flags)
	} else {
		hfd, err = d.Inode().OpenHost(flags)
	}
	if err != nil {
		if undo != nil {
			undo()
		}
		return sentry.ErrOf(errnoOf(err))
	}
	f.HostFD = hfd
	if then != nil {
		if err := then(hfd); err != nil {
			return sentry.ErrOf(errnoOf(err))
		}
	}
	return c.InstallFile(f, flags&unix.O_CLOEXEC != 0, undo)
}

// mayOpen is the part of Linux's do_open and may_open that checks an
// existing file against the open flags.
func mayOpen(c *sentry.Call, d vfs.Dentry, flags uint32, trailingSlash bool) error {
	if flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
		return unix.EEXIST
	}
	ino := d.Inode()
	typ := ino.Mode() & unix.S_IFMT
	if typ == unix.S_IFDIR && flags&unix.O_CREAT != 0 {
		return unix.EISDIR
	}
	if (flags&unix.O_DIRECTORY != 0 || trailingSlash) && typ != unix.S_IFDIR {
		if typ == unix.S_IFLNK && flags&unix.O_PATH == 0 {
			return unix.ELOOP
		}
		return unix.ENOTDIR
	}
	if flags&unix.O_PATH != 0 {
		return nil
	}
	if typ == unix.S_IFLNK {
		return unix.ELOOP
	}
	var acc uint32
	switch flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		acc = vfs.MayRead
	case unix.O_WRONLY:
		acc = vfs.MayWrite
	case unix.O_RDWR, unix.O_ACCMODE:
		acc = vfs.MayRead | vfs.MayWrite
	}
	if flags&unix.O_TRUNC != 0 {
		acc |= vfs.MayWrite
	}
	if typ == unix.S_IFDIR && acc&vfs.MayWrite != 0 {
		return unix.EISDIR
	}
	if err := ino.CheckPermission(c.Creds(), acc); err != nil {
		return err
	}
	if fl, ok := ino.(vfs.FlagsInode); ok && fl.FSFlags()&vfs.FlagAppend != 0 {
		// An append-only file is written only in append mode, and never
		// truncated.
		if flags&unix.O_ACCMODE != unix.O_RDONLY && flags&unix.O_APPEND == 0 || flags&unix.O_TRUNC != 0 {
			return unix.EPERM
		}
	}
	if flags&unix.O_NOATIME != 0 {
		// may_open: only the owner (or CAP_FOWNER) may leave atime
		// alone.
		var st unix.Stat_t
		ino.Stat(&st)
		if !c.Creds().OwnerOrCapable(st.Uid, st.Gid) {
			return unix.EPERM
		}
	}
	return nil
}

// fileFlags are the f_flags F_GETFL reports for open flags: creation flags
// and O_CLOEXEC dropped, O_LARGEFILE forced on 64-bit (force_o_largefile);
// O_PATH keeps only O_PATH, O_DIRECTORY and O_NOFOLLOW.
func fileFlags(flags uint32) uint32 {
	if flags&unix.O_PATH != 0 {
		return flags & (unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW)
	}
	return flags&^(unix.O_CREAT|unix.O_EXCL|unix.O_NOCTTY|unix.O_TRUNC|unix.O_CLOEXEC) | oLargefile
}

// oLargefile is O_LARGEFILE on x86-64 (x/sys/unix defines it as 0 there,
// as glibc's headers do for 64-bit userspace; the kernel's bit is 0100000).
const oLargefile = 0x8000

func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}

// resolveCached is RESOLVE_CACHED (not in x/sys/unix).
const resolveCached = 0x20

// openJumped opens a host file the path reached through a magic link of
// /proc to a descriptor the sentry does not hold (a guest's host file,
// another process's). The link is followed again when the open runs, and
// by then a racing thread may have put a placeholder at that number: the
// kernel would reopen a file of the sandbox's store, behind the sentry's
// back. So the opened file is checked: on a notifying platform the sentry
// opens it for the guest (openHost, by the path it resolved), on a
// stopping one the host runs the guest's call and its exit looks. A store
// file is refused with EOPNOTSUPP, as the magic links of processes the
// sentry does not trace to store files are (the call is the guest's own
// race: had it come a moment later, the sentry would have served the
// reopen of its file).
func openJumped(c *sentry.Call, r resolved, flags, mode uint32, resolve uint64) sentry.Result {
	if c.Notified() {
		host := r.hostPath
		if host == "" {
			host = r.Host
		}
		if n, ok := ownFDLink(c, r.JumpedAt); ok {
			// A reopen of the guest's own descriptor: the sentry
			// takes the very file and reopens its copy as the guest,
			// as the guest's own /proc/self/fd would, with no search
			// of the file's directories (which its path would need)
			// and open to it even non-dumpable (where the sentry's
			// /proc/PID/fd is not).
			src, err := platform.GetFD(c.TID, n)
			if err != nil {
				// Closed since: the link is gone.
				return sentry.Err(unix.ENOENT)
			}
			defer unix.Close(src)
			host = "/proc/self/fd/" + strconv.Itoa(src)
		}
		return openHost(c, host, flags, mode, resolve)
	}
	c.ThenAtExit(openJumpedExit{})
	return sentry.Pass()
}

// ownFDLink reports whether host path p is the magic link of one of the
// calling thread group's descriptors, /proc/TGID/fd/N or
// /proc/TGID/task/TID/fd/N, and N.
func ownFDLink(c *sentry.Call, p string) (int32, bool) {
	rest, ok := strings.CutPrefix(p, "/proc/"+strconv.Itoa(int(c.TG.TGID))+"/")
	if !ok {
		return 0, false
	}
	if t, ok := strings.CutPrefix(rest, "task/"); ok {
		tid, after, found := strings.Cut(t, "/")
		if _, err := strconv.Atoi(tid); !found || err != nil {
			return 0, false
		}
		rest = after
	}
	num, ok := strings.CutPrefix(rest, "fd/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != num {
		return 0, false
	}
	return int32(n), true
}

// openJumpedExit refuses what an open through a magic link got if it is
// a file of a sentry store (openJumped): the descriptor is closed by a
// reissued close_range before the guest sees the result.
type openJumpedExit struct{}

func (openJumpedExit) Exit(c *sentry.Call, ret int64) int64 {
	if ret < 0 || !onSentryStore(c, int32(ret)) {
		return ret
	}
	closeUnplaced(c, []int32{int32(ret)}, -int64(unix.EOPNOTSUPP))
	return -int64(unix.EOPNOTSUPP)
}
