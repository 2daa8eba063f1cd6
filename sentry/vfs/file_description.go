package vfs

import (
	"io"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// FileDescription is an open file: Linux's struct file. It is shared by the
// descriptors that dup and fork make, which share its offset and status
// flags; it holds a reference on its inode until its own last reference
// goes.
type FileDescription struct {
	refs atomic.Int64

	Mount  *Mount
	Dentry Dentry
	Inode  Inode
	// HostFD is the sentry's descriptor of the description's placeholder
	// (Inode.OpenHost): the very open file the guest's descriptors refer
	// to, so its offset is theirs (a directory's getdents position) and
	// fstat of it is cheap. -1 if none; closed with the last reference.
	HostFD int

	// mu guards offset (f_pos_lock).
	mu     sync.Mutex
	offset int64
	// flags are the access mode and status flags. They are read without
	// a lock by calls on other threads (on unotify, serving threads
	// check Readable while the tracer serves an fcntl F_SETFL): atomic,
	// as Linux reads f_flags without f_lock.
	flags atomic.Uint32
}

// NewFileDescription returns a description with one reference, holding a
// reference on d's inode.
func NewFileDescription(m *Mount, d Dentry, flags uint32) *FileDescription {
	fd := &FileDescription{Mount: m, Dentry: d, Inode: d.Inode(), HostFD: -1}
	fd.flags.Store(flags)
	fd.refs.Store(1)
	fd.Inode.IncRef()
	return fd
}

// IncRef takes a reference (dup, fork, a table entry).
func (fd *FileDescription) IncRef() { fd.refs.Add(1) }

// DecRef drops a reference; the last one releases the file (Linux's
// __fput): the inode's open reference goes, which frees an unlinked inode.
// It reports whether this was the last reference.
func (fd *FileDescription) DecRef() bool {
	n := fd.refs.Add(-1)
	if n > 0 {
		return false
	}
	if n < 0 {
		panic("vfs: FileDescription reference count below zero")
	}
	if fd.HostFD >= 0 {
		unix.Close(fd.HostFD)
		fd.HostFD = -1
	}
	fd.Inode.DecRef()
	return true
}

// Refs is the current reference count (for tests and consistency checks).
func (fd *FileDescription) Refs() int64 { return fd.refs.Load() }

// Flags are the access mode and status flags (F_GETFL).
func (fd *FileDescription) Flags() uint32 { return fd.flags.Load() }

// setFlMask are the flags F_SETFL may change on Linux (setfl): O_APPEND,
// O_NONBLOCK, O_NDELAY (= O_NONBLOCK), O_DIRECT, O_NOATIME, O_ASYNC.
const setFlMask = unix.O_APPEND | unix.O_NONBLOCK | unix.O_DIRECT | unix.O_NOATIME | unix.O_ASYNC

// SetFlags is F_SETFL: only the changeable status flags move (setfl, under
// f_lock there; a compare-and-swap here, so that the access mode never
// changes whatever runs at once).
func (fd *FileDescription) SetFlags(flags uint32) {
	for {
		old := fd.flags.Load()
		if fd.flags.CompareAndSwap(old, old&^setFlMask|flags&setFlMask) {
			return
		}
	}
}

// Readable and Writable are the access mode checks of read and write
// (FMODE_READ, FMODE_WRITE); O_PATH descriptions are neither.
func (fd *FileDescription) Readable() bool {
	f := fd.flags.Load()
	return f&unix.O_PATH == 0 && (f&unix.O_ACCMODE == unix.O_RDONLY || f&unix.O_ACCMODE == unix.O_RDWR)
}

// Writable: see Readable.
func (fd *FileDescription) Writable() bool {
	f := fd.flags.Load()
	return f&unix.O_PATH == 0 && (f&unix.O_ACCMODE == unix.O_WRONLY || f&unix.O_ACCMODE == unix.O_RDWR)
}

// IsPath reports an O_PATH description.
func (fd *FileDescription) IsPath() bool { return fd.flags.Load()&unix.O_PATH != 0 }

// Lock and Unlock serialize offset-based I/O (f_pos_lock).
func (fd *FileDescription) Lock()   { fd.mu.Lock() }
func (fd *FileDescription) Unlock() { fd.mu.Unlock() }

// Offset and SetOffset are valid under Lock. A description with a
// placeholder keeps its position there: the guest's lseek is not trapped
// and moves that very position (the host tmpfs's offset_dir_llseek:
// SEEK_SET and SEEK_CUR to any offset >= 0), so rewinddir, telldir and
// seekdir on a sentry directory are the guest's getdents position too.
func (fd *FileDescription) Offset() int64 {
	if fd.HostFD >= 0 {
		if off, err := unix.Seek(fd.HostFD, 0, io.SeekCurrent); err == nil {
			return off
		}
	}
	return fd.offset
}

func (fd *FileDescription) SetOffset(off int64) {
	fd.offset = off
	if fd.HostFD >= 0 {
		unix.Seek(fd.HostFD, off, io.SeekStart)
	}
}
