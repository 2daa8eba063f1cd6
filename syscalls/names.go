package syscalls

import (
	"encoding/binary"
	"os"
	pathpkg "path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Getdents64 is getdents64(fd, dirp, count), as iterate_dir with
// dcache_readdir: entries from the description's position, each a
// struct linux_dirent64 padded to 8 bytes; EINVAL if not even the first
// fits.
func Getdents64(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return getdents(c, args, false)
}

// Getdents is the legacy getdents(fd, dirp, count) that x86-64 still
// has: the same entries as struct linux_dirent (filldir).
func Getdents(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return getdents(c, args, true)
}

// putDirent writes one record into e (its reclen bytes; nil only measures
// it). struct linux_dirent64 has d_type at byte 18 and the name after it;
// the legacy struct linux_dirent has the name at byte 18 and d_type in the
// record's last byte, after the name's NUL (filldir's
// ALIGN(offsetof(d_name) + namlen + 2, sizeof(long))).
func putDirent(e []byte, legacy bool, ino uint64, next int64, typ uint8, name string) int {
	nameAt := 19
	if legacy {
		nameAt = 18
	}
	reclen := (nameAt + len(name) + 1 + 7) &^ 7
	if legacy {
		reclen = (nameAt + len(name) + 2 + 7) &^ 7
	}
	if e == nil {
		return reclen
	}
	binary.LittleEndian.PutUint64(e[0:], ino)
	binary.LittleEndian.PutUint64(e[8:], uint64(next))
	binary.LittleEndian.PutUint16(e[16:], uint16(reclen))
	copy(e[nameAt:], name)
	clear(e[nameAt+len(name):])
	if legacy {
		e[reclen-1] = typ
	} else {
		e[18] = typ
	}
	return reclen
}

func getdents(c *sentry.Call, args *platform.SyscallArgs, legacy bool) sentry.Result {
	f, res, ok := fileFor(c, int32(args[0]))
	if !ok {
		return res
	}
	defer f.DecRef()
	if f.Inode.Mode()&unix.S_IFMT != unix.S_IFDIR {
		return sentry.Err(unix.ENOTDIR)
	}
	count := int(args[2])
	if int(args[2]) < 0 || args[2] > 1<<30 {
		count = 1 << 30
	}
	f.Lock()
	defer f.Unlock()
	buf := c.IOBuf(count)
	n := 0
	off := f.Offset()
	full := false
	err := f.Dentry.IterDirents(off, func(ino uint64, next int64, typ uint8, name string) bool {
		reclen := putDirent(nil, legacy, ino, next, typ, name)
		if n+reclen > len(buf) {
			full = true
			return false
		}
		putDirent(buf[n:n+reclen], legacy, ino, next, typ, name)
		n += reclen
		off = next
		return true
	})
	// iterate_dir: fsnotify_access, whatever the outcome.
	notifyChild(f.Dentry, vfs.DNAccess)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if n == 0 && full {
		return sentry.Err(unix.EINVAL)
	}
	if err := c.CopyOut(args[1], buf[:n]); err != nil {
		// filldir64 copies one record at a time and stops at the first
		// that faults; getdents64 then returns the records before it (and
		// the position after them) if there are any, EFAULT only if the
		// first faulted. The records' d_off is already their next
		// position.
		done, last := 0, -1
		for done < n {
			reclen := int(binary.LittleEndian.Uint16(buf[done+16:]))
			if c.CopyOut(args[1]+uintptr(done), buf[done:done+reclen]) != nil {
				break
			}
			last, done = done, done+reclen
		}
		if last < 0 {
			return sentry.Err(unix.EFAULT)
		}
		f.SetOffset(int64(binary.LittleEndian.Uint64(buf[last+8:])))
		return sentry.Ret(int64(done))
	}
	f.SetOffset(off)
	return sentry.Ret(int64(n))
}

// Symlink is symlink(target, linkpath).
func Symlink(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return symlinkat(c, args[0], unix.AT_FDCWD, args[1])
}

// Symlinkat is symlinkat(target, newdirfd, linkpath).
func Symlinkat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return symlinkat(c, args[0], int32(args[1]), args[2])
}

// symlinkat is do_symlinkat: the target is copied first (ENOENT if empty),
// then the new name's parent is walked.
func symlinkat(c *sentry.Call, targetAddr uintptr, dirfd int32, pathAddr uintptr) sentry.Result {
	target, err := c.ReadPath(targetAddr)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if len(target) == 0 {
		return sentry.Err(unix.ENOENT)
	}
	tgt := string(target)
	r, err := resolveAt(c, dirfd, pathAddr, false, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	if r.Dentry != nil || r.Parent == nil {
		return sentry.Err(unix.EEXIST)
	}
	if r.TrailingSlash {
		return sentry.Err(unix.ENOENT)
	}
	if err := mntWantWrite(r.Parent.Inode()); err != nil {
		return sentry.ErrOf(err)
	}
	_, err = r.Parent.Symlink(r.Name, tgt, c.Creds())
	return retErr(err)
}

// Readlink is readlink(path, buf, size).
func Readlink(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return readlinkat(c, unix.AT_FDCWD, args[0], args[1], int64(args[2]))
}

// Readlinkat is readlinkat(dirfd, path, buf, size).
func Readlinkat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return readlinkat(c, int32(args[0]), args[1], args[2], int64(args[3]))
}

// readlinkat is do_readlinkat: EINVAL for size <= 0 or a non-symlink; the
// target is truncated to size, without a NUL.
func readlinkat(c *sentry.Call, dirfd int32, pathAddr, buf uintptr, size int64) sentry.Result {
	if int32(size) <= 0 {
		return sentry.Err(unix.EINVAL)
	}
	r, err := resolveAt(c, dirfd, pathAddr, false, true)
	switch {
	case err == nil && r.Link.Mount != nil:
		target, err := procLinkTarget(c, r.Link)
		if err != nil {
			return sentry.ErrOf(err)
		}
		return copyLink(c, target, buf, size)
	case err == nil && r.LinkText != "":
		// /proc/self names the guest, not the sentry that may read it
		// for the guest (readlinkHost).
		return copyLink(c, []byte(r.LinkText), buf, size)
	}
	d, res, ok := existing(r, err)
	if !ok {
		return res
	}
	target, err := d.Inode().Readlink()
	if err == unix.EINVAL && r.pathLen == 0 {
		// do_readlinkat: an empty path names dirfd itself, which is no
		// symlink: ENOENT, not EINVAL.
		return sentry.Err(unix.ENOENT)
	}
	if err != nil {
		return sentry.ErrOf(err)
	}
	return copyLink(c, []byte(target), buf, size)
}

// copyLink copies a link target out, truncated to size, without a NUL.
func copyLink(c *sentry.Call, target []byte, buf uintptr, size int64) sentry.Result {
	if int64(len(target)) > int64(int32(size)) {
		target = target[:int32(size)]
	}
	if err := c.CopyOut(buf, []byte(target)); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	return sentry.Ret(int64(len(target)))
}

// procLinkTarget is what the guest reads from a magic link of /proc that
// leads to a sentry file (/proc/self/fd/N of a virtual fd, /proc/self/cwd
// in a sentry directory): the file's path in the guest's tree, with
// " (deleted)" once unlinked, as proc_fd_link and d_path show it (not the
// placeholder's "/memfd:"). As do_proc_readlink's d_path, it is built
// into one PATH_MAX buffer with its NUL: ENAMETOOLONG if it does not fit
// (never a truncated path). The bytes are the task's I/O buffer.
func procLinkTarget(c *sentry.Call, l vfs.Location) ([]byte, error) {
	const deleted = " (deleted)"
	b := c.IOBuf(vfs.PathMax)
	end := len(b) - 1 // the NUL
	st := c.StatBuf()
	if l.Dentry.Inode().Stat(st); st.Nlink == 0 {
		end -= len(deleted)
		copy(b[end:], deleted)
	}
	i, err := vfs.PrependPath(b[:end], l.Mount, l.Dentry)
	if err != nil {
		return nil, err
	}
	return b[i : len(b)-1], nil
}

// Link is link(old, new).
func Link(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return linkat(c, unix.AT_FDCWD, args[0], unix.AT_FDCWD, args[1], 0)
}

// Linkat is linkat(olddirfd, old, newdirfd, new, flags).
func Linkat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	flags := uint32(args[4])
	if flags&^(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return sentry.Err(unix.EINVAL)
	}
	return linkat(c, int32(args[0]), args[1], int32(args[2]), args[3], flags)
}

// linkat is do_linkat: the old name is looked up first, then the new
// one is made ready (filename_create: EEXIST for an existing name), and
// only then is a link across mounts (the host included) EXDEV; EPERM for
// directories. When one name is the host's, the sentry finds the host's
// errors for it (hostLookupErr, hostCreateErr) to give them in that order.
func linkat(c *sentry.Call, olddir int32, oldAddr uintptr, newdir int32, newAddr uintptr, flags uint32) sentry.Result {
	follow := flags&unix.AT_SYMLINK_FOLLOW != 0
	o, err := resolveAt(c, olddir, oldAddr, follow, flags&unix.AT_EMPTY_PATH != 0)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if o.file != nil {
		defer o.file.DecRef()
		o.Dentry = o.file.Dentry
	}
	n, nerr := resolveAt(c, newdir, newAddr, false, false)
	if o.host && n.host && nerr == nil {
		return sentry.Pass()
	}
	if o.host {
		if err := hostLookupErr(c, olddir, o, follow); err != nil {
			return sentry.ErrOf(err)
		}
	} else if o.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	if nerr != nil {
		return sentry.ErrOf(nerr)
	}
	if n.host {
		if err := hostCreateErr(c, newdir, n); err != nil {
			return sentry.ErrOf(err)
		}
		return sentry.Err(unix.EXDEV)
	}
	if n.Dentry != nil || n.Parent == nil {
		return sentry.Err(unix.EEXIST)
	}
	if n.TrailingSlash {
		// filename_create: a missing name with a trailing slash asks
		// for a directory, which a link never makes.
		return sentry.Err(unix.ENOENT)
	}
	// filename_create reports EROFS after the name's own errors, and
	// do_linkat compares the mounts after that.
	if err := mntWantWrite(n.Parent.Inode()); err != nil {
		return sentry.ErrOf(err)
	}
	if o.host || o.Mount != lookupMount(n) {
		return sentry.Err(unix.EXDEV)
	}
	if o.Dentry.Inode().Mode()&unix.S_IFMT == unix.S_IFDIR {
		return sentry.Err(unix.EPERM)
	}
	_, err = n.Parent.Link(n.Name, o.Dentry, c.Creds())
	return retErr(err)
}

// hostLookupErr is the error the host kernel's lookup of r, a host path
// the guest named relative to dirfd, gives the guest (filename_lookup),
// when the sentry must report it before an error of its own: the host
// error the walk met, the dirfd's, or the guest's own stat of the path.
func hostLookupErr(c *sentry.Call, dirfd int32, r resolved, follow bool) error {
	switch {
	case r.badDirfd:
		return hostDirfdErr(c, dirfd)
	case r.hostErr != nil:
		return r.hostErr
	case r.pathLen == 0:
		// AT_EMPTY_PATH of one of the guest's host descriptors.
		if err := hostDirfdErr(c, dirfd); err == unix.EBADF {
			return err
		}
		return nil
	}
	p := r.Host
	if r.TrailingSlash && p != "/" {
		p += "/"
	}
	fl := 0
	if !follow {
		fl = unix.AT_SYMLINK_NOFOLLOW
	}
	return guestCaller{c}.AsCaller(func() error {
		var st unix.Stat_t
		return unix.Fstatat(unix.AT_FDCWD, p, &st, fl)
	})
}

// hostParentErr is the error the lookup of the directory of r, a host
// path relative to dirfd, gives the guest (filename_parentat): the
// dirfd's, the host error the walk met, or the guest's own stat of the
// directory and search permission in it (the walk of a host path need
// not have looked it up: only the host knows whether it exists).
func hostParentErr(c *sentry.Call, dirfd int32, r resolved) error {
	switch {
	case r.badDirfd:
		return hostDirfdErr(c, dirfd)
	case r.hostErr != nil:
		return r.hostErr
	case r.Host == "" || r.Host == "/":
		return nil
	}
	dir := pathpkg.Dir(r.Host)
	return guestCaller{c}.AsCaller(func() error {
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return unix.ENOTDIR
		}
		// link_path_walk's may_lookup on the directory itself.
		return unix.Faccessat2(unix.AT_FDCWD, dir, unix.X_OK, unix.AT_EACCESS)
	})
}

// hostCreateErr is the error filename_create gives r, a host path the
// guest named for a new file relative to dirfd, before a link to it from
// another mount fails with EXDEV: the lookup of its directory (the walk
// made it as the guest), EEXIST for a name that exists or ends in "." or
// "..", ENOENT for a missing one with a trailing slash, EROFS. The last
// component is looked up without a permission check, as
// lookup_one_qstr_excl does.
func hostCreateErr(c *sentry.Call, dirfd int32, r resolved) error {
	if err := hostParentErr(c, dirfd, r); err != nil {
		return err
	}
	switch {
	case r.Name == "." || r.Name == ".." || r.Host == "/":
		return unix.EEXIST
	}
	var st unix.Stat_t
	switch err := unix.Lstat(r.Host, &st); {
	case err == nil:
		return unix.EEXIST
	case err != unix.ENOENT:
		return err
	case r.TrailingSlash:
		return unix.ENOENT
	}
	var fs unix.Statfs_t
	if unix.Statfs(pathpkg.Dir(r.Host), &fs) == nil && fs.Flags&unix.ST_RDONLY != 0 {
		return unix.EROFS
	}
	return nil
}

// Rename is rename(old, new).
func Rename(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return renameat(c, unix.AT_FDCWD, args[0], unix.AT_FDCWD, args[1], 0)
}

// Renameat is renameat(olddirfd, old, newdirfd, new).
func Renameat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return renameat(c, int32(args[0]), args[1], int32(args[2]), args[3], 0)
}

// Renameat2 is renameat2(olddirfd, old, newdirfd, new, flags).
func Renameat2(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return renameat(c, int32(args[0]), args[1], int32(args[2]), args[3], uint32(args[4]))
}

// renameat is do_renameat2: flag checks first, EXDEV across mounts (the
// host included), "." and ".." refused, the rest is the file system's.
func renameat(c *sentry.Call, olddir int32, oldAddr uintptr, newdir int32, newAddr uintptr, flags uint32) sentry.Result {
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE|unix.RENAME_WHITEOUT) != 0 ||
		flags&(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) == unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE ||
		flags&(unix.RENAME_WHITEOUT|unix.RENAME_EXCHANGE) == unix.RENAME_WHITEOUT|unix.RENAME_EXCHANGE {
		return sentry.Err(unix.EINVAL)
	}
	o, err := resolveAt(c, olddir, oldAddr, false, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	n, nerr := resolveAt(c, newdir, newAddr, false, false)
	if o.host && n.host && nerr == nil {
		return sentry.Pass()
	}
	// Both directories are looked up before the mounts are compared
	// (filename_parentat twice, then EXDEV).
	if o.host {
		if err := hostParentErr(c, olddir, o); err != nil {
			return sentry.ErrOf(err)
		}
	}
	if nerr != nil {
		return sentry.ErrOf(nerr)
	}
	if n.host {
		if err := hostParentErr(c, newdir, n); err != nil {
			return sentry.ErrOf(err)
		}
	}
	if o.host != n.host || lookupMount(o) != lookupMount(n) {
		return sentry.Err(unix.EXDEV)
	}
	if flags&unix.RENAME_WHITEOUT != 0 {
		return sentry.Err(unix.EINVAL)
	}
	if o.Name == "" || o.Name == "." || o.Name == ".." || n.Name == "" || n.Name == "." || n.Name == ".." {
		return sentry.Err(unix.EBUSY)
	}
	if err := mntWantWrite(o.Parent.Inode()); err != nil {
		return sentry.ErrOf(err)
	}
	if o.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	if flags&unix.RENAME_EXCHANGE != 0 && n.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	isDir := func(d vfs.Dentry) bool { return d != nil && d.Inode().Mode()&unix.S_IFMT == unix.S_IFDIR }
	if (o.TrailingSlash || n.TrailingSlash) && !isDir(o.Dentry) {
		return sentry.Err(unix.ENOTDIR)
	}
	return retErr(o.Parent.Rename(o.Name, n.Parent, n.Name, flags, c.Creds()))
}

// Access is access(path, mode).
func Access(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return faccessat(c, unix.AT_FDCWD, args[0], uint32(args[1]), 0)
}

// Faccessat is faccessat(dirfd, path, mode).
func Faccessat(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return faccessat(c, int32(args[0]), args[1], uint32(args[2]), 0)
}

// Faccessat2 is faccessat2(dirfd, path, mode, flags).
func Faccessat2(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	return faccessat(c, int32(args[0]), args[1], uint32(args[2]), uint32(args[3]))
}

// faccessat is do_faccessat: EINVAL for unknown mode or flag bits; the
// check uses the caller's credentials (the sentry models one identity, so
// real and effective ids agree).
func faccessat(c *sentry.Call, dirfd int32, pathAddr uintptr, mode, flags uint32) sentry.Result {
	if mode&^7 != 0 || flags&^(unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return sentry.Err(unix.EINVAL)
	}
	d, res, ok := existing(resolveAt(c, dirfd, pathAddr, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0))
	if !ok {
		return res
	}
	if mode == 0 {
		return sentry.Ret(0)
	}
	return retErr(d.Inode().CheckPermission(c.Creds(), mode))
}

// Truncate is truncate(path, length), as do_sys_truncate: EINVAL for a
// negative length, EISDIR for a directory, write permission needed.
func Truncate(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	length := int64(args[1])
	if length < 0 {
		return sentry.Err(unix.EINVAL)
	}
	r, err := resolveAt(c, unix.AT_FDCWD, args[0], true, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	if r.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	ino := r.Dentry.Inode()
	switch ino.Mode() & unix.S_IFMT {
	case unix.S_IFDIR:
		return sentry.Err(unix.EISDIR)
	case unix.S_IFREG:
	default:
		return sentry.Err(unix.EINVAL)
	}
	if err := mntWantWrite(ino); err != nil {
		return sentry.ErrOf(err)
	}
	if err := ino.CheckPermission(c.Creds(), vfs.MayWrite); err != nil {
		return sentry.ErrOf(err)
	}
	if fl, ok := ino.(vfs.FlagsInode); ok && fl.FSFlags()&vfs.FlagAppend != 0 {
		// vfs_truncate: IS_APPEND.
		return sentry.Err(unix.EPERM)
	}
	if length > ino.Size() {
		// inode_newsize_ok: growing past RLIMIT_FSIZE is EFBIG and
		// SIGXFSZ (the sentry truncates, the guest's limit applies).
		if lim, ok := fsizeLimit(c); ok && uint64(length) > lim {
			unix.Tgkill(int(c.TG.TGID), int(c.TID), unix.SIGXFSZ)
			return sentry.Err(unix.EFBIG)
		}
	}
	if err := ino.Truncate(length, c.Creds()); err != nil {
		return sentry.ErrOf(err)
	}
	notifyChild(r.Dentry, vfs.DNModify)
	return sentry.Ret(0)
}

// fsizeLimit is the guest's RLIMIT_FSIZE soft limit; ok is false when it
// is unlimited. prlimit needs CAP_SYS_RESOURCE for another user's process,
// which a sentry in a container may lack: /proc/PID/limits, which anyone
// may read, says the same.
func fsizeLimit(c *sentry.Call) (uint64, bool) {
	var lim unix.Rlimit
	if err := unix.Prlimit(int(c.TG.TGID), unix.RLIMIT_FSIZE, nil, &lim); err == nil {
		return lim.Cur, lim.Cur != unix.RLIM_INFINITY
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(c.TG.TGID)) + "/limits")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, found := strings.CutPrefix(line, "Max file size"); found {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			v, err := strconv.ParseUint(f[0], 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}
