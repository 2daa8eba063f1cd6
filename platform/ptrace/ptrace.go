package ptrace

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The ptrace requests below are raw syscalls: they never block, so they
// skip the Go scheduler's entersyscall/exitsyscall bookkeeping, which is a
// measurable part of a trap's cost.

func ptraceRaw(req int, tid int32, addr, data uintptr) unix.Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, data, 0, 0)
	return e
}

func getRegs(tid int32, regs *unix.PtraceRegs) unix.Errno {
	return ptraceRaw(unix.PTRACE_GETREGS, tid, 0, uintptr(unsafe.Pointer(regs)))
}

func setRegs(tid int32, regs *unix.PtraceRegs) unix.Errno {
	return ptraceRaw(unix.PTRACE_SETREGS, tid, 0, uintptr(unsafe.Pointer(regs)))
}

func cont(tid int32, sig int) unix.Errno {
	return ptraceRaw(unix.PTRACE_CONT, tid, 0, uintptr(sig))
}

func contSyscall(tid int32) unix.Errno {
	return ptraceRaw(unix.PTRACE_SYSCALL, tid, 0, 0)
}

func listen(tid int32) unix.Errno {
	return ptraceRaw(unix.PTRACE_LISTEN, tid, 0, 0)
}

func eventMsg(tid int32) (uint64, unix.Errno) {
	var msg uint64
	e := ptraceRaw(unix.PTRACE_GETEVENTMSG, tid, 0, uintptr(unsafe.Pointer(&msg)))
	return msg, e
}

func seize(tid int32, options uintptr) unix.Errno {
	return ptraceRaw(unix.PTRACE_SEIZE, tid, 0, options)
}

// wait4 waits for any child or tracee. Without WNOHANG it blocks, so it
// goes through the scheduler (unix.Syscall6); with it, it does not.
func wait4(status *unix.WaitStatus, options int) (int32, unix.Errno) {
	if options&unix.WNOHANG != 0 {
		r, _, e := unix.RawSyscall6(unix.SYS_WAIT4, ^uintptr(0), uintptr(unsafe.Pointer(status)), uintptr(unix.WALL|options), 0, 0, 0)
		return int32(r), e
	}
	r, _, e := unix.Syscall6(unix.SYS_WAIT4, ^uintptr(0), uintptr(unsafe.Pointer(status)), uintptr(unix.WALL|options), 0, 0, 0)
	return int32(r), e
}
