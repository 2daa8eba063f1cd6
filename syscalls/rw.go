package syscalls

import (
	"math"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// maxRWCount is MAX_RW_COUNT: one read or write moves at most this much.
const maxRWCount = math.MaxInt32 &^ 4095

// Read is read(fd, buf, count).
func Read(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return readv(t, int32(args[0]), args[1], args[2], -1)
}

// Pread64 is pread64(fd, buf, count, offset).
func Pread64(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return readv(t, int32(args[0]), args[1], args[2], int64(args[3]))
}

// Write is write(fd, buf, count).
func Write(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return writev(t, int32(args[0]), args[1], args[2], -1)
}

// Pwrite64 is pwrite64(fd, buf, count, offset).
func Pwrite64(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return writev(t, int32(args[0]), args[1], args[2], int64(args[3]))
}

// readv reads at the description's offset (pos < 0) or at pos (pread),
// as vfs_read: EBADF unless open for reading, EISDIR for a directory,
// EINVAL for a negative pread offset; a fault after some bytes were copied
// returns those bytes.
func readv(t *sentry.Task, fd int32, buf, count uintptr, pos int64) sentry.Result {
	f := t.FDTable().Get(fd)
	if f == nil {
		return sentry.Pass()
	}
	defer f.DecRef()
	if !f.Readable() {
		return sentry.Err(unix.EBADF)
	}
	if f.Inode.Mode()&unix.S_IFMT == unix.S_IFDIR {
		return sentry.Err(unix.EISDIR)
	}
	if pos < -1 {
		return sentry.Err(unix.EINVAL)
	}
	if count > maxRWCount {
		count = maxRWCount
	}
	if pos == -1 {
		f.Lock()
		defer f.Unlock()
	}
	off := pos
	if pos == -1 {
		off = f.Offset()
	}
	var done int64
	for done < int64(count) {
		chunk := t.IOBuf(int(int64(count) - done))
		n, err := f.Inode.ReadAt(chunk, off)
		if n > 0 {
			if t.CopyOut(buf+uintptr(done), chunk[:n]) != nil {
				if done == 0 {
					return sentry.Err(unix.EFAULT)
				}
				break
			}
			done += int64(n)
			off += int64(n)
		}
		if err != nil {
			if done == 0 {
				return sentry.ErrOf(err)
			}
			break
		}
		if n < len(chunk) {
			break
		}
	}
	if pos == -1 {
		f.SetOffset(off)
	}
	return sentry.Ret(done)
}

// writev is vfs_write: EBADF unless open for writing, O_APPEND writes at
// the end whatever the offset (pwrite too, as Linux does), a fault after
// some bytes were written returns those bytes.
func writev(t *sentry.Task, fd int32, buf, count uintptr, pos int64) sentry.Result {
	f := t.FDTable().Get(fd)
	if f == nil {
		return sentry.Pass()
	}
	defer f.DecRef()
	if !f.Writable() {
		return sentry.Err(unix.EBADF)
	}
	if pos < -1 {
		return sentry.Err(unix.EINVAL)
	}
	if count > maxRWCount {
		count = maxRWCount
	}
	if count == 0 {
		return sentry.Ret(0)
	}
	appendMode := f.Flags()&unix.O_APPEND != 0
	if pos == -1 {
		f.Lock()
		defer f.Unlock()
	}
	off := pos
	if pos == -1 {
		off = f.Offset()
	}
	creds := t.Creds()
	var done int64
	var werr error
	for done < int64(count) {
		chunk := t.IOBuf(int(int64(count) - done))
		if t.CopyIn(buf+uintptr(done), chunk) != nil {
			// Copy what can be read, as a fault mid-buffer does.
			chunk = chunk[:readable(t, buf+uintptr(done), chunk)]
			if len(chunk) == 0 {
				werr = unix.EFAULT
				break
			}
		}
		var n int
		if appendMode {
			var end int64
			n, end, werr = f.Inode.Append(chunk, creds)
			off = end
		} else {
			n, werr = f.Inode.WriteAt(chunk, off, creds)
			off += int64(n)
		}
		done += int64(n)
		if werr != nil || n < len(chunk) {
			break
		}
	}
	if pos == -1 {
		f.SetOffset(off)
	}
	if done == 0 && werr != nil {
		return sentry.ErrOf(werr)
	}
	return sentry.Ret(done)
}

// readable copies the readable prefix of a guest range into dst, a page at
// a time, and returns its length.
func readable(t *sentry.Task, addr uintptr, dst []byte) int {
	n := 0
	for n < len(dst) {
		end := n + 4096 - int((addr+uintptr(n))%4096)
		if end > len(dst) {
			end = len(dst)
		}
		if t.CopyIn(addr+uintptr(n), dst[n:end]) != nil {
			break
		}
		n = end
	}
	return n
}

// Lseek is lseek(fd, offset, whence), as generic_file_llseek with tmpfs's
// SEEK_DATA/SEEK_HOLE (the whole file counts as data here).
func Lseek(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	f := t.FDTable().Get(int32(args[0]))
	if f == nil {
		return sentry.Pass()
	}
	defer f.DecRef()
	if f.IsPath() {
		return sentry.Err(unix.EBADF)
	}
	off, whence := int64(args[1]), int(args[2])
	f.Lock()
	defer f.Unlock()
	size := f.Inode.Size()
	var n int64
	switch whence {
	case unix.SEEK_SET:
		n = off
	case unix.SEEK_CUR:
		n = f.Offset() + off
		if (off > 0 && n < f.Offset()) || (off < 0 && n > f.Offset()) {
			return sentry.Err(unix.EINVAL)
		}
	case unix.SEEK_END:
		n = size + off
		if off > 0 && n < size {
			return sentry.Err(unix.EINVAL)
		}
	case unix.SEEK_DATA:
		if off < 0 || off >= size {
			return sentry.Err(unix.ENXIO)
		}
		n = off
	case unix.SEEK_HOLE:
		if off < 0 || off >= size {
			return sentry.Err(unix.ENXIO)
		}
		n = size
	default:
		return sentry.Err(unix.EINVAL)
	}
	if n < 0 {
		return sentry.Err(unix.EINVAL)
	}
	f.SetOffset(n)
	return sentry.Ret(n)
}

// Ftruncate is ftruncate(fd, length), as do_ftruncate: EBADF for O_PATH,
// EINVAL for a negative length or a description not open for writing or
// not a regular file.
func Ftruncate(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	f := t.FDTable().Get(int32(args[0]))
	if f == nil {
		return sentry.Pass()
	}
	defer f.DecRef()
	if f.IsPath() {
		return sentry.Err(unix.EBADF)
	}
	length := int64(args[1])
	if length < 0 {
		return sentry.Err(unix.EINVAL)
	}
	if f.Inode.Mode()&unix.S_IFMT != unix.S_IFREG || !f.Writable() {
		return sentry.Err(unix.EINVAL)
	}
	if err := f.Inode.Truncate(length, false); err != nil {
		return sentry.ErrOf(err)
	}
	return sentry.Ret(0)
}
