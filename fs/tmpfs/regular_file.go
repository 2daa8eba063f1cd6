package tmpfs

import (
	"math"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// maxFileSize is s_maxbytes of tmpfs: MAX_LFS_FILESIZE on 64-bit.
const maxFileSize = math.MaxInt64

// The data operations below are the sentry's own access to a regular
// file's bytes (exec reads the head, truncate(2) and O_TRUNC, tests); the
// guest's reads and writes go to the backing directly (storage.go), so
// each of these is one host call on the backing and inherits its
// semantics: holes, relatime, the size limit (ENOSPC), st_blocks.

// dataOpCheck returns the error Linux gives for reading or writing an inode
// that is not a regular file.
func (i *inode) dataOpCheck() error {
	switch {
	case i.isRegular():
		return nil
	case i.isDir():
		return unix.EISDIR
	}
	return unix.EINVAL
}

// openData opens the backing for the sentry's own I/O.
func (i *inode) openData(flags int) (int, error) {
	if err := i.dataOpCheck(); err != nil {
		return -1, err
	}
	return i.fs.store.openFile(i.ino, flags)
}

// Size implements vfs.Inode.Size.
func (i *inode) Size() int64 {
	if i.isRegular() {
		var st unix.Stat_t
		if i.fs.store.statFile(i.ino, &st) != nil {
			return 0
		}
		return st.Size
	}
	i.mu.Lock()
	s := i.size
	i.mu.Unlock()
	return s
}

// ReadAt implements vfs.Inode.ReadAt: pread on the backing.
func (i *inode) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		if err := i.dataOpCheck(); err != nil {
			return 0, err
		}
		return 0, unix.EINVAL
	}
	fd, err := i.openData(unix.O_RDONLY)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	n := 0
	for n < len(p) {
		m, err := unix.Pread(fd, p[n:], off+int64(n))
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// WriteAt implements vfs.Inode.WriteAt: pwrite on the backing, after the
// privileges a writer without CAP_FSETID loses are dropped (the sentry
// writes with its own, so the host would keep them).
//
// Like pwrite, and unlike io.WriterAt, a write that stops early returns
// the bytes written and a nil error (the size limit reached after some
// bytes); ENOSPC or EFBIG come only when nothing could be written.
func (i *inode) WriteAt(p []byte, off int64, c *vfs.Credentials) (int, error) {
	if off < 0 {
		if err := i.dataOpCheck(); err != nil {
			return 0, err
		}
		return 0, unix.EINVAL
	}
	return i.write(p, off, false, c)
}

// Append implements vfs.Inode.Append: an O_APPEND write, whose end the
// host picks atomically.
func (i *inode) Append(p []byte, c *vfs.Credentials) (int, int64, error) {
	n, err := i.write(p, 0, true, c)
	if err != nil {
		return n, 0, err
	}
	return n, i.Size(), nil
}

func (i *inode) write(p []byte, off int64, appendMode bool, c *vfs.Credentials) (int, error) {
	flags := unix.O_WRONLY
	if appendMode {
		flags |= unix.O_APPEND
	}
	fd, err := i.openData(flags)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	// generic_write_checks: nothing happens for an empty write, not even
	// a timestamp update.
	if len(p) == 0 {
		return 0, nil
	}
	i.removePrivs(c)
	n := 0
	for n < len(p) {
		var m int
		if appendMode {
			m, err = unix.Write(fd, p[n:])
		} else {
			m, err = unix.Pwrite(fd, p[n:], off+int64(n))
		}
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// removePrivs is file_remove_privs for a writer (or truncater) with
// credentials c: unless the writer has CAP_FSETID (root), SUID is always
// dropped, and SGID when group-exec is set or the writer is not in the
// file's group (setattr_should_drop_sgid). The host drops them itself for
// the guest's own writes; this is for the sentry's (nil c: the sentry's own
// act, which keeps them).
func (i *inode) removePrivs(c *vfs.Credentials) {
	if c == nil || c.Capable(vfs.CapFsetid) {
		return
	}
	i.mu.Lock()
	i.reconcileModeLocked()
	mode := i.mode
	if mode&(unix.S_ISUID|unix.S_ISGID) == 0 {
		i.mu.Unlock()
		return
	}
	mode &^= unix.S_ISUID
	if mode&unix.S_ISGID != 0 && (mode&unix.S_IXGRP != 0 || !c.InGroupOrCapable(i.gid, i.uid, i.gid)) {
		mode &^= unix.S_ISGID
	}
	i.mode = mode
	i.mu.Unlock()
	i.fs.store.chmodFile(i.ino, mode)
}

// Truncate implements vfs.Inode.Truncate, as truncate(2): vfs_truncate ->
// do_truncate -> shmem_setattr, by a truncate of the backing by its name,
// which is that very path (no time attributes: the times stay when a size
// of 0 stays 0, as Linux's; no open of the backing, which an inotify watch
// of the file would see). A caller without CAP_FSETID loses SUID and SGID
// whether or not the size changes (do_truncate passes
// ATTR_KILL_SUID/SGID from dentry_needs_remove_privs).
func (i *inode) Truncate(size int64, c *vfs.Credentials) error {
	if err := i.truncateCheck(size); err != nil {
		return err
	}
	if err := i.fs.store.truncateFile(i.ino, size); err != nil {
		return err
	}
	i.removePrivs(c)
	return nil
}

// TruncateOpened implements vfs.Inode.TruncateOpened: O_TRUNC's handle_truncate,
// on the open's own placeholder fd, after the open (a watch sees the open,
// then the truncate, as Linux's; a watched directory sees it through the
// placeholder's name, OpenHostNamed): do_truncate with
// ATTR_MTIME|ATTR_CTIME, which moves both times even when the size does
// not change, as ftruncate of the placeholder does. A placeholder not
// open for writing (O_RDONLY|O_TRUNC) cannot be truncated: the backing
// is opened for it.
func (i *inode) TruncateOpened(fd int, c *vfs.Credentials) (bool, error) {
	if err := i.truncateCheck(0); err != nil {
		return false, err
	}
	through := true
	if err := unix.Ftruncate(fd, 0); err == unix.EINVAL || err == unix.EBADF {
		through = false
		wfd, err := i.openData(unix.O_WRONLY)
		if err != nil {
			return false, err
		}
		defer unix.Close(wfd)
		if err := unix.Ftruncate(wfd, 0); err != nil {
			return false, err
		}
	} else if err != nil {
		return false, err
	}
	i.removePrivs(c)
	return through, nil
}

// truncateCheck is do_truncate's refusals before a truncate to size: a
// directory EISDIR, another non-regular file or a negative size EINVAL,
// then the inode flags (dataOpCheck).
func (i *inode) truncateCheck(size int64) error {
	if i.isDir() {
		return unix.EISDIR
	}
	if !i.isRegular() || size < 0 {
		return unix.EINVAL
	}
	return i.dataOpCheck()
}
