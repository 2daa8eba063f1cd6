package tmpfs

import (
	"math"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// maxFileSize is s_maxbytes of tmpfs: MAX_LFS_FILESIZE on 64-bit.
const maxFileSize = math.MaxInt64

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

// Size implements vfs.Inode.Size.
func (i *inode) Size() int64 {
	i.mu.Lock()
	s := i.size
	i.mu.Unlock()
	return s
}

// ReadAt implements vfs.Inode.ReadAt, as shmem_file_read_iter: holes read
// as zeros without allocating, and the access time is touched (relatime)
// even for empty reads and reads past EOF, as file_accessed is.
func (i *inode) ReadAt(p []byte, off int64) (int, error) {
	if err := i.dataOpCheck(); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, unix.EINVAL
	}
	now := nowNanos()
	i.mu.Lock()
	defer i.mu.Unlock()
	n := 0
	if off < i.size && i.mapped {
		n = i.readMappedLocked(p[:min(int64(len(p)), i.size-off)], off)
	} else if off < i.size {
		want := min(int64(len(p)), i.size-off)
		for int64(n) < want {
			pos := off + int64(n)
			idx, pgoff := pos/pageSize, pos%pageSize
			chunk := p[n:want]
			if len(chunk) > int(pageSize-pgoff) {
				chunk = chunk[:pageSize-pgoff]
			}
			if pg := i.pages[idx]; pg != nil {
				copy(chunk, pg[pgoff:])
			} else {
				clear(chunk)
			}
			n += len(chunk)
		}
	}
	i.touchAtimeLocked(now)
	return n, nil
}

// WriteAt implements vfs.Inode.WriteAt, as shmem_file_write_iter.
//
// Like pwrite, and unlike io.WriterAt, a write that stops early returns the
// bytes written and a nil error: when the size limit is reached after some
// pages were written (generic_perform_write), or when the write would pass
// the maximum file size (generic_write_check_limits shortens it). ENOSPC
// or EFBIG is returned only when nothing could be written. As in Linux, the
// file's privileges are removed and mtime/ctime updated before the data is
// copied, so a write failing with ENOSPC still changes them.
func (i *inode) WriteAt(p []byte, off int64, c *vfs.Credentials) (int, error) {
	if err := i.dataOpCheck(); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, unix.EINVAL
	}
	i.mu.Lock()
	n, err := i.writeLocked(p, off, c)
	i.mu.Unlock()
	return n, err
}

// Append implements vfs.Inode.Append: the end offset is read and written
// under the inode lock, as O_APPEND does under i_rwsem.
func (i *inode) Append(p []byte, c *vfs.Credentials) (int, int64, error) {
	if err := i.dataOpCheck(); err != nil {
		return 0, 0, err
	}
	i.mu.Lock()
	off := i.size
	n, err := i.writeLocked(p, off, c)
	i.mu.Unlock()
	return n, off + int64(n), err
}

// writeLocked writes p at off. i.mu must be held.
func (i *inode) writeLocked(p []byte, off int64, c *vfs.Credentials) (int, error) {
	// generic_write_checks: nothing happens for an empty write, not even
	// a timestamp update.
	if len(p) == 0 {
		return 0, nil
	}
	if off >= maxFileSize {
		return 0, unix.EFBIG
	}
	if int64(len(p)) > maxFileSize-off {
		p = p[:maxFileSize-off]
	}
	now := nowNanos()
	i.removePrivsLocked(c)
	i.mtime, i.ctime = now, now // file_update_time

	if i.mapped {
		n, err := i.writeMappedLocked(p, off)
		if end := off + int64(n); n > 0 && end > i.size {
			i.size = end
		}
		return n, err
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		idx, pgoff := pos/pageSize, pos%pageSize
		pg := i.pages[idx]
		if pg == nil {
			if !i.fs.reservePage() {
				break
			}
			pg = new(page)
			if i.pages == nil {
				i.pages = make(map[int64]*page)
			}
			i.pages[idx] = pg
		}
		n += copy(pg[pgoff:], p[n:])
	}
	if n == 0 {
		return 0, unix.ENOSPC
	}
	if end := off + int64(n); end > i.size {
		i.size = end
	}
	return n, nil
}

// removePrivsLocked is file_remove_privs for a writer with credentials c:
// unless the writer has CAP_FSETID (root), SUID is always dropped, and SGID
// when group-exec is set or the writer is not in the file's group
// (setattr_should_drop_sgid). Dropping them changes ctime, which the write
// does anyway. i.mu must be held.
func (i *inode) removePrivsLocked(c *vfs.Credentials) {
	if c == nil || c.Capable(vfs.CapFsetid) || i.mode&(unix.S_ISUID|unix.S_ISGID) == 0 {
		return
	}
	i.mode &^= unix.S_ISUID
	if i.mode&unix.S_ISGID != 0 && (i.mode&unix.S_IXGRP != 0 || !c.InGroupOrCapable(i.gid, i.uid, i.gid)) {
		i.mode &^= unix.S_ISGID
	}
}

// Truncate implements vfs.Inode.Truncate, as do_truncate -> shmem_setattr.
//
// On Linux 6.18 tmpfs, truncate(2), ftruncate(2) and O_TRUNC all update
// mtime and ctime even when the size does not change (verified against
// /dev/shm; ftruncate and O_TRUNC pass ATTR_MTIME|ATTR_CTIME and the
// multigrain setattr path stamps them), so fromOpen makes no difference
// here. A caller without CAP_FSETID loses SUID and SGID whether or not
// the size changes (do_truncate passes ATTR_KILL_SUID/SGID from
// dentry_needs_remove_privs). Growing a file only moves i_size: pages are allocated when written,
// so, as in Linux, a truncate past the size limit succeeds. Shrinking frees
// the pages past the new size and zeroes the tail of a partial last page
// (shmem_truncate_range), so growing again reads zeros.
func (i *inode) Truncate(size int64, c *vfs.Credentials) error {
	if i.isDir() {
		return unix.EISDIR
	}
	if !i.isRegular() || size < 0 {
		return unix.EINVAL
	}
	now := nowNanos()
	i.mu.Lock()
	var freed int64
	if i.mapped {
		if err := unix.Ftruncate(i.mfd, size); err != nil {
			i.mu.Unlock()
			return err
		}
		i.reconcileLocked()
	} else if size <= i.size {
		// shmem_setattr truncates everything past a size that does not
		// grow, pages fallocate kept past the end included.
		freed = i.truncatePagesLocked(size)
		i.allocEnd = 0
	}
	i.size = size
	i.mtime, i.ctime = now, now
	i.removePrivsLocked(c)
	i.mu.Unlock()
	i.fs.unreservePages(freed)
	return nil
}

// pagesFor is the number of pages that size bytes span, without the
// overflow of rounding up near math.MaxInt64.
func pagesFor(size int64) int64 {
	n := size / pageSize
	if size%pageSize != 0 {
		n++
	}
	return n
}

// truncatePagesLocked drops the pages wholly past size, zeroes the rest of
// the page holding size, and returns the number of pages dropped. i.mu must
// be held.
func (i *inode) truncatePagesLocked(size int64) int64 {
	if len(i.pages) == 0 {
		return 0
	}
	if size == 0 {
		n := int64(len(i.pages))
		i.pages = nil // return the map's memory too
		return n
	}
	keep := pagesFor(size)
	var n int64
	for idx := range i.pages {
		if idx >= keep {
			delete(i.pages, idx)
			n++
		}
	}
	if pgoff := size % pageSize; pgoff != 0 {
		if pg := i.pages[size/pageSize]; pg != nil {
			clear(pg[pgoff:])
		}
	}
	return n
}
