package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// The in-kernel copy calls move data between two descriptors. Between two
// sentry files the sentry copies itself; between a sentry file and a host
// descriptor the call becomes the guest's own write (or read) of a buffer
// the sentry places below the guest's stack, so the host descriptor's
// offset and semantics (pipes, sockets) stay the kernel's. Transfers are
// at most copyChunk bytes, which these calls may always return short.

// copyChunk bounds one transfer through the guest's stack; smallChunk is
// the retry when the stack mapping below the stack pointer is small.
const (
	copyChunk  = 64 << 10
	smallChunk = 4 << 10
)

// copyEnds are the descriptions of a copy's ends, with references; nil
// for an end that is not a virtual fd.
func copyEnds(t *sentry.Task, inFD, outFD int32) (in, out *vfs.FileDescription) {
	return t.FDTable().Get(inFD), t.FDTable().Get(outFD)
}

func releaseEnds(in, out *vfs.FileDescription) {
	if in != nil {
		in.DecRef()
	}
	if out != nil {
		out.DecRef()
	}
}

// endsUsable is the EBADF check of a copy's sentry ends: the source open
// for reading, the destination for writing, neither O_PATH.
func endsUsable(in, out *vfs.FileDescription) bool {
	return (in == nil || in.Readable() && !in.IsPath()) && (out == nil || out.Writable() && !out.IsPath())
}

// Sendfile is sendfile(out_fd, in_fd, offset*, count), as do_sendfile:
// in_fd must be readable (EBADF) and a regular file's (EINVAL for a
// directory), out_fd writable; with offset the file position is not used
// nor moved, and *offset is advanced.
func Sendfile(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	outFD, inFD, offAddr, count := int32(args[0]), int32(args[1]), args[2], int64(args[3])
	in, out := copyEnds(t, inFD, outFD)
	defer releaseEnds(in, out)
	if in == nil && out == nil {
		return sentry.Pass()
	}
	if !endsUsable(in, out) {
		return sentry.Err(unix.EBADF)
	}
	if in != nil && in.Inode.Mode()&unix.S_IFMT != unix.S_IFREG {
		return sentry.Err(unix.EINVAL)
	}
	if count < 0 {
		return sentry.Err(unix.EINVAL)
	}
	var off int64 = -1
	if offAddr != 0 {
		var b [8]byte
		if t.CopyIn(offAddr, b[:]) != nil {
			return sentry.Err(unix.EFAULT)
		}
		off = int64(binary.LittleEndian.Uint64(b[:]))
		if off < 0 {
			return sentry.Err(unix.EINVAL)
		}
	}
	if count > maxRWCount {
		count = maxRWCount
	}
	switch {
	case in != nil && out != nil:
		n, err := copyBetween(t, in, off, out, -1, count)
		if n == 0 && err != nil {
			return sentry.ErrOf(err)
		}
		if offAddr != 0 {
			putOffset(t, offAddr, off+n)
		}
		return sentry.Ret(n)
	case in != nil:
		// A sentry file into a host descriptor: the guest writes.
		if count > copyChunk {
			count = copyChunk
		}
		data := t.IOBuf(int(count))
		pos := off
		if pos < 0 {
			in.Lock()
			pos = in.Offset()
			in.Unlock()
		}
		n, err := in.Inode.ReadAt(data, pos)
		if n == 0 {
			if err != nil {
				return sentry.ErrOf(err)
			}
			return sentry.Ret(0)
		}
		buf, err := stackData(t, data[:n])
		if err != nil {
			return sentry.ErrOf(err)
		}
		s := t.Scratch()
		in.IncRef()
		*s = sentry.Scratch{File: in, Aux: uint64(pos), Args: platform.SyscallArgs{offAddr}}
		return sentry.RewriteTo(t, unix.SYS_WRITE, platform.SyscallArgs{uintptr(outFD), buf, uintptr(len(data[:n]))}, sendfileToHostExit)
	default:
		// A host file into a sentry file: the guest reads, the sentry
		// writes what it read.
		if count > copyChunk {
			count = copyChunk
		}
		buf, err := t.StackBuffer(int(count), nil)
		if err != nil {
			if count = smallChunk; count > 0 {
				buf, err = t.StackBuffer(int(count), nil)
			}
			if err != nil {
				return sentry.ErrOf(err)
			}
		}
		s := t.Scratch()
		out.IncRef()
		*s = sentry.Scratch{File: out, Aux: uint64(buf), Args: platform.SyscallArgs{offAddr, uintptr(off)}}
		if offAddr != 0 {
			return sentry.RewriteTo(t, unix.SYS_PREAD64, platform.SyscallArgs{uintptr(inFD), buf, uintptr(count), uintptr(off)}, sendfileFromHostExit)
		}
		return sentry.RewriteTo(t, unix.SYS_READ, platform.SyscallArgs{uintptr(inFD), buf, uintptr(count)}, sendfileFromHostExit)
	}
}

// stackData places data below the guest's stack, retrying with less if
// the stack mapping is small.
func stackData(t *sentry.Task, data []byte) (uintptr, error) {
	buf, err := t.StackBuffer(len(data), data)
	if err != nil && len(data) > smallChunk {
		buf, err = t.StackBuffer(smallChunk, data[:smallChunk])
	}
	return buf, err
}

func putOffset(t *sentry.Task, addr uintptr, off int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(off))
	t.CopyOut(addr, b[:])
}

// sendfileToHostExit advances the sentry file's position (or *offset) by
// what the guest's write took.
func sendfileToHostExit(t *sentry.Task, ret int64) int64 {
	s := t.Scratch()
	in, pos, offAddr := s.File, int64(s.Aux), s.Args[0]
	*s = sentry.Scratch{}
	defer in.DecRef()
	if ret <= 0 {
		return ret
	}
	if offAddr != 0 {
		putOffset(t, offAddr, pos+ret)
	} else {
		in.Lock()
		in.SetOffset(pos + ret)
		in.Unlock()
	}
	return ret
}

// sendfileFromHostExit writes what the guest read into the sentry file.
func sendfileFromHostExit(t *sentry.Task, ret int64) int64 {
	s := t.Scratch()
	out, buf, offAddr, off := s.File, uintptr(s.Aux), s.Args[0], int64(s.Args[1])
	*s = sentry.Scratch{}
	defer out.DecRef()
	if ret <= 0 {
		return ret
	}
	data := t.IOBuf(int(ret))
	if t.CopyIn(buf, data) != nil {
		return -int64(unix.EFAULT)
	}
	n, err := writeFile(t, out, data, -1)
	if n == 0 && err != nil {
		return -int64(errnoOf(err))
	}
	if offAddr != 0 {
		putOffset(t, offAddr, off+int64(n))
	}
	return int64(n)
}

// writeFile writes data to f at pos, or at its position (moving it) when
// pos < 0, honouring O_APPEND.
func writeFile(t *sentry.Task, f *vfs.FileDescription, data []byte, pos int64) (int, error) {
	if f.Flags()&unix.O_APPEND != 0 {
		n, end, err := f.Inode.Append(data, t.Creds())
		if pos < 0 {
			f.Lock()
			f.SetOffset(end)
			f.Unlock()
		}
		return n, err
	}
	if pos >= 0 {
		return f.Inode.WriteAt(data, pos, t.Creds())
	}
	f.Lock()
	defer f.Unlock()
	n, err := f.Inode.WriteAt(data, f.Offset(), t.Creds())
	f.SetOffset(f.Offset() + int64(n))
	return n, err
}

// copyBetween copies up to count bytes between two sentry files: from in
// at inPos (its position when < 0, moved) to out at outPos (likewise).
func copyBetween(t *sentry.Task, in *vfs.FileDescription, inPos int64, out *vfs.FileDescription, outPos int64, count int64) (int64, error) {
	var done int64
	for done < count {
		chunk := t.IOBuf(int(min(count-done, copyChunk)))
		pos := inPos
		if pos < 0 {
			in.Lock()
			pos = in.Offset()
			in.Unlock()
		} else {
			pos += done
		}
		n, err := in.Inode.ReadAt(chunk, pos)
		if n == 0 {
			if done == 0 && err != nil {
				return 0, err
			}
			break
		}
		wpos := outPos
		if wpos >= 0 {
			wpos += done
		}
		w, werr := writeFile(t, out, chunk[:n], wpos)
		if inPos < 0 && w > 0 {
			in.Lock()
			in.SetOffset(pos + int64(w))
			in.Unlock()
		}
		done += int64(w)
		if werr != nil || w < n {
			if done == 0 {
				return 0, werr
			}
			break
		}
	}
	return done, nil
}

// CopyFileRange is copy_file_range(fd_in, off_in*, fd_out, off_out*, len,
// flags): flags must be 0 (EINVAL); between two files of one sentry mount
// the sentry copies; between a sentry file and another file system it is
// EXDEV, as Linux answers for tmpfs and a different file system (callers
// such as cp then copy with read and write).
func CopyFileRange(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	inFD, offInAddr, outFD, offOutAddr, length, flags := int32(args[0]), args[1], int32(args[2]), args[3], int64(args[4]), args[5]
	in, out := copyEnds(t, inFD, outFD)
	defer releaseEnds(in, out)
	if in == nil && out == nil {
		return sentry.Pass()
	}
	if flags != 0 {
		return sentry.Err(unix.EINVAL)
	}
	if !endsUsable(in, out) {
		return sentry.Err(unix.EBADF)
	}
	// generic_copy_file_checks before the cross-file-system check.
	for _, f := range []*vfs.FileDescription{in, out} {
		if f != nil && f.Inode.Mode()&unix.S_IFMT == unix.S_IFDIR {
			return sentry.Err(unix.EISDIR)
		}
	}
	if out != nil && out.Flags()&unix.O_APPEND != 0 {
		return sentry.Err(unix.EBADF)
	}
	if in == nil || out == nil || in.Mount != out.Mount {
		return sentry.Err(unix.EXDEV)
	}
	readOff := func(addr uintptr) (int64, error) {
		if addr == 0 {
			return -1, nil
		}
		var b [8]byte
		if t.CopyIn(addr, b[:]) != nil {
			return 0, unix.EFAULT
		}
		v := int64(binary.LittleEndian.Uint64(b[:]))
		if v < 0 {
			return 0, unix.EINVAL
		}
		return v, nil
	}
	inPos, err := readOff(offInAddr)
	if err != nil {
		return sentry.ErrOf(err)
	}
	outPos, err := readOff(offOutAddr)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if length > maxRWCount {
		length = maxRWCount
	}
	n, err := copyBetween(t, in, inPos, out, outPos, length)
	if n == 0 && err != nil {
		return sentry.ErrOf(err)
	}
	if offInAddr != 0 {
		putOffset(t, offInAddr, inPos+n)
	}
	if offOutAddr != 0 {
		putOffset(t, offOutAddr, outPos+n)
	}
	return sentry.Ret(n)
}

// unservedFD2 guards calls with descriptors in the first and third
// arguments (splice, tee's first two): not modelled on sentry files.
func unservedFD2(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	if t.FDTable().Has(int32(args[0])) || t.FDTable().Has(int32(args[2])) {
		return sentry.Err(errUnserved)
	}
	return sentry.Pass()
}

// unservedTee guards tee(fd_in, fd_out, ...).
func unservedTee(t *sentry.Task, args *platform.SyscallArgs) sentry.Result {
	if t.FDTable().Has(int32(args[0])) || t.FDTable().Has(int32(args[1])) {
		return sentry.Err(errUnserved)
	}
	return sentry.Pass()
}
