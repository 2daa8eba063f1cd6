package syscalls

import (
	"strconv"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// Mmap is mmap(addr, length, prot, flags, fd, offset). A mapping of a
// virtual fd maps its placeholder memfd, so the sentry first copies the
// file's current contents into the placeholder (through
// /proc/TID/fd/N) and lets the host map it. Private mappings and
// read-only shared ones then see the file as Linux shows it at mmap time;
// a writable shared mapping would not write back to the sentry's file, so
// it is refused (ENODEV) rather than silently losing data.
func Mmap(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	flags := uint32(args[3])
	fd := int32(args[4])
	if flags&unix.MAP_ANONYMOUS != 0 || !t.FDTable().Has(fd) {
		return sentry.Pass()
	}
	f := t.FDTable().Get(fd)
	if f == nil {
		return sentry.Pass()
	}
	defer f.DecRef()
	prot := uint32(args[2])
	if f.IsPath() {
		return sentry.Err(unix.EBADF)
	}
	if f.Inode.Mode()&unix.S_IFMT != unix.S_IFREG {
		return sentry.Err(unix.ENODEV)
	}
	// do_mmap: any mapping needs read access; a shared writable one needs
	// write access too.
	if !f.Readable() {
		return sentry.Err(unix.EACCES)
	}
	shared := flags&unix.MAP_TYPE == unix.MAP_SHARED || flags&unix.MAP_TYPE == unix.MAP_SHARED_VALIDATE
	if shared && prot&unix.PROT_WRITE != 0 {
		if !f.Writable() {
			return sentry.Err(unix.EACCES)
		}
		return sentry.Err(unix.ENODEV)
	}
	if err := fillPlaceholder(t, fd, f.Inode.Size(), f.Inode.ReadAt); err != nil {
		return sentry.ErrOf(err)
	}
	return sentry.Pass()
}

// fillPlaceholder makes the placeholder memfd behind fd hold the file's
// size and data.
func fillPlaceholder(t *sentry.Task, fd int32, size int64, readAt func([]byte, int64) (int, error)) error {
	p := "/proc/" + strconv.Itoa(int(t.TID)) + "/fd/" + strconv.Itoa(int(fd))
	hfd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return unix.ENOMEM
	}
	defer unix.Close(hfd)
	if err := unix.Ftruncate(hfd, size); err != nil {
		return unix.ENOMEM
	}
	buf := t.IOBuf(1 << 17)
	for off := int64(0); off < size; {
		n, err := readAt(buf, off)
		if n > 0 {
			if _, werr := unix.Pwrite(hfd, buf[:n], off); werr != nil {
				return unix.ENOMEM
			}
			off += int64(n)
		}
		if err != nil || n == 0 {
			break
		}
	}
	return nil
}
