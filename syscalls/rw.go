package syscalls

import (
	"encoding/binary"
	"math"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// maxRWCount is MAX_RW_COUNT: one read or write moves at most this much.
const maxRWCount = math.MaxInt32 &^ 4095

// Read is read(fd, buf, count).
func Read(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return readv(t, int32(args[0]), args[1], args[2], -1)
}

// Pread64 is pread64(fd, buf, count, offset): a negative offset is EINVAL
// (ksys_pread64).
func Pread64(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	if int64(args[3]) < 0 && t.FDTable().Has(int32(args[0])) {
		return sentry.Err(unix.EINVAL)
	}
	return readv(t, int32(args[0]), args[1], args[2], int64(args[3]))
}

// Write is write(fd, buf, count).
func Write(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return writev(t, int32(args[0]), args[1], args[2], -1)
}

// Pwrite64 is pwrite64(fd, buf, count, offset); see Pread64.
func Pwrite64(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	if int64(args[3]) < 0 && t.FDTable().Has(int32(args[0])) {
		return sentry.Err(unix.EINVAL)
	}
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

// pageSize is PAGE_SIZE: guest memory is readable or not a page at a
// time, and extensible structs (open_how, xattr_args) larger than a page
// are E2BIG, as their callers of copy_struct_from_user check.
const pageSize = 4096

// readable copies the readable prefix of a guest range into dst, a page at
// a time, and returns its length.
func readable(t *sentry.Task, addr uintptr, dst []byte) int {
	n := 0
	for n < len(dst) {
		end := n + pageSize - int((addr+uintptr(n))%pageSize)
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
	f, res, ok := fileFor(t, int32(args[0]))
	if !ok {
		return res
	}
	defer f.DecRef()
	off, whence := int64(args[1]), int(args[2])
	f.Lock()
	defer f.Unlock()
	if f.Inode.Mode()&unix.S_IFMT == unix.S_IFDIR && whence != unix.SEEK_SET && whence != unix.SEEK_CUR {
		// dcache_dir_lseek knows only SEEK_SET and SEEK_CUR.
		return sentry.Err(unix.EINVAL)
	}
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
	f, res, ok := fileFor(t, int32(args[0]))
	if !ok {
		return res
	}
	defer f.DecRef()
	length := int64(args[1])
	if length < 0 {
		return sentry.Err(unix.EINVAL)
	}
	if f.Inode.Mode()&unix.S_IFMT != unix.S_IFREG || !f.Writable() {
		return sentry.Err(unix.EINVAL)
	}
	if err := f.Inode.Truncate(length, t.Creds()); err != nil {
		return sentry.ErrOf(err)
	}
	return sentry.Ret(0)
}

// uioMaxIOV is UIO_MAXIOV.
const uioMaxIOV = 1024

// Readv is readv(fd, iov, iovcnt).
func Readv(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return vectored(t, int32(args[0]), args[1], int64(args[2]), -1, false)
}

// Writev is writev(fd, iov, iovcnt).
func Writev(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return vectored(t, int32(args[0]), args[1], int64(args[2]), -1, true)
}

// Preadv is preadv(fd, iov, iovcnt, pos).
func Preadv(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return positioned(t, args, false)
}

// Pwritev is pwritev(fd, iov, iovcnt, pos).
func Pwritev(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return positioned(t, args, true)
}

// Preadv2 is preadv2(fd, iov, iovcnt, pos, pos_h, flags): pos -1 is the
// description's offset; RWF_* hints change nothing on tmpfs, unknown ones
// are EOPNOTSUPP as in kiocb_set_rw_flags.
func Preadv2(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return positioned2(t, args, false)
}

// Pwritev2: see Preadv2.
func Pwritev2(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	return positioned2(t, args, true)
}

func positioned(t *sentry.Task, args *platform.SyscallArgs, write bool) sentry.Result {
	if !t.FDTable().Has(int32(args[0])) {
		return sentry.Pass()
	}
	pos := int64(args[3])
	if pos < 0 {
		return sentry.Err(unix.EINVAL)
	}
	return vectored(t, int32(args[0]), args[1], int64(args[2]), pos, write)
}

// rwfSupported are the RWF_* flags Linux knows (RWF_SUPPORTED).
const rwfSupported = unix.RWF_HIPRI | unix.RWF_DSYNC | unix.RWF_SYNC | unix.RWF_NOWAIT | unix.RWF_APPEND |
	unix.RWF_NOAPPEND | unix.RWF_ATOMIC | unix.RWF_DONTCACHE

func positioned2(t *sentry.Task, args *platform.SyscallArgs, write bool) sentry.Result {
	if !t.FDTable().Has(int32(args[0])) {
		return sentry.Pass()
	}
	pos := int64(args[3])
	if uint32(args[5])&^rwfSupported != 0 {
		return sentry.Err(unix.EOPNOTSUPP)
	}
	if pos < -1 {
		return sentry.Err(unix.EINVAL)
	}
	return vectored(t, int32(args[0]), args[1], int64(args[2]), pos, write)
}

// vectored is do_readv/do_writev over the sentry's read and write: the
// segments in order, stopping at the first short transfer; an error
// after some bytes moved returns those bytes.
func vectored(t *sentry.Task, fd int32, iovAddr uintptr, iovcnt, pos int64, write bool) sentry.Result {
	if !t.FDTable().Has(fd) {
		return sentry.Pass()
	}
	if iovcnt < 0 || iovcnt > uioMaxIOV {
		return sentry.Err(unix.EINVAL)
	}
	iov := make([]byte, 16*iovcnt)
	if err := t.CopyIn(iovAddr, iov); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	var total int64
	for i := int64(0); i < iovcnt; i++ {
		base := uintptr(binary.LittleEndian.Uint64(iov[16*i:]))
		n := binary.LittleEndian.Uint64(iov[16*i+8:])
		if int64(n) < 0 {
			return sentry.Err(unix.EINVAL)
		}
		if n == 0 {
			continue
		}
		var r sentry.Result
		if write {
			r = writev(t, fd, base, uintptr(n), pos)
		} else {
			r = readv(t, fd, base, uintptr(n), pos)
		}
		if r.Ret < 0 {
			if total == 0 {
				return r
			}
			break
		}
		total += r.Ret
		if pos >= 0 {
			pos += r.Ret
		}
		if uint64(r.Ret) < n {
			break
		}
	}
	if total == 0 && iovcnt > 0 {
		// Zero-length transfers still check the descriptor's mode.
		var r sentry.Result
		if write {
			r = writev(t, fd, 0, 0, pos)
		} else {
			r = readv(t, fd, 0, 0, pos)
		}
		if r.Ret < 0 {
			return r
		}
	}
	return sentry.Ret(total)
}

// Fsync is fsync(fd) (and fdatasync, syncfs): tmpfs has nothing to write
// back (noop_fsync), so a virtual fd succeeds at once.
func Fsync(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	f, res, ok := fileFor(t, int32(args[0]))
	if !ok {
		return res
	}
	defer f.DecRef()
	return sentry.Ret(0)
}

// Fadvise64 is fadvise64(fd, offset, len, advice): advice is checked
// (EINVAL), then it is a hint tmpfs ignores; EINVAL for a negative length,
// ESPIPE never (regular files and directories).
func Fadvise64(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	f, res, ok := fileFor(t, int32(args[0]))
	if !ok {
		return res
	}
	defer f.DecRef()
	if int64(args[2]) < 0 || args[3] > unix.FADV_NOREUSE {
		return sentry.Err(unix.EINVAL)
	}
	return sentry.Ret(0)
}

// Fstatfs is fstatfs(fd, buf) on a virtual fd: the mount's figures
// (TMPFS_MAGIC).
func Fstatfs(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	f := t.FDTable().Get(int32(args[0]))
	if f == nil {
		return sentry.Pass()
	}
	defer f.DecRef()
	return statfsTo(t, f.Mount, args[1])
}

// Statfs is statfs(path, buf).
func Statfs(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	r, err := resolveAt(t, unix.AT_FDCWD, args[0], true, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	if r.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	return statfsTo(t, r.Mount, args[1])
}

func statfsTo(t *sentry.Task, m *vfs.Mount, buf uintptr) sentry.Result {
	var st unix.Statfs_t
	m.FS.Statfs(&st)
	if err := t.CopyOut(buf, unsafe.Slice((*byte)(unsafe.Pointer(&st)), unsafe.Sizeof(st))); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	return sentry.Ret(0)
}

// fileFor returns the description behind a virtual fd with a reference;
// otherwise ok is false and res is the answer: pass through for a host fd,
// EBADF for an O_PATH description (fdget refuses FMODE_PATH files).
func fileFor(t *sentry.Task, fd int32) (f *vfs.FileDescription, res sentry.Result, ok bool) {
	f = t.FDTable().Get(fd)
	if f == nil {
		return nil, sentry.Pass(), false
	}
	if f.IsPath() {
		f.DecRef()
		return nil, sentry.Err(unix.EBADF), false
	}
	return f, res, true
}
