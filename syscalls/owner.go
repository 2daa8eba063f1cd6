package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
)

// A descriptor's owner (fcntl F_SETOWN, F_SETOWN_EX; ioctl FIOSETOWN and
// SIOCSPGRP on a socket) is the process, thread or process group that gets
// its SIGIO and SIGURG, or the signal F_SETSIG names, SIGKILL included. The
// kernel checks the owner's credentials only when it sends (sigio_perm),
// and lets a sender whose effective uid is the host's root signal anyone:
// a root guest, root of its own user namespace but uid 0 on the host, would
// reach every sandbox's sentry this way, which kill no longer lets it
// (platform.SentryUID). So a guest may not make a sentry, or a process
// group that holds one, the owner of a descriptor: EPERM, where Linux would
// accept it. Its own sentry is one, and so is the process group a guest
// started from a shell shares with its sentry.

// The socket requests that set the owner (asm-generic/sockios.h).
const (
	fioSetOwn = 0x8901
	siocSPGRP = 0x8902
)

// fOwnerTID, fOwnerPID and fOwnerPGRP are struct f_owner_ex's types.
const (
	fOwnerTID  = 0
	fOwnerPID  = 1
	fOwnerPGRP = 2
)

// ownerRefused reports whether the owner a guest names is a sentry (pid,
// a process or a thread) or a process group that holds one (group). No
// owner (0) is always allowed.
func ownerRefused(pid int32, group bool) bool {
	switch {
	case pid <= 0:
		return false
	case group:
		return platform.GroupHoldsSentry(pid)
	default:
		return platform.IsSentry(pid)
	}
}

// setOwnerRefused checks the owner of fcntl(fd, cmd, arg) for F_SETOWN
// (arg the pid, or minus the process group) and F_SETOWN_EX (arg a struct
// f_owner_ex): whether the call must fail with EPERM. A struct the guest
// cannot pass, or a type the kernel refuses, is the kernel's to answer.
// The struct is read before the kernel reads it again: a second thread of
// the guest that changes it in between names an owner unchecked (the
// race of every argument in guest memory the sentry checks and passes).
func setOwnerRefused(c *sentry.Call, cmd int, arg uintptr) bool {
	if cmd == unix.F_SETOWN {
		v := int32(arg)
		if v < 0 {
			return v != -1<<31 && ownerRefused(-v, true)
		}
		return ownerRefused(v, false)
	}
	var b [8]byte
	if c.CopyIn(arg, b[:]) != nil {
		return false
	}
	typ, pid := int32(binary.LittleEndian.Uint32(b[:4])), int32(binary.LittleEndian.Uint32(b[4:]))
	switch typ {
	case fOwnerTID, fOwnerPID:
		return ownerRefused(pid, false)
	case fOwnerPGRP:
		return ownerRefused(pid, true)
	}
	return false
}

// sockOwnerRefused is setOwnerRefused for ioctl FIOSETOWN and SIOCSPGRP,
// whose argument points at the int F_SETOWN takes by value (sock_ioctl's
// f_setown).
func sockOwnerRefused(c *sentry.Call, arg uintptr) bool {
	var b [4]byte
	if c.CopyIn(arg, b[:]) != nil {
		return false
	}
	return setOwnerRefused(c, unix.F_SETOWN, uintptr(binary.LittleEndian.Uint32(b[:])))
}

// refuseOwner is the EPERM of a refused owner, or EBADF first, as the
// kernel checks the descriptor before the owner.
func refuseOwner(c *sentry.Call, fd int32) sentry.Result {
	var st unix.Stat_t
	if unix.Lstat(c.FDLink(fd), &st) != nil {
		return sentry.Err(unix.EBADF)
	}
	return sentry.Err(unix.EPERM)
}
