package syscalls

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Mmap is mmap(addr, length, prot, flags, fd, offset). A regular file's
// placeholder is an open of its shadow (fs/tmpfs/shadow.go): the file's
// data moves into the shadow and the host maps it, so private and shared
// mappings, writable ones included, are coherent with read and write as
// on Linux, between processes too. A placeholder that is an empty memfd
// (no shadow could be made) is filled with the file's data first, so the
// mapping shows the file as it was at mmap time; a writable shared one
// is then refused (ENODEV) rather than silently losing data.
func Mmap(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	flags := uint32(args[3])
	fd := int32(args[4])
	if flags&unix.MAP_ANONYMOUS != 0 {
		return sentry.Pass()
	}
	f, res, ok := fileFor(t, fd)
	if !ok {
		return res
	}
	defer f.DecRef()
	prot := uint32(args[2])
	if f.Inode.Mode()&unix.S_IFMT != unix.S_IFREG {
		return sentry.Err(unix.ENODEV)
	}
	// do_mmap: any mapping needs read access; a shared writable one needs
	// write access too.
	if !f.Readable() {
		return sentry.Err(unix.EACCES)
	}
	shared := flags&unix.MAP_TYPE == unix.MAP_SHARED || flags&unix.MAP_TYPE == unix.MAP_SHARED_VALIDATE
	if shared && prot&unix.PROT_WRITE != 0 && !f.Writable() {
		return sentry.Err(unix.EACCES)
	}
	var buf [256]byte
	n, _ := unix.Readlink(placeholderPath(t, fd), buf[:])
	link := string(buf[:max(n, 0)])
	if sh, ok := f.Inode.(vfs.Shadowed); ok {
		if p, _ := sh.ShadowPath(false); p != "" && link == p {
			if err := sh.Map(); err != nil {
				return sentry.Err(unix.ENOMEM)
			}
			return sentry.Pass()
		}
	}
	if !strings.HasPrefix(link, "/memfd:") || shared && prot&unix.PROT_WRITE != 0 {
		// Not a placeholder this file's data can be put in (a shadow
		// left by a create another thread won), or a mapping whose
		// writes would be lost.
		return sentry.Err(unix.ENODEV)
	}
	if err := fillPlaceholder(t, fd, f.Inode.Size(), f.Inode.ReadAt); err != nil {
		return sentry.ErrOf(err)
	}
	return sentry.Pass()
}

// placeholderPath is the /proc path of the guest's placeholder at fd.
func placeholderPath(t *sentry.Task, fd int32) string {
	return "/proc/" + strconv.Itoa(int(t.TID)) + "/fd/" + strconv.Itoa(int(fd))
}

// fillPlaceholder makes the placeholder memfd behind fd hold the file's
// size and data.
func fillPlaceholder(t *sentry.Task, fd int32, size int64, readAt func([]byte, int64) (int, error)) error {
	hfd, err := unix.Open(placeholderPath(t, fd), unix.O_RDWR|unix.O_CLOEXEC, 0)
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
