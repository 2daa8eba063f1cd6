package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Open file description lock commands (F_OFD_*).
const (
	fOFDGetlk  = 36
	fOFDSetlk  = 37
	fOFDSetlkw = 38
)

// flockSize is sizeof(struct flock) on x86-64.
const flockSize = 32

// recordLock is fcntl's F_GETLK/F_SETLK/F_SETLKW and their F_OFD_
// variants on a virtual fd, as fcntl_getlk/fcntl_setlk: the range from
// l_whence, l_start and l_len (EINVAL for a bad whence or type or a range
// before 0), EBADF for a lock the descriptor's mode does not allow,
// EAGAIN on a conflict, a blocked F_SETLKW waiting by short sleeps.
// POSIX locks belong to the process's descriptor table, OFD locks to the
// description.
func recordLock(t *sentry.Task, args *platform.SyscallArgs, cmd int) sentry.Result {
	f, res, ok := fileFor(t, int32(args[0]))
	if !ok {
		return res
	}
	defer f.DecRef()
	if f.Mount == nil || f.Mount.Records == nil {
		return sentry.Err(errUnserved)
	}
	var b [flockSize]byte
	if t.CopyIn(args[2], b[:]) != nil {
		return sentry.Err(unix.EFAULT)
	}
	typ := int16(binary.LittleEndian.Uint16(b[0:]))
	whence := int16(binary.LittleEndian.Uint16(b[2:]))
	start := int64(binary.LittleEndian.Uint64(b[8:]))
	length := int64(binary.LittleEndian.Uint64(b[16:]))
	pid := int32(binary.LittleEndian.Uint32(b[24:]))
	ofd := cmd == fOFDGetlk || cmd == fOFDSetlk || cmd == fOFDSetlkw
	if ofd && pid != 0 {
		return sentry.Err(unix.EINVAL)
	}
	if typ != unix.F_RDLCK && typ != unix.F_WRLCK && typ != unix.F_UNLCK {
		return sentry.Err(unix.EINVAL)
	}
	var base int64
	switch whence {
	case unix.SEEK_SET:
	case unix.SEEK_CUR:
		f.Lock()
		base = f.Offset()
		f.Unlock()
	case unix.SEEK_END:
		base = f.Inode.Size()
	default:
		return sentry.Err(unix.EINVAL)
	}
	l := vfs.RecordLock{Type: typ, PID: t.TG.TGID, Owner: t.FDTable()}
	if ofd {
		l.Owner, l.PID = f, -1
	}
	l.Start = base + start
	switch {
	case length > 0:
		if l.Start > vfs.ToEOF-length {
			return sentry.Err(unix.EOVERFLOW)
		}
		l.End = l.Start + length
	case length < 0:
		l.End = l.Start
		l.Start += length
	default:
		l.End = vfs.ToEOF
	}
	if l.Start < 0 {
		return sentry.Err(unix.EINVAL)
	}
	records := f.Mount.Records
	if cmd == unix.F_GETLK || cmd == fOFDGetlk {
		if typ == unix.F_UNLCK {
			return sentry.Err(unix.EINVAL)
		}
		c, found := records.Conflict(f.Inode, &l)
		if !found {
			binary.LittleEndian.PutUint16(b[0:], uint16(unix.F_UNLCK))
		} else {
			binary.LittleEndian.PutUint16(b[0:], uint16(c.Type))
			binary.LittleEndian.PutUint16(b[2:], unix.SEEK_SET)
			binary.LittleEndian.PutUint64(b[8:], uint64(c.Start))
			n := int64(0)
			if c.End != vfs.ToEOF {
				n = c.End - c.Start
			}
			binary.LittleEndian.PutUint64(b[16:], uint64(n))
			binary.LittleEndian.PutUint32(b[24:], uint32(c.PID))
		}
		if t.CopyOut(args[2], b[:]) != nil {
			return sentry.Err(unix.EFAULT)
		}
		return sentry.Ret(0)
	}
	if (typ == unix.F_RDLCK && !f.Readable()) || (typ == unix.F_WRLCK && !f.Writable()) {
		return sentry.Err(unix.EBADF)
	}
	err := records.Set(f.Inode, l)
	if err == nil {
		return sentry.Ret(0)
	}
	if err != unix.EAGAIN || (cmd != unix.F_SETLKW && cmd != fOFDSetlkw) {
		return sentry.ErrOf(err)
	}
	// Wait, as flock does: sleep a little and issue the call again.
	return waitAndReissue(t, unix.SYS_FCNTL, args)
}
