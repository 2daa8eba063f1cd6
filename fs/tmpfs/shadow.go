package tmpfs

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

// Shadows: the guest's descriptor for a regular file is an open of a host
// file standing for the inode (its shadow), so that the host kernel can map
// it. The data stays in the file system's pages until a guest maps the
// file; from then on the inode is "mapped": the shadow holds the data, and
// the guest's mappings, the sentry's reads and writes and every later
// mapping share the host's pages, as Linux's page cache makes read, write
// and mmap of one file coherent. The shadows live in Options.ShadowDir,
// which should be on a host tmpfs: st_blocks and holes of a mapped file
// then follow the host's shmem exactly.

var _ vfs.Shadowed = (*inode)(nil)

// shadowName is the next shadow file's path: a random prefix per file
// system (the directory is searchable but not listable, so no other host
// user can find the files) and a sequence number.
func (fs *Filesystem) shadowName() string {
	return filepath.Join(fs.opts.ShadowDir, fs.shadowPrefix+"-"+strconv.FormatUint(fs.shadowSeq.Add(1), 10))
}

// newShadowPrefix is a file system's random shadow name prefix.
func newShadowPrefix() string {
	var secret [8]byte
	rand.Read(secret[:])
	return hex.EncodeToString(secret[:])
}

// NewShadow implements vfs.ShadowMaker: an empty shadow for a regular file
// about to be created, which AdoptShadow then gives to it (the guest's
// descriptor exists before the file, as get_unused_fd_flags runs before
// the create). Any guest user may open it: the sentry checked the open
// against the inode first.
func (fs *Filesystem) NewShadow() (string, error) {
	if fs.opts.ShadowDir == "" {
		return "", nil
	}
	p := fs.shadowName()
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o666)
	if err != nil {
		return "", err
	}
	err = unix.Fchmod(fd, 0o666) // not the sentry's umask
	unix.Close(fd)
	if err != nil {
		unix.Unlink(p)
		return "", err
	}
	return p, nil
}

// AnonShadow implements vfs.ShadowMaker: one empty host file, readable by
// all, that the placeholders of the file system's other files (directories,
// O_PATH opens) open. An open of an existing file is cheaper than a memfd
// each: here memfd_create and its close cost 3.9 us, an open and close
// 1.6 us.
func (fs *Filesystem) AnonShadow() string {
	if fs.opts.ShadowDir == "" {
		return ""
	}
	fs.anonOnce.Do(func() {
		p := filepath.Join(fs.opts.ShadowDir, fs.shadowPrefix+"-anon")
		fd, err := unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o444)
		if err != nil {
			return
		}
		err = unix.Fchmod(fd, 0o444)
		unix.Close(fd)
		if err == nil {
			fs.anonPath = p
		}
	})
	return fs.anonPath
}

// DropShadow implements vfs.ShadowMaker: a shadow NewShadow made that no
// inode adopted.
func (fs *Filesystem) DropShadow(path string) {
	if path != "" {
		unix.Unlink(path)
	}
}

// AdoptShadow implements vfs.Shadowed.
func (i *inode) AdoptShadow(path string) bool {
	if path == "" || !i.isRegular() {
		return false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.shadow != "" {
		return false
	}
	i.shadow = path
	i.hasShadow.Store(true)
	return true
}

// ShadowPath implements vfs.Shadowed.
func (i *inode) ShadowPath(create bool) (string, error) {
	if !i.isRegular() {
		return "", nil
	}
	i.mu.Lock()
	p := i.shadow
	i.mu.Unlock()
	if p != "" || !create {
		return p, nil
	}
	p, err := i.fs.NewShadow()
	if err != nil || p == "" {
		return "", err
	}
	if !i.AdoptShadow(p) {
		// Another open made one meanwhile.
		i.fs.DropShadow(p)
		i.mu.Lock()
		p = i.shadow
		i.mu.Unlock()
	}
	return p, nil
}

// Map implements vfs.Shadowed: the data moves into the shadow, which the
// sentry keeps open to read and write it from then on.
func (i *inode) Map() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.mapped {
		return nil
	}
	if i.shadow == "" {
		return unix.ENODEV
	}
	fd, err := unix.Open(i.shadow, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	if err := unix.Ftruncate(fd, i.size); err != nil {
		unix.Close(fd)
		return err
	}
	for idx, pg := range i.pages {
		n := min(int64(pageSize), i.size-idx*pageSize)
		if n <= 0 {
			continue
		}
		if _, err := unix.Pwrite(fd, pg[:n], idx*pageSize); err != nil {
			unix.Ftruncate(fd, 0)
			unix.Close(fd)
			return err
		}
	}
	i.mapped, i.mfd = true, fd
	i.mappedPages = int64(len(i.pages))
	i.pages = nil
	i.reconcileLocked()
	return nil
}

// reconcileLocked makes the mount's page count hold what the shadow of a
// mapped inode has allocated (the host's st_blocks), pages a guest wrote
// through a mapping included. i.mu must be held.
func (i *inode) reconcileLocked() {
	var st unix.Stat_t
	if unix.Fstat(i.mfd, &st) != nil {
		return
	}
	pages := st.Blocks / (pageSize / 512)
	if d := pages - i.mappedPages; d > 0 {
		i.fs.usedPages.Add(d)
	} else {
		i.fs.unreservePages(-d)
	}
	i.mappedPages = pages
}

// releaseShadowLocked closes and removes the shadow of an inode being
// freed and returns the pages it held. A guest mapping keeps the host's
// pages, as the vma keeps Linux's file. i.mu must be held.
func (i *inode) releaseShadowLocked() int64 {
	n := int64(0)
	if i.mapped {
		unix.Close(i.mfd)
		i.mapped, i.mfd = false, -1
		n, i.mappedPages = i.mappedPages, 0
	}
	if i.shadow != "" {
		unix.Unlink(i.shadow)
		i.shadow = ""
		i.hasShadow.Store(false)
	}
	return n
}

// defaultMaxIdleShadows is Options.MaxIdleShadows's default: each shadow
// costs the host about 610 bytes of slab (an inode and a dentry of its
// tmpfs; 12.2 MB measured for 20,000), so a tree of a million files
// closed again must not keep a million of them.
const defaultMaxIdleShadows = 4096

// idleShadow puts i, whose last open description is gone while it keeps
// a name and a shadow, at the end of the idle list, and removes the
// shadows of the least recently closed beyond the bound: a later open of
// one makes a new shadow. A mapped inode's shadow holds its data and
// stays. An open racing with the removal (between picking the shadow and
// the guest's open of it) falls back to a memfd placeholder (open.go).
func (fs *Filesystem) idleShadow(i *inode) {
	var evict []*inode
	fs.idleMu.Lock()
	if !i.idle.Load() && i.refs.Load() == 0 {
		i.idlePrev, i.idleNext = fs.idleTail, nil
		if fs.idleTail != nil {
			fs.idleTail.idleNext = i
		} else {
			fs.idleHead = i
		}
		fs.idleTail = i
		fs.idleLen++
		i.idle.Store(true)
	}
	for fs.idleLen > fs.idleMax {
		h := fs.idleHead
		fs.unidleLocked(h)
		evict = append(evict, h)
	}
	fs.idleMu.Unlock()
	for _, v := range evict {
		v.mu.Lock()
		if v.refs.Load() == 0 && !v.mapped && v.shadow != "" {
			unix.Unlink(v.shadow)
			v.shadow = ""
			v.hasShadow.Store(false)
		}
		v.mu.Unlock()
	}
}

// unidle takes i off the idle list: opened again, or freed.
func (fs *Filesystem) unidle(i *inode) {
	fs.idleMu.Lock()
	if i.idle.Load() {
		fs.unidleLocked(i)
	}
	fs.idleMu.Unlock()
}

func (fs *Filesystem) unidleLocked(i *inode) {
	if i.idlePrev != nil {
		i.idlePrev.idleNext = i.idleNext
	} else {
		fs.idleHead = i.idleNext
	}
	if i.idleNext != nil {
		i.idleNext.idlePrev = i.idlePrev
	} else {
		fs.idleTail = i.idlePrev
	}
	i.idlePrev, i.idleNext = nil, nil
	fs.idleLen--
	i.idle.Store(false)
}

// readMappedLocked reads a mapped inode's data at off (below the size).
// i.mu must be held.
func (i *inode) readMappedLocked(p []byte, off int64) int {
	n := 0
	for n < len(p) {
		m, err := unix.Pread(i.mfd, p[n:], off+int64(n))
		if m <= 0 || err != nil {
			break
		}
		n += m
	}
	// The shadow is never shorter than the size; a failing host read
	// reads as a hole.
	clear(p[n:])
	return len(p)
}

// writeMappedLocked writes p at off into a mapped inode's shadow. With a
// size limit, the pages the write spans must fit before it starts (the
// host cannot stop a write at the limit); the count then follows what the
// shadow really allocated. i.mu must be held.
func (i *inode) writeMappedLocked(p []byte, off int64) (int, error) {
	var need int64
	if i.fs.maxPages > 0 {
		need = pagesFor(off+int64(len(p))) - off/pageSize
		if !i.fs.reservePages(need) {
			return 0, unix.ENOSPC
		}
	}
	n := 0
	var err error
	for n < len(p) {
		var m int
		m, err = unix.Pwrite(i.mfd, p[n:], off+int64(n))
		if m <= 0 || err != nil {
			break
		}
		n += m
	}
	i.fs.unreservePages(need)
	i.reconcileLocked()
	if n == 0 {
		if err == nil || err == unix.ENOSPC {
			return 0, unix.ENOSPC
		}
		return 0, err
	}
	return n, nil
}
