package launch

import (
	"fmt"
	"os"
	"slices"
	"unsafe"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	"sentry/platform"
)

// loadFilter installs the sandbox's filter on the calling thread only (no
// TSYNC: the init stage's main thread is the one that execs the guest) and
// returns its user-notification listener. Calls in traps stop the guest for
// the tracer (SECCOMP_RET_TRACE); calls in notify, and the sentry's own
// install call (platform.SysInstallFD, which the tracer rewrites a call
// into when the sentry must give the guest a descriptor), are reported to
// the listener (SECCOMP_RET_USER_NOTIF); every other call runs on the host
// at native speed. Calls of a foreign architecture (int 0x80, x32) fail
// with ENOSYS: the sandbox only models x86-64 and they would otherwise
// reach the host's files behind the sentry's back.
//
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV makes a notified call
// uninterruptible by non-fatal signals once the sentry has received it:
// the sentry's answer is then always the call's result, so a call the
// sentry served is never restarted and served twice (a signal arriving
// before the receipt still interrupts it; the tracer restarts such calls,
// see ptrace's signal stops).
//
// A call with an ArgFilter runs untrapped for the filter's Pass values
// (compared on the lower 32 bits, as the kernel reads an int argument) and
// is trapped for every other; a notified one stops instead for the
// filter's Stop values. Both are decided in the prologue.
//
// A number past last (the highest the sandbox has a decision for), but the
// install call, fails with ENOSYS in the filter: a kernel newer than the
// sandbox's table may give such a number a path or a descriptor, which
// would run on the host behind the sentry's back (fail closed). The
// kernels the table knows answer ENOSYS for those numbers themselves.
func loadFilter(traps, notify []uintptr, filters []platform.ArgFilter, last uintptr) (int, error) {
	if last == 0 {
		return -1, fmt.Errorf("seccomp: no last known syscall number: every number would be refused")
	}
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return -1, fmt.Errorf("seccomp: new filter: %w", err)
	}
	defer f.Release()
	if err := f.SetBadArchAction(seccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS))); err != nil {
		return -1, fmt.Errorf("seccomp: bad-arch action: %w", err)
	}
	if err := f.SetNoNewPrivsBit(true); err != nil {
		return -1, fmt.Errorf("seccomp: no_new_privs: %w", err)
	}
	// A binary tree of syscall numbers instead of a linear list: every
	// untrapped call runs this filter, so its depth is their only cost.
	if err := f.SetOptimize(2); err != nil {
		return -1, fmt.Errorf("seccomp: optimize: %w", err)
	}
	for _, nr := range traps {
		if err := f.AddRule(seccomp.ScmpSyscall(nr), seccomp.ActTrace); err != nil {
			return -1, fmt.Errorf("seccomp: trap syscall %d: %w", nr, err)
		}
	}
	for _, nr := range append(notify, platform.SysInstallFD) {
		if err := f.AddRule(seccomp.ScmpSyscall(nr), seccomp.ActNotify); err != nil {
			return -1, fmt.Errorf("seccomp: notify syscall %d: %w", nr, err)
		}
	}
	// libseccomp-golang always loads with SECCOMP_FILTER_FLAG_TSYNC, but
	// the listener must be handed over by a thread the filter does not
	// cover: export the program and load it on this thread only.
	prog, err := exportBPF(f)
	if err != nil {
		return -1, err
	}
	pro := prologue(notify, filters, last)
	if len(pro) > 256 {
		// Its jumps are counted in a byte.
		return -1, fmt.Errorf("seccomp: %d instructions of prologue, more than a jump reaches", len(pro))
	}
	prog = append(pro, prog...)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return -1, fmt.Errorf("seccomp: load with a listener (Linux 5.19 or later is needed): %w", e)
	}
	return int(fd), nil
}

// prologue is the BPF that runs before libseccomp's program. It fails
// the x86-64 numbers past last but the install call with ENOSYS (libseccomp
// cannot say "every number above": its rules name numbers one by one);
// it lets a narrowed call run for its filter's Pass values
// (SECCOMP_RET_ALLOW) and stops (SECCOMP_RET_TRACE) a notified one for its
// Stop values: libseccomp cannot say "allow" under an allow default, nor
// "notify, but stop for these" (a call's unconditional rule wins over its
// conditional ones). The argument is compared on its lower 32 bits, as the
// kernel reads it, and only for x86-64 calls (libseccomp's program fails
// the others). A call the prologue does not decide falls through to
// libseccomp's program, which traps or notifies it.
func prologue(notify []uintptr, filters []platform.ArgFilter, last uintptr) []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jgt = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K
		ja  = unix.BPF_JMP | unix.BPF_JA
		ret = unix.BPF_RET | unix.BPF_K
		// struct seccomp_data: nr, arch, instruction_pointer, args[6].
		offNr, offArch, offArgs = 0, 4, 16
	)
	type block struct {
		af   platform.ArgFilter
		stop []uint32
	}
	var blocks []block
	// The arch's load and check, the number's load and the two checks
	// past last, the refusal, the trace, the allow.
	size := 8
	for _, af := range filters {
		b := block{af: af}
		if slices.Contains(notify, af.Nr) {
			b.stop = af.Stop
		}
		if len(af.Pass)+len(b.stop) > 0 {
			blocks = append(blocks, b)
			size += 3 + len(af.Pass) + len(b.stop)
		}
	}
	refuse, trace, allow, end := size-3, size-2, size-1, size
	p := make([]unix.SockFilter, 0, size)
	// emit appends an instruction whose jumps go to the absolute
	// positions jt and jf, 0 for the next instruction (BPF counts them
	// from the next instruction, in a byte: loadFilter refuses a
	// prologue longer than a byte reaches).
	emit := func(code uint16, k uint32, jt, jf int) {
		pc := len(p)
		p = append(p, unix.SockFilter{Code: code, K: k, Jt: uint8(max(jt-pc-1, 0)), Jf: uint8(max(jf-pc-1, 0))})
	}
	// after is where a block that ends at pos goes on: the next block,
	// or libseccomp's program after the last.
	after := func(pos int) int {
		if pos == refuse {
			return end
		}
		return pos
	}
	emit(ld, offArch, 0, 0)
	emit(jeq, unix.AUDIT_ARCH_X86_64, 0, end)
	emit(ld, offNr, 0, 0)
	emit(jgt, uint32(last), 0, after(len(p)+2))
	emit(jeq, platform.SysInstallFD, end, refuse)
	for _, b := range blocks {
		next := after(len(p) + 3 + len(b.af.Pass) + len(b.stop))
		// The number is in the accumulator here: a block that does not
		// match jumps to the next before it loads the argument.
		emit(jeq, uint32(b.af.Nr), 0, next)
		emit(ld, uint32(offArgs+8*b.af.Arg), 0, 0) // the lower half (little-endian)
		for _, v := range b.af.Pass {
			emit(jeq, v, allow, 0)
		}
		for _, v := range b.stop {
			emit(jeq, v, trace, 0)
		}
		pc := len(p)
		p = append(p, unix.SockFilter{Code: ja, K: uint32(end - pc - 1)})
	}
	p = append(p, unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)})
	p = append(p, unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_TRACE})
	p = append(p, unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW})
	return p
}

// exportBPF returns the filter's BPF program.
func exportBPF(f *seccomp.ScmpFilter) ([]unix.SockFilter, error) {
	mfd, err := unix.MemfdCreate("bpf", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	file := os.NewFile(uintptr(mfd), "bpf")
	defer file.Close()
	if err := f.ExportBPF(file); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(mfd, &st); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	const insn = int(unsafe.Sizeof(unix.SockFilter{}))
	if st.Size == 0 || int(st.Size)%insn != 0 {
		return nil, fmt.Errorf("seccomp: export: %d bytes of BPF", st.Size)
	}
	prog := make([]unix.SockFilter, int(st.Size)/insn)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&prog[0])), int(st.Size))
	if _, err := unix.Pread(mfd, buf, 0); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	return prog, nil
}
