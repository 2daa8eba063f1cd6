package syscalls

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// validOpenFlags are the flags open and openat keep (VALID_OPEN_FLAGS);
// others are ignored by them and refused by openat2.
const validOpenFlags = unix.O_RDONLY | unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_EXCL |
	unix.O_NOCTTY | unix.O_TRUNC | unix.O_APPEND | unix.O_NONBLOCK | unix.O_DSYNC | unix.O_ASYNC |
	unix.O_DIRECT | unix.O_LARGEFILE | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NOATIME |
	unix.O_CLOEXEC | unix.O_PATH | unix.O_SYNC | unix.O_TMPFILE

// Open is open(path, flags, mode).
func Open(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return openat(t, unix.AT_FDCWD, args[0], uint32(args[1])&validOpenFlags, uint32(args[2]), 0, false)
}

// Openat is openat(dirfd, path, flags, mode).
func Openat(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return openat(t, int32(args[0]), args[1], uint32(args[2])&validOpenFlags, uint32(args[3]), 0, false)
}

// Creat is open(path, O_CREAT|O_WRONLY|O_TRUNC, mode).
func Creat(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return openat(t, unix.AT_FDCWD, args[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, uint32(args[1]), 0, false)
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
func Openat2(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	size := args[3]
	var how openHow
	const howSize = unsafe.Sizeof(how)
	if size < howSize {
		return sentry.Err(unix.EINVAL)
	}
	if size > pageSize {
		return sentry.Err(unix.E2BIG)
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&how)), howSize)
	if err := t.CopyIn(args[2], b); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	if size > howSize {
		extra := make([]byte, size-howSize)
		if err := t.CopyIn(args[2]+howSize, extra); err != nil {
			return sentry.Err(unix.EFAULT)
		}
		for _, c := range extra {
			if c != 0 {
				return sentry.Err(unix.E2BIG)
			}
		}
	}
	if how.Flags&^uint64(validOpenFlags) != 0 || how.Resolve&^validResolve != 0 {
		return sentry.Err(unix.EINVAL)
	}
	if how.Flags&(unix.O_CREAT|unix.O_TMPFILE&^unix.O_DIRECTORY) == 0 && how.Mode != 0 {
		return sentry.Err(unix.EINVAL)
	}
	if how.Mode&^07777 != 0 {
		return sentry.Err(unix.EINVAL)
	}
	if how.Resolve&(unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT) == unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT {
		return sentry.Err(unix.EINVAL)
	}
	return openat(t, int32(args[0]), args[1], uint32(how.Flags), uint32(how.Mode), how.Resolve, true)
}

// openat is do_sys_openat2 for the sentry's files. The descriptor number
// comes first, as in Linux (get_unused_fd_flags before do_filp_open): the
// call is rewritten into memfd_create, whose result is the lowest free
// number (or EMFILE), and only then is the file created or truncated, so an
// open that fails for want of a descriptor changes nothing.
func openat(t *sentry.Task, dirfd int32, pathAddr uintptr, flags, mode uint32, resolve uint64, strict bool) sentry.Result {
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
	r, err := resolveAtScoped(t, dirfd, pathAddr, follow, false, resolve)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		if hostPath, mountinfo, ok := procMountsFile(t, r.Host); ok && r.hostPath == "" {
			return openProcMounts(t, hostPath, mountinfo, flags)
		}
		if t.Notified() && r.hostPath != "" {
			return openHost(t, r.hostPath, flags, mode, resolve)
		}
		return sentry.Pass()
	}
	s := t.Scratch()
	if flags&unix.O_TMPFILE&^unix.O_DIRECTORY != 0 {
		// do_tmpfile: the path is the directory (O_TMPFILE carries
		// O_DIRECTORY); the file is made once the descriptor exists.
		if r.Dentry == nil {
			return sentry.Err(unix.ENOENT)
		}
		if r.Dentry.Inode().Mode()&unix.S_IFMT != unix.S_IFDIR {
			return sentry.Err(unix.ENOTDIR)
		}
		if _, ok := r.Dentry.(vfs.TmpfileMaker); !ok {
			return sentry.Err(unix.EOPNOTSUPP)
		}
		if err := r.Dentry.Inode().CheckPermission(t.Creds(), vfs.MayWrite|vfs.MayExec); err != nil {
			return sentry.ErrOf(err)
		}
		*s = sentry.Scratch{Flags: flags, Mount: r.Mount, Dir: r.Dentry, Mode: mode & 07777 &^ t.FSContext().Umask()}
		return openPlaceholder(t, s, flags)
	}
	if flags&unix.O_CREAT != 0 && r.TrailingSlash {
		// open_last_lookups: O_CREAT with a trailing slash, before the
		// lookup.
		return sentry.Err(unix.EISDIR)
	}
	*s = sentry.Scratch{Flags: flags, Mount: r.Mount}
	if r.Dentry == nil {
		// The last component does not exist.
		if flags&unix.O_CREAT == 0 || r.Parent == nil {
			return sentry.Err(unix.ENOENT)
		}
		if r.TrailingSlash {
			return sentry.Err(unix.EISDIR)
		}
		if err := r.Parent.Inode().CheckPermission(t.Creds(), vfs.MayWrite|vfs.MayExec); err != nil {
			return sentry.ErrOf(err)
		}
		st := t.StatBuf()
		if r.Parent.Inode().Stat(st); st.Nlink == 0 {
			// A removed directory takes no new names.
			return sentry.Err(unix.ENOENT)
		}
		s.Dir = r.Parent
		s.Name = r.Name
		s.Mode = mode & 07777 &^ t.FSContext().Umask()
	} else {
		if err := mayOpen(t, r.Dentry, flags, r.TrailingSlash); err != nil {
			return sentry.ErrOf(err)
		}
		switch r.Dentry.Inode().Mode() & unix.S_IFMT {
		case unix.S_IFIFO:
			if flags&unix.O_PATH == 0 {
				return openFIFO(t, r.Mount, r.Dentry.Inode(), flags)
			}
		case unix.S_IFCHR, unix.S_IFBLK:
			if flags&unix.O_PATH == 0 {
				return openDevice(t, r.Mount, r.Dentry.Inode(), flags)
			}
		case unix.S_IFSOCK:
			if flags&unix.O_PATH == 0 {
				// open_last_lookups -> do_open: sockets cannot be opened.
				return sentry.Err(unix.ENXIO)
			}
		}
		s.Found = r.Dentry
	}
	return openPlaceholder(t, s, flags)
}

// openPlaceholder gives the guest the descriptor number for the open s
// describes: on a notifying platform the file is made and installed at
// once; on ptrace the call becomes the open of a placeholder, and openExit
// makes the file once the number is known.
func openPlaceholder(t *sentry.Task, s *sentry.Scratch, flags uint32) sentry.Result {
	if t.Notified() {
		return openNotified(t)
	}
	if shadow, accmode := placeholderShadow(s); shadow != "" {
		// A regular file's placeholder is an open of its shadow, with
		// the guest's access mode, so that the host can map it as
		// Linux would (mmap.go); another file's, a read-only open of
		// the mount's anonymous shadow. The path is written below the
		// guest's stack, as the memfd's name is.
		addr, err := t.WriteStackString(shadow)
		if err != nil {
			dropShadow(s)
			return sentry.ErrOf(err)
		}
		pflags := accmode | flags&unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NOCTTY
		cwd := int64(unix.AT_FDCWD)
		s.Placeholder = shadow
		return sentry.RewriteTo(t, unix.SYS_OPENAT, platform.SyscallArgs{uintptr(cwd), addr, uintptr(pflags)}, openExit)
	}
	args, err := memfdPlaceholder(t, flags)
	if err != nil {
		return sentry.ErrOf(err)
	}
	return sentry.RewriteTo(t, unix.SYS_MEMFD_CREATE, args, openExit)
}

// memfdPlaceholder is the memfd_create call that makes an empty memfd
// placeholder: without shadows, or when the guest cannot open one. The
// name is an empty string the sentry writes below the guest's stack, not
// the guest's own path: another guest thread may rewrite that buffer
// meanwhile (a longer name is EINVAL).
func memfdPlaceholder(t *sentry.Task, flags uint32) (platform.SyscallArgs, error) {
	nameAddr, err := t.WriteStackString("")
	if err != nil {
		return platform.SyscallArgs{}, err
	}
	memfdFlags := uintptr(0)
	if flags&unix.O_CLOEXEC != 0 {
		memfdFlags = unix.MFD_CLOEXEC
	}
	return platform.SyscallArgs{nameAddr, memfdFlags}, nil
}

// mayOpen is the part of Linux's do_open and may_open that checks an
// existing file against the open flags.
func mayOpen(t *sentry.Task, d vfs.Dentry, flags uint32, trailingSlash bool) error {
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
	return ino.CheckPermission(t.Creds(), acc)
}

// openExit runs once the placeholder has its number: create or truncate
// the file and install its description there.
func openExit(t *sentry.Task, ret int64) int64 {
	s := t.Scratch()
	if ret < 0 && s.Placeholder != "" && ret != -int64(unix.EMFILE) && ret != -int64(unix.ENFILE) && ret != -int64(unix.ENOMEM) {
		// The guest could not open the shadow (it sees another
		// /dev/shm: a mount namespace, a chroot, Landlock): its
		// placeholder is a memfd after all, as without shadows.
		s.Placeholder = ""
		dropShadow(s)
		if args, err := memfdPlaceholder(t, s.Flags); err == nil {
			t.ReissueObserved(unix.SYS_MEMFD_CREATE, args, openExit)
			return ret
		}
	}
	if ret < 0 {
		dropShadow(s)
		*s = sentry.Scratch{}
		return ret
	}
	fd := int32(ret)
	flags := s.Flags
	d, _, err := openFile(t, s)
	if err != nil {
		// Another guest thread changed the directory between the call's
		// two stops: the placeholder goes again.
		dropShadow(s)
		*s = sentry.Scratch{}
		t.FailAfterClose(fd, errnoOf(err))
		return ret
	}
	if s.Shadow != "" {
		if sh, ok := d.Inode().(vfs.Shadowed); !ok || !sh.AdoptShadow(s.Shadow) {
			// Another thread created the file meanwhile: this
			// placeholder's shadow stands for nothing (mmap.go tells).
			dropShadow(s)
		}
	}
	f := vfs.NewFileDescription(s.Mount, d, fileFlags(flags))
	if old := t.FDTable().Install(fd, f, flags&unix.O_CLOEXEC != 0); old != nil {
		old.DecRef()
	}
	f.DecRef()
	*s = sentry.Scratch{}
	return ret
}

// placeholderShadow is the host file a placeholder opens, and the access
// mode to open it with: a regular file's own shadow, with the guest's
// access mode (for a file the open creates, a new one its inode adopts at
// the exit, s.Shadow); for other files and O_PATH, the mount's anonymous
// shadow, read-only. "" for file systems without shadows (or when making
// one fails): the placeholder is then a memfd.
func placeholderShadow(s *sentry.Scratch) (string, uint32) {
	m, ok := s.Mount.FS.(vfs.ShadowMaker)
	if !ok {
		return "", 0
	}
	accmode := s.Flags & unix.O_ACCMODE
	switch {
	case s.Flags&unix.O_PATH != 0:
	case s.Found == nil:
		s.Shadow, _ = m.NewShadow()
		return s.Shadow, accmode
	case s.Found.Inode().Mode()&unix.S_IFMT == unix.S_IFREG:
		sh, ok := s.Found.Inode().(vfs.Shadowed)
		if !ok {
			return "", 0
		}
		p, _ := sh.ShadowPath(true)
		return p, accmode
	}
	return m.AnonShadow(), unix.O_RDONLY
}

// dropShadow removes the shadow an open made for a file it did not create
// after all.
func dropShadow(s *sentry.Scratch) {
	if s.Shadow == "" {
		return
	}
	if m, ok := s.Mount.FS.(vfs.ShadowMaker); ok {
		m.DropShadow(s.Shadow)
	}
	s.Shadow = ""
}

// openFile is the part of an open after the descriptor number: it creates
// the file the entry found missing, or truncates the one it found for
// O_TRUNC; created says the file is new.
func openFile(t *sentry.Task, s *sentry.Scratch) (d vfs.Dentry, created bool, err error) {
	if s.Flags&unix.O_TMPFILE&^unix.O_DIRECTORY != 0 {
		d, err = s.Dir.(vfs.TmpfileMaker).CreateTmpfile(s.Mode, s.Flags&unix.O_EXCL != 0, t.Creds())
		return d, false, err
	}
	if s.Found == nil {
		d, err = s.Dir.Create(s.Name, s.Mode, t.Creds())
		if err == unix.EEXIST && s.Flags&unix.O_EXCL == 0 {
			// Another thread created it since the entry.
			d, err = s.Dir.Lookup(s.Name)
			return d, false, err
		}
		return d, err == nil, err
	}
	d = s.Found
	if s.Flags&unix.O_TRUNC != 0 && s.Flags&unix.O_PATH == 0 && d.Inode().Mode()&unix.S_IFMT == unix.S_IFREG {
		err = d.Inode().Truncate(0, t.Creds())
	}
	return d, false, err
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

// passCall is the handler of a call the sentry traps only to see a
// reissued instance of it (Task.ReissueObserved): the guest's own runs on
// the host.
func passCall(*sentry.Task, *platform.SyscallArgs) sentry.Result { return sentry.Pass() }
