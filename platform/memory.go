package platform

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// pageSize is the guest's page size: reads of strings stop at page ends so
// that an unmapped page after a string is never touched (as Linux's
// strncpy_from_user stops at the NUL).
const pageSize = 4096

// ReadMemory copies len(dst) bytes of thread tid's memory at addr into dst.
// A range that is not fully mapped is EFAULT, as the guest would get.
func ReadMemory(tid int32, addr uintptr, dst []byte) error {
	if len(dst) == 0 {
		return nil
	}
	local := unix.Iovec{Base: &dst[0], Len: uint64(len(dst))}
	remote := unix.RemoteIovec{Base: addr, Len: len(dst)}
	n, err := processVMReadv(tid, &local, &remote)
	if err != nil || n != len(dst) {
		return unix.EFAULT
	}
	return nil
}

// WriteMemory copies src into thread tid's memory at addr: EFAULT unless all
// of it was written.
func WriteMemory(tid int32, addr uintptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	local := unix.Iovec{Base: &src[0], Len: uint64(len(src))}
	remote := unix.RemoteIovec{Base: addr, Len: len(src)}
	n, err := processVMWritev(tid, &local, &remote)
	if err != nil || n != len(src) {
		return unix.EFAULT
	}
	return nil
}

// ReadString reads a NUL-terminated string of at most max bytes (NUL
// excluded) at addr into buf's storage, a page at a time. It returns the
// bytes before the NUL, ENAMETOOLONG if no NUL is found within max+1 bytes,
// or EFAULT, like Linux's strncpy_from_user as used by getname.
func ReadString(tid int32, addr uintptr, max int, buf []byte) ([]byte, error) {
	if addr == 0 {
		return nil, unix.EFAULT
	}
	buf = buf[:0]
	for len(buf) <= max {
		chunk := pageSize - int(addr%pageSize)
		if rem := max + 1 - len(buf); chunk > rem {
			chunk = rem
		}
		start := len(buf)
		if cap(buf) < start+chunk {
			grown := make([]byte, start+chunk, 2*(start+chunk))
			copy(grown, buf)
			buf = grown
		} else {
			buf = buf[:start+chunk]
		}
		if err := ReadMemory(tid, addr, buf[start:]); err != nil {
			return nil, unix.EFAULT
		}
		for i := start; i < len(buf); i++ {
			if buf[i] == 0 {
				return buf[:i], nil
			}
		}
		addr += uintptr(chunk)
	}
	return nil, unix.ENAMETOOLONG
}

func processVMReadv(tid int32, local *unix.Iovec, remote *unix.RemoteIovec) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_PROCESS_VM_READV, uintptr(tid),
		uintptr(unsafe.Pointer(local)), 1, uintptr(unsafe.Pointer(remote)), 1, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func processVMWritev(tid int32, local *unix.Iovec, remote *unix.RemoteIovec) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_PROCESS_VM_WRITEV, uintptr(tid),
		uintptr(unsafe.Pointer(local)), 1, uintptr(unsafe.Pointer(remote)), 1, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
