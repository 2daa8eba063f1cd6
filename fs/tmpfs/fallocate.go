package tmpfs

import (
	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

var _ vfs.Allocator = (*inode)(nil)

// Allocate implements vfs.Allocator as shmem_fallocate without
// FALLOC_FL_PUNCH_HOLE: every page of [off, off+length) is allocated
// (zero-filled where it was a hole); the size grows to off+length unless
// keepSize, in which case pages past the end stay allocated (and count)
// until a truncate below them. A request the mount cannot hold fails with
// ENOSPC and allocates nothing, as shmem_fallocate undoes its partial
// work. mtime and ctime move (file_modified), privileges are dropped as
// for a write.
func (i *inode) Allocate(off, length int64, keepSize bool, c *vfs.Credentials) error {
	if !i.isRegular() {
		return unix.ENODEV
	}
	end := off + length
	if off < 0 || length <= 0 {
		return unix.EINVAL
	}
	if end < 0 || end > maxFileSize {
		return unix.EFBIG
	}
	first, last := off/pageSize, (end-1)/pageSize
	if max := i.fs.maxPages; max > 0 && last-first+1 > max {
		// shmem_fallocate's quick refusal of what can never fit.
		return unix.ENOSPC
	}
	now := nowNanos()
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.mapped {
		mode := uint32(0)
		if keepSize {
			mode = unix.FALLOC_FL_KEEP_SIZE
		}
		if err := i.allocateMappedLocked(mode, off, length); err != nil {
			return err
		}
		if !keepSize && end > i.size {
			i.size = end
		}
		i.removePrivsLocked(c)
		i.mtime, i.ctime = now, now
		return nil
	}
	var added []int64
	for idx := first; idx <= last; idx++ {
		if i.pages[idx] != nil {
			continue
		}
		if !i.fs.reservePage() {
			for _, a := range added {
				delete(i.pages, a)
			}
			i.fs.unreservePages(int64(len(added)))
			return unix.ENOSPC
		}
		if i.pages == nil {
			i.pages = make(map[int64]*page)
		}
		i.pages[idx] = new(page)
		added = append(added, idx)
	}
	if !keepSize && end > i.size {
		i.size = end
	}
	if last+1 > i.allocEnd {
		i.allocEnd = last + 1
	}
	i.removePrivsLocked(c)
	i.mtime, i.ctime = now, now
	return nil
}

// PunchHole implements vfs.Allocator as shmem_fallocate with
// FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE (shmem_truncate_range): the
// range reads as zeros, whole pages in it are freed, the size stays.
func (i *inode) PunchHole(off, length int64, c *vfs.Credentials) error {
	if !i.isRegular() {
		return unix.ENODEV
	}
	if off < 0 || length <= 0 {
		return unix.EINVAL
	}
	end := off + length
	if end < 0 || end > maxFileSize {
		return unix.EFBIG
	}
	now := nowNanos()
	i.mu.Lock()
	if i.mapped {
		if err := i.allocateMappedLocked(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, length); err != nil {
			i.mu.Unlock()
			return err
		}
	}
	var freed int64
	for idx, pg := range i.pages {
		pStart, pEnd := idx*pageSize, (idx+1)*pageSize
		if pEnd <= off || pStart >= end {
			continue
		}
		if pStart >= off && pEnd <= end {
			delete(i.pages, idx)
			freed++
			continue
		}
		lo, hi := max(off, pStart)-pStart, min(end, pEnd)-pStart
		clear(pg[lo:hi])
	}
	i.removePrivsLocked(c)
	i.mtime, i.ctime = now, now
	i.mu.Unlock()
	i.fs.unreservePages(freed)
	return nil
}

// allocateMappedLocked is fallocate on a mapped inode's shadow: the host's
// shmem_fallocate does the work (all or nothing); with a size limit, the
// pages the range spans must fit first. i.mu must be held.
func (i *inode) allocateMappedLocked(mode uint32, off, length int64) error {
	var need int64
	if i.fs.maxPages > 0 && mode&unix.FALLOC_FL_PUNCH_HOLE == 0 {
		need = pagesFor(off+length) - off/pageSize
		if !i.fs.reservePages(need) {
			return unix.ENOSPC
		}
	}
	err := unix.Fallocate(i.mfd, mode, off, length)
	i.fs.unreservePages(need)
	i.reconcileLocked()
	return err
}
