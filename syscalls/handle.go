package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"sentry/platform"
	"sentry/sentry"
	"sentry/sentry/vfs"
)

// File handles (fs/fhandle.c) of the sentry's files. A tmpfs handle is 12
// bytes of type FILEID_INO32_GEN (shmem_encode_fh): the generation, then
// the inode number's low and high halves.
const (
	maxHandleSize = 128 // MAX_HANDLE_SZ
	// fileHeader is struct file_handle's fixed part: handle_bytes and
	// handle_type.
	fileHeader = 8
	// shmemHandleWords is the handle's length in 32-bit words.
	shmemHandleWords = 3
	fileIDIno32Gen   = 1
	fileIDInvalid    = 255

	atHandleMntIDUnique   = 0x001 // AT_HANDLE_MNT_ID_UNIQUE
	atHandleConnectable   = 0x002 // AT_HANDLE_CONNECTABLE
	atHandleFID           = 0x200 // AT_HANDLE_FID
	fileIDIsConnectable   = 0x10000
	fileIDIsDir           = 0x20000
	fileIDUserFlagsMask   = 0xffff0000
	fileIDValidUserFlags  = fileIDIsConnectable | fileIDIsDir
	nameToHandleFlagsMask = unix.AT_SYMLINK_FOLLOW | unix.AT_EMPTY_PATH | atHandleFID |
		atHandleMntIDUnique | atHandleConnectable
)

// NameToHandleAt is name_to_handle_at(dirfd, path, handle, mount_id,
// flags), served for the sentry's files as Linux serves a tmpfs's;
// host files pass through.
func NameToHandleAt(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	flags := uint32(args[4])
	if flags&^nameToHandleFlagsMask != 0 {
		return sentry.Err(unix.EINVAL)
	}
	// AT_HANDLE_CONNECTABLE asks for a handle to decode with a path, which
	// neither a FID nor an empty path's possibly disconnected file has.
	if flags&atHandleConnectable != 0 && flags&(atHandleFID|unix.AT_EMPTY_PATH) != 0 {
		return sentry.Err(unix.EINVAL)
	}
	r, err := resolveAt(c, int32(args[0]), args[1], flags&unix.AT_SYMLINK_FOLLOW != 0, flags&unix.AT_EMPTY_PATH != 0)
	m := r.Mount
	if r.file != nil {
		m = r.file.Mount
	}
	d, res, ok := existing(r, err)
	if !ok {
		return res
	}
	exp, ok := m.FS.(vfs.HandleExporter)
	if !ok || flags&atHandleConnectable != 0 {
		// exportfs_can_encode_fh: shmem_export_ops has no encode of a
		// connectable handle.
		return sentry.Err(unix.EOPNOTSUPP)
	}
	return encodeHandle(c, args[2], args[3], flags&atHandleMntIDUnique != 0, m, d, exp)
}

// encodeHandle is do_sys_name_to_handle for d in m.
func encodeHandle(c *sentry.Call, ufh, umnt uintptr, unique bool, m *vfs.Mount, d vfs.Dentry, exp vfs.HandleExporter) sentry.Result {
	var hdr [fileHeader + 4*shmemHandleWords]byte
	if err := c.CopyIn(ufh, hdr[:fileHeader]); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	size := binary.LittleEndian.Uint32(hdr[:4])
	if size > maxHandleSize {
		return sentry.Err(unix.EINVAL)
	}
	ret := unix.Errno(0)
	out := hdr[:fileHeader]
	binary.LittleEndian.PutUint32(hdr[:4], 4*shmemHandleWords)
	if size/4 < shmemHandleWords {
		// shmem_encode_fh: too small; the needed size is reported and
		// only the header copied.
		binary.LittleEndian.PutUint32(hdr[4:8], fileIDInvalid)
		ret = unix.EOVERFLOW
	} else {
		ino, gen := exp.EncodeHandle(d)
		binary.LittleEndian.PutUint32(hdr[4:8], fileIDIno32Gen)
		binary.LittleEndian.PutUint32(hdr[8:12], gen)
		binary.LittleEndian.PutUint32(hdr[12:16], uint32(ino))
		binary.LittleEndian.PutUint32(hdr[16:20], uint32(ino>>32))
		out = hdr[:]
	}
	// The mount id as the guest's mount lists and statx show it: an int,
	// or the 64-bit unique id.
	var id [8]byte
	binary.LittleEndian.PutUint64(id[:], m.ID)
	idLen := 4
	if unique {
		idLen = 8
	}
	if err := c.CopyOut(umnt, id[:idLen]); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	if err := c.CopyOut(ufh, out); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	if ret != 0 {
		return sentry.Err(ret)
	}
	return sentry.Ret(0)
}

// OpenByHandleAt is open_by_handle_at(mount_fd, handle, flags): the handle
// is decoded on mount_fd's file system (the working directory's for
// AT_FDCWD), as handle_to_path does. On a sentry mount the sentry decodes
// it in its own tree, so a handle never reaches the host's decoder with a
// placeholder (which would open files of the sentry's store by number);
// a host mount_fd passes, unless it is a descriptor of a sentry store,
// which the guest cannot have come by as a virtual fd.
func OpenByHandleAt(c *sentry.Call, args *platform.SyscallArgs) sentry.Result {
	mountFD := int32(args[0])
	var m *vfs.Mount
	var anchor vfs.Dentry
	switch {
	case mountFD == unix.AT_FDCWD:
		cwd := c.FSContext().Cwd()
		if cwd.IsHost() {
			return sentry.Pass()
		}
		m, anchor = cwd.Mount, cwd.Dentry
	default:
		f := c.FDTable().Get(mountFD)
		if f == nil {
			if onSentryStore(c, mountFD) {
				return sentry.Err(errUnserved)
			}
			return sentry.Pass()
		}
		m, anchor = f.Mount, f.Dentry
		f.DecRef()
	}
	var hdr [fileHeader]byte
	if err := c.CopyIn(args[1], hdr[:]); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	size := binary.LittleEndian.Uint32(hdr[:4])
	typ := int32(binary.LittleEndian.Uint32(hdr[4:]))
	if size > maxHandleSize || size == 0 {
		return sentry.Err(unix.EINVAL)
	}
	if typ < 0 || uint32(typ)&fileIDUserFlagsMask&^fileIDValidUserFlags != 0 {
		return sentry.Err(unix.EINVAL)
	}
	// may_decode_fh, after handle_to_path has checked the header:
	// decoding a handle bypasses every directory's search permission.
	if !c.Creds().Capable(vfs.CapDacReadSearch) {
		return sentry.Err(unix.EPERM)
	}
	var raw [maxHandleSize]byte
	if err := c.CopyIn(args[1]+fileHeader, raw[:size]); err != nil {
		return sentry.Err(unix.EFAULT)
	}
	exp, ok := m.FS.(vfs.HandleExporter)
	if !ok || size/4 < shmemHandleWords {
		// shmem_fh_to_dentry ignores the type but wants three words.
		return sentry.Err(unix.ESTALE)
	}
	gen := binary.LittleEndian.Uint32(raw[0:])
	ino := uint64(binary.LittleEndian.Uint32(raw[4:])) | uint64(binary.LittleEndian.Uint32(raw[8:]))<<32
	d, ok := exp.DecodeHandle(ino, gen)
	if !ok {
		return sentry.Err(unix.ESTALE)
	}
	isDir := d.Inode().Mode()&unix.S_IFMT == unix.S_IFDIR
	if uint32(typ)&fileIDIsDir != 0 && !isDir {
		// EXPORT_FH_DIR_ONLY.
		return sentry.Err(unix.ESTALE)
	}
	if uint32(typ)&fileIDIsConnectable != 0 && !under(d, anchor) {
		// HANDLE_CHECK_SUBTREE: a connectable handle opens only what
		// mount_fd's path reaches.
		return sentry.Err(unix.ESTALE)
	}
	// do_handle_open -> file_open_root(path, "", flags): build_open_flags,
	// then the open of the file itself.
	flags := uint32(args[2]) & validOpenFlags
	if flags&unix.O_PATH != 0 {
		flags &= unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_PATH | unix.O_CLOEXEC
	}
	if flags&unix.O_TMPFILE&^unix.O_DIRECTORY != 0 {
		// do_tmpfile in the decoded directory is not served.
		return sentry.Err(errUnserved)
	}
	return openExisting(c, m, d, flags, false)
}

// under reports whether d is anchor or below it (is_subdir).
func under(d, anchor vfs.Dentry) bool {
	for ; d != nil; d = d.Parent() {
		if d == anchor {
			return true
		}
	}
	return false
}

// onSentryStore reports whether the guest's host fd fd is a file of a
// sentry mount's store (a placeholder the guest holds behind the
// sentry's back): the host would act on the store itself, past the
// sentry's names and permissions (a handle decoded on it opens any of its
// files by number; a path relative to it reaches the store's root).
func onSentryStore(c *sentry.Call, fd int32) bool {
	if fd < 0 {
		return false
	}
	return c.Kernel().VFS.OnStore(unix.AT_FDCWD, c.FDLink(fd))
}
