package syscalls

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// Fstatfs is fstatfs(fd, buf) on a virtual fd: the mount's figures
// (TMPFS_MAGIC).
func Fstatfs(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	f := c.FDTable().Get(int32(args[0]))
	if f == nil {
		return sentry.Pass()
	}
	defer f.DecRef()
	return statfsTo(c, f.Mount, args[1])
}

// Statfs is statfs(path, buf).
func Statfs(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	r, err := resolveAt(c, unix.AT_FDCWD, args[0], true, false)
	if err != nil {
		return sentry.ErrOf(err)
	}
	if r.host {
		return sentry.Pass()
	}
	if r.Dentry == nil {
		return sentry.Err(unix.ENOENT)
	}
	return statfsTo(c, r.Mount, args[1])
}

func statfsTo(c *sentry.Call, m *vfs.Mount, buf uintptr) sentry.Result {
	var st unix.Statfs_t
	m.FS.Statfs(&st)
	if m.Parent != nil {
		// A guest's mount: its flags (flags_by_mnt, ST_VALID).
		f := m.Flags()
		st.Flags = stValid | int64(f&^vfs.MountRelatime)
		if f&vfs.MountRelatime != 0 {
			// ST_RELATIME is not MS_RELATIME's bit.
			st.Flags |= unix.ST_RELATIME
		}
	}
	if err := c.CopyOut(buf, unsafe.Slice((*byte)(unsafe.Pointer(&st)), unsafe.Sizeof(st))); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	return sentry.Ret(0)
}

// fileFor returns the description behind a virtual fd with a reference;
// otherwise ok is false and res is the answer: pass through for a host fd,
// EBADF for an O_PATH description (fdget refuses FMODE_PATH files).
func fileFor(c *sentry.Call, fd int32) (f *vfs.FileDescription, res sentry.Result, ok bool) {
	f = c.FDTable().Get(fd)
	if f == nil {
		return nil, sentry.Pass(), false
	}
	if f.IsPath() {
		f.DecRef()
		return nil, sentry.Err(unix.EBADF), false
	}
	return f, res, true
}

// stValid is ST_VALID (statfs_by_dentry sets it).
const stValid = 0x20
