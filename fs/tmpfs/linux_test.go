package tmpfs

// Differential tests: the same operations run on a directory of the host's
// real tmpfs (/dev/shm, or a private tmpfs mount for the limit tests) and on
// this tmpfs, and every result is compared: errors, data read, and after
// each step the stat fields of every watched path (mode, nlink, size,
// blocks, blksize, uid, gid, inode identity, which of atime/mtime/ctime
// changed) and the listing of every watched directory.

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sentry/sentry/vfs"
)

var debugTimes = os.Getenv("TMPFS_DEBUG_TIMES") != ""

type step struct {
	op    string
	a, b  string
	mode  uint32
	flags uint32
	off   int64
	n     int
	cred  *vfs.Credentials
}

// side is one implementation under comparison.
type side interface {
	run(s step) ([]byte, error)
	stat(p string) (unix.Stat_t, error)
	list(p string) ([]dirent, error)
	statfs(st *unix.Statfs_t)
	close()
}

type dirent struct {
	name string
	typ  uint8
	ino  uint64
}

func pattern(n int, off int64) []byte {
	b := make([]byte, n)
	for k := range b {
		b[k] = byte(int64(k)+off)%251 + 1
	}
	return b
}

// realSide runs steps with system calls under base.
type realSide struct {
	base   string
	fds    map[string]int
	groups []int
}

func (r *realSide) path(p string) string {
	if p == "" {
		return r.base
	}
	return r.base + "/" + p
}

// as runs f with c as the thread's fsuid, fsgid, groups and effective
// capabilities (those of c.Caps the test process has); the calling
// goroutine is locked to its thread by the test.
func (r *realSide) as(c *vfs.Credentials, f func() error) error {
	var saved [2]unix.CapUserData
	if err := capCall(unix.SYS_CAPGET, &saved); err != nil {
		panic(err)
	}
	eff := uint64(saved[0].Effective) | uint64(saved[1].Effective)<<32
	perm := uint64(saved[0].Permitted) | uint64(saved[1].Permitted)<<32
	if c == nil || c.UID == 0 && c.GID == 0 && len(c.Groups) == 0 && uint64(c.Caps)&perm == eff {
		return f()
	}
	gs := make([]int, len(c.Groups))
	for k, g := range c.Groups {
		gs[k] = int(g)
	}
	if err := unix.Setgroups(gs); err != nil {
		panic(err)
	}
	unix.Setfsgid(int(c.GID))
	unix.Setfsuid(int(c.UID))
	want := saved
	caps := uint64(c.Caps) & perm
	want[0].Effective, want[1].Effective = uint32(caps), uint32(caps>>32)
	if err := capCall(unix.SYS_CAPSET, &want); err != nil {
		panic(err)
	}
	err := f()
	if err := capCall(unix.SYS_CAPSET, &saved); err != nil {
		panic(err)
	}
	unix.Setfsuid(0)
	unix.Setfsgid(0)
	if err := unix.Setgroups(r.groups); err != nil {
		panic(err)
	}
	return err
}

// capCall is capget or capset (version 3) of the calling thread alone.
func capCall(sysno uintptr, d *[2]unix.CapUserData) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if _, _, e := unix.RawSyscall(sysno, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&d[0])), 0); e != 0 {
		return e
	}
	return nil
}

func (r *realSide) withFile(p string, flags int, f func(fd int) error) error {
	fd, err := unix.Open(r.path(p), flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return f(fd)
}

func (r *realSide) run(s step) ([]byte, error) {
	var out []byte
	err := r.as(s.cred, func() error {
		a, b := r.path(s.a), r.path(s.b)
		switch s.op {
		case "create":
			fd, err := unix.Open(a, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, s.mode)
			if err == nil {
				unix.Close(fd)
			}
			return err
		case "mkdir":
			return unix.Mkdir(a, s.mode)
		case "symlink":
			return unix.Symlink(s.b, a)
		case "link":
			return unix.Link(a, b)
		case "unlink":
			return unix.Unlink(a)
		case "rmdir":
			return unix.Rmdir(a)
		case "rename":
			return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, uint(s.flags))
		case "write":
			return r.withFile(s.a, unix.O_WRONLY, func(fd int) error {
				n, err := unix.Pwrite(fd, pattern(s.n, s.off), s.off)
				out = []byte(fmt.Sprint(max(n, 0)))
				return err
			})
		case "append":
			return r.withFile(s.a, unix.O_WRONLY|unix.O_APPEND, func(fd int) error {
				n, err := unix.Write(fd, pattern(s.n, 0))
				off, _ := unix.Seek(fd, 0, 1)
				out = []byte(fmt.Sprint(n, off))
				return err
			})
		case "read":
			return r.withFile(s.a, unix.O_RDONLY, func(fd int) error {
				buf := make([]byte, s.n)
				n, err := unix.Pread(fd, buf, s.off)
				if n > 0 {
					out = buf[:n]
				}
				return err
			})
		case "truncate":
			return unix.Truncate(a, s.off)
		case "ftruncate":
			return r.withFile(s.a, unix.O_WRONLY, func(fd int) error { return unix.Ftruncate(fd, s.off) })
		case "otrunc":
			return r.withFile(s.a, unix.O_WRONLY|unix.O_TRUNC, func(int) error { return nil })
		case "readlink":
			buf := make([]byte, 8192)
			n, err := unix.Readlink(a, buf)
			if err == nil {
				out = buf[:n]
			}
			return err
		case "readdir":
			_, err := r.list(s.a)
			return err
		case "chmod":
			return unix.Fchmodat(unix.AT_FDCWD, a, s.mode, 0)
		case "chown":
			return unix.Lchown(a, int(s.off), s.n)
		case "open":
			fd, err := unix.Open(a, unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err == nil {
				r.fds[s.a] = fd
			}
			return err
		case "fwrite":
			n, err := unix.Pwrite(r.fds[s.a], pattern(s.n, s.off), s.off)
			out = []byte(fmt.Sprint(max(n, 0)))
			return err
		case "close":
			err := unix.Close(r.fds[s.a])
			delete(r.fds, s.a)
			return err
		case "xattr":
			// user.<b> = n bytes (removed when n < 0), flags.
			if s.n < 0 {
				return unix.Lremovexattr(a, "user."+s.b)
			}
			return unix.Lsetxattr(a, "user."+s.b, pattern(s.n, 0), int(s.flags))
		case "access":
			return unix.Faccessat2(unix.AT_FDCWD, a, s.mode, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW)
		case "setmode":
			return unix.Fchmodat(unix.AT_FDCWD, a, s.mode, 0)
		case "setowner":
			return unix.Lchown(a, int(s.off), s.n)
		case "touch":
			return unix.UtimesNanoAt(unix.AT_FDCWD, a, nil, unix.AT_SYMLINK_NOFOLLOW)
		case "settime":
			ts := []unix.Timespec{{Sec: s.off}, {Sec: s.off}}
			return unix.UtimesNanoAt(unix.AT_FDCWD, a, ts, unix.AT_SYMLINK_NOFOLLOW)
		case "mknod":
			return unix.Mknod(a, s.mode, int(s.off))
		case "trunc":
			return r.withFile(s.a, unix.O_WRONLY, func(fd int) error { return unix.Ftruncate(fd, int64(s.n)) })
		}
		panic("unknown op " + s.op)
	})
	return out, err
}

func (r *realSide) stat(p string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Lstat(r.path(p), &st)
	return st, err
}

func (r *realSide) list(p string) ([]dirent, error) {
	fd, err := unix.Open(r.path(p), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var ents []dirent
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return ents, nil
		}
		for off := 0; off < n; {
			rec := buf[off:]
			ino := *(*uint64)(unsafe.Pointer(&rec[0]))
			reclen := int(*(*uint16)(unsafe.Pointer(&rec[16])))
			name := rec[19:reclen]
			name = name[:bytes.IndexByte(name, 0)]
			ents = append(ents, dirent{string(name), rec[18], ino})
			off += reclen
		}
	}
}

func (r *realSide) statfs(st *unix.Statfs_t) {
	if err := unix.Statfs(r.base, st); err != nil {
		panic(err)
	}
}

func (r *realSide) close() {
	for _, fd := range r.fds {
		unix.Close(fd)
	}
}

// ourSide runs steps on a Filesystem, emulating the checks the caller
// (path walk, open) makes before calling it.
type ourSide struct {
	fs   *Filesystem
	held map[string]vfs.Inode
}

// walkAs resolves p checking search permission on every directory passed,
// as link_path_walk's may_lookup.
func (o *ourSide) walkAs(p string, c *vfs.Credentials) (vfs.Dentry, error) {
	d := o.fs.Root()
	for _, comp := range strings.Split(p, "/") {
		if comp == "" {
			continue
		}
		if !d.Inode().(*inode).isDir() {
			return nil, unix.ENOTDIR
		}
		if err := d.Inode().CheckPermission(c, vfs.MayExec); err != nil {
			return nil, err
		}
		nd, err := d.Lookup(comp)
		if err != nil {
			return nil, err
		}
		d = nd
	}
	return d, nil
}

func (o *ourSide) parentAs(p string, c *vfs.Credentials) (vfs.Dentry, string, error) {
	dir, name := "", p
	if k := strings.LastIndexByte(p, '/'); k >= 0 {
		dir, name = p[:k], p[k+1:]
	}
	d, err := o.walkAs(dir, c)
	if err == nil {
		if !d.Inode().(*inode).isDir() {
			return nil, "", unix.ENOTDIR
		}
		err = d.Inode().CheckPermission(c, vfs.MayExec)
	}
	return d, name, err
}

// openAs is may_open for a regular file or directory.
func (o *ourSide) openAs(p string, c *vfs.Credentials, mask uint32) (vfs.Inode, error) {
	d, err := o.walkAs(p, c)
	if err != nil {
		return nil, err
	}
	i := d.Inode()
	if i.(*inode).isSymlink() {
		return nil, unix.ELOOP
	}
	if i.(*inode).isDir() && mask&vfs.MayWrite != 0 {
		return nil, unix.EISDIR
	}
	return i, i.CheckPermission(c, mask)
}

func (o *ourSide) run(s step) ([]byte, error) {
	c := s.cred
	if c == nil {
		c = rootCreds
	}
	switch s.op {
	case "create", "mkdir", "symlink", "unlink", "rmdir":
		d, name, err := o.parentAs(s.a, c)
		if err != nil {
			return nil, err
		}
		switch s.op {
		case "create":
			_, err = d.Create(name, s.mode, c)
		case "mkdir":
			_, err = d.Mkdir(name, s.mode, c)
		case "symlink":
			_, err = d.Symlink(name, s.b, c)
		case "unlink":
			err = d.Unlink(name, c)
		case "rmdir":
			err = d.Rmdir(name, c)
		}
		return nil, err
	case "link":
		t, err := o.walkAs(s.a, c)
		if err != nil {
			return nil, err
		}
		d, name, err := o.parentAs(s.b, c)
		if err != nil {
			return nil, err
		}
		_, err = d.Link(name, t, c)
		return nil, err
	case "rename":
		od, oname, err := o.parentAs(s.a, c)
		if err != nil {
			return nil, err
		}
		nd, nname, err := o.parentAs(s.b, c)
		if err != nil {
			return nil, err
		}
		return nil, od.Rename(oname, nd, nname, s.flags, c)
	case "write", "append", "ftruncate", "otrunc":
		i, err := o.openAs(s.a, c, vfs.MayWrite)
		if err != nil {
			return nil, err
		}
		switch s.op {
		case "write":
			n, err := i.WriteAt(pattern(s.n, s.off), s.off, c)
			return []byte(fmt.Sprint(n)), err
		case "append":
			n, end, err := i.Append(pattern(s.n, 0), c)
			return []byte(fmt.Sprint(n, end)), err
		case "ftruncate":
			// Untrapped in the sandbox: the host's, on the placeholder.
			fd, err := i.OpenHost(unix.O_WRONLY)
			if err != nil {
				return nil, err
			}
			defer unix.Close(fd)
			return nil, unix.Ftruncate(fd, s.off)
		default:
			// O_TRUNC: through the open's placeholder.
			fd, err := i.OpenHost(unix.O_WRONLY)
			if err != nil {
				return nil, err
			}
			defer unix.Close(fd)
			_, err = i.TruncateOpened(fd, nil)
			return nil, err
		}
	case "truncate":
		i, err := o.openAs(s.a, c, vfs.MayWrite)
		if err != nil {
			return nil, err
		}
		return nil, i.Truncate(s.off, nil)
	case "read":
		i, err := o.openAs(s.a, c, vfs.MayRead)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, s.n)
		n, err := i.ReadAt(buf, s.off)
		if n > 0 {
			return buf[:n], err
		}
		return nil, err
	case "readlink":
		d, err := o.walkAs(s.a, c)
		if err != nil {
			return nil, err
		}
		t, err := d.Inode().Readlink()
		if err != nil {
			return nil, err
		}
		return []byte(t), nil
	case "readdir":
		_, err := o.list(s.a)
		return nil, err
	case "chmod":
		d, err := o.walkAs(s.a, c)
		if err == nil {
			_, uid, gid := d.Inode().(*inode).attrs()
			setAttr(d, s.mode, uid, gid)
		}
		return nil, err
	case "chown":
		d, err := o.walkAs(s.a, c)
		if err == nil {
			setAttr(d, d.Inode().Mode(), uint32(s.off), uint32(s.n))
		}
		return nil, err
	case "open":
		i, err := o.openAs(s.a, c, vfs.MayRead|vfs.MayWrite)
		if err == nil {
			i.IncRef()
			o.held[s.a] = i
		}
		return nil, err
	case "fwrite":
		n, err := o.held[s.a].WriteAt(pattern(s.n, s.off), s.off, c)
		return []byte(fmt.Sprint(n)), err
	case "close":
		o.held[s.a].DecRef()
		delete(o.held, s.a)
		return nil, nil
	case "xattr":
		d, err := o.walkAs(s.a, c)
		if err != nil {
			return nil, err
		}
		var v []byte
		if s.n >= 0 {
			v = pattern(s.n, 0)
		}
		return nil, d.Inode().(vfs.XattrInode).Setxattr("user."+s.b, v, s.flags)
	case "access":
		d, err := o.walkAs(s.a, c)
		if err != nil {
			return nil, err
		}
		return nil, d.Inode().CheckPermission(c, s.mode)
	case "setmode", "setowner", "touch", "settime":
		d, err := o.walkAs(s.a, c)
		if err != nil {
			return nil, err
		}
		a := &vfs.Attr{}
		switch s.op {
		case "setmode":
			a.Mask, a.Mode = vfs.AttrMode, s.mode
		case "setowner":
			if s.off != -1 {
				a.Mask, a.UID = a.Mask|vfs.AttrUID, uint32(s.off)
			}
			if s.n != -1 {
				a.Mask, a.GID = a.Mask|vfs.AttrGID, uint32(s.n)
			}
		case "touch":
			a.Mask, a.AtimeNow, a.MtimeNow = vfs.AttrAtime|vfs.AttrMtime, true, true
		case "settime":
			a.Mask, a.Atime, a.Mtime = vfs.AttrAtime|vfs.AttrMtime, s.off*1e9, s.off*1e9
		}
		return nil, d.Inode().(vfs.AttrSetter).SetAttr(c, a)
	case "mknod":
		d, name, err := o.parentAs(s.a, c)
		if err != nil {
			return nil, err
		}
		_, err = d.(vfs.Mknoder).Mknod(name, s.mode, uint64(s.off), c)
		return nil, err
	case "trunc":
		i, err := o.openAs(s.a, c, vfs.MayWrite)
		if err != nil {
			return nil, err
		}
		return nil, i.Truncate(int64(s.n), c)
	}
	panic("unknown op " + s.op)
}

func (o *ourSide) stat(p string) (unix.Stat_t, error) {
	d, err := walk(o.fs, p)
	if err != nil {
		return unix.Stat_t{}, err
	}
	var st unix.Stat_t
	d.Inode().Stat(&st)
	return st, nil
}

func (o *ourSide) list(p string) ([]dirent, error) {
	d, err := walk(o.fs, p)
	if err != nil {
		return nil, err
	}
	var ents []dirent
	err = d.IterDirents(0, func(ino uint64, next int64, typ uint8, name string) bool {
		ents = append(ents, dirent{name, typ, ino})
		return true
	})
	return ents, err
}

func (o *ourSide) statfs(st *unix.Statfs_t) { o.fs.Statfs(st) }

func (o *ourSide) close() {
	for _, i := range o.held {
		i.DecRef()
	}
}

// view is what is compared of one path after a step.
type view struct {
	err                 error
	mode, uid, gid      uint32
	nlink               uint64
	size, blocks, bsize int64
	inoLabel            string
	ino                 uint64
	aChanged, mChanged  bool
	cChanged            bool
	ents                string
}

type differ struct {
	t         *testing.T
	real, our side
	watch     []string
	absIno    bool // compare inode numbers themselves (private mount)
	statfs    bool // compare statfs counters (private mount)
	prev      [2]map[string]unix.Stat_t
}

func (df *differ) views(k int, s side) map[string]view {
	views := make(map[string]view)
	label := make(map[uint64]string)
	for _, p := range df.watch {
		st, err := s.stat(p)
		if err != nil {
			views[p] = view{err: err}
			delete(df.prev[k], p)
			continue
		}
		if _, ok := label[st.Ino]; !ok {
			label[st.Ino] = p
		}
		v := view{
			mode: st.Mode, uid: st.Uid, gid: st.Gid, nlink: st.Nlink,
			size: st.Size, blocks: st.Blocks, bsize: st.Blksize,
			inoLabel: label[st.Ino],
		}
		if df.absIno {
			v.ino = st.Ino
		}
		if debugTimes && p == "" {
			df.t.Logf("side %d: a=%v m=%v c=%v", k, st.Atim, st.Mtim, st.Ctim)
		}
		if old, ok := df.prev[k][p]; ok {
			v.aChanged = old.Atim != st.Atim
			v.mChanged = old.Mtim != st.Mtim
			v.cChanged = old.Ctim != st.Ctim
		}
		df.prev[k][p] = st
		views[p] = v
	}
	// Listings, after the stats so that the atime they touch shows in
	// the next step on both sides alike.
	for _, p := range df.watch {
		if v := views[p]; v.err == nil && v.mode&unix.S_IFMT == unix.S_IFDIR {
			ents, err := s.list(p)
			if err != nil {
				v.ents = "error: " + err.Error()
			} else {
				var parts []string
				for _, e := range ents {
					switch e.name {
					case ".":
						if l := label[e.ino]; l != p {
							parts = append(parts, fmt.Sprintf(".=%q", l))
						}
					case "..":
						if p != "" {
							parts = append(parts, fmt.Sprintf("..=%q", label[e.ino]))
						}
					default:
						parts = append(parts, fmt.Sprintf("%s/%d/%q", e.name, e.typ, label[e.ino]))
					}
				}
				slices.Sort(parts)
				v.ents = strings.Join(parts, " ")
			}
			views[p] = v
		}
	}
	return views
}

func (df *differ) run(steps []step) {
	t := df.t
	df.prev = [2]map[string]unix.Stat_t{{}, {}}
	df.views(0, df.real)
	df.views(1, df.our)
	for n, s := range steps {
		// Let the clock move so that time changes are visible on both
		// sides (the kernel's coarse clock ticks every few ms).
		time.Sleep(10 * time.Millisecond)
		rout, rerr := df.real.run(s)
		oout, oerr := df.our.run(s)
		what := fmt.Sprintf("step %d %+v", n, s)
		if rerr != oerr {
			t.Errorf("%s: error: linux %v, tmpfs %v", what, rerr, oerr)
		}
		errnoOf(t, oerr)
		if !bytes.Equal(rout, oout) {
			t.Errorf("%s: output: linux %q, tmpfs %q", what, trunc(rout), trunc(oout))
		}
		rv, ov := df.views(0, df.real), df.views(1, df.our)
		for _, p := range df.watch {
			if rv[p] != ov[p] {
				t.Errorf("%s: path %q:\nlinux %+v\ntmpfs %+v", what, p, rv[p], ov[p])
			}
		}
		if df.statfs {
			var rs, ost unix.Statfs_t
			df.real.statfs(&rs)
			df.our.statfs(&ost)
			rs.Fsid, ost.Fsid = unix.Fsid{}, unix.Fsid{}
			if rs != ost {
				t.Errorf("%s: statfs:\nlinux %+v\ntmpfs %+v", what, rs, ost)
			}
		}
	}
}

func trunc(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// requireShm skips unless /dev/shm is a tmpfs.
func requireShm(t *testing.T) {
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Skip("/dev/shm is not a tmpfs: the differential test requires Linux's tmpfs there to compare against")
	}
	if os.Geteuid() != 0 {
		t.Skip("differential tests switch fsuid and chown, which needs root")
	}
}

// newDiffer prepares both sides with root dirs of mode 01777 owned by 0:0.
// The test goroutine is locked to its thread, whose credentials the real
// side changes.
func newDiffer(t *testing.T, base string, fs *Filesystem, watch []string) *differ {
	runtime.LockOSThread() // never unlocked: the thread dies with the test goroutine
	old := unix.Umask(0)
	t.Cleanup(func() { unix.Umask(old) })
	groups, err := unix.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	r := &realSide{base: base, fds: map[string]int{}, groups: groups}
	o := &ourSide{fs: fs, held: map[string]vfs.Inode{}}
	t.Cleanup(func() { r.close(); o.close() })
	return &differ{t: t, real: r, our: o, watch: append([]string{""}, watch...)}
}

func shmDiffer(t *testing.T, watch []string, steps []step) *differ {
	requireShm(t)
	base, err := os.MkdirTemp("/dev/shm", "tmpfs-diff-")
	if err != nil {
		t.Fatal(err)
	}
	shmDir := base
	t.Cleanup(func() { os.RemoveAll(shmDir) })
	// Steps run as other users need to reach base. /dev/shm is shared
	// with the rest of the machine and may have lost its usual 01777;
	// then run on a private tmpfs mount, the same kernel code.
	var shm unix.Stat_t
	if err := unix.Stat("/dev/shm", &shm); err == nil && shm.Mode&0001 == 0 && slices.ContainsFunc(steps, func(s step) bool { return s.cred != nil && s.cred.UID != 0 }) {
		mnt, err := os.MkdirTemp("", "tmpfs-diff-mnt-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(mnt) })
		base = mnt
		if err := unix.Mount("tmpfs", base, "tmpfs", 0, "mode=1777"); err != nil {
			t.Skipf("/dev/shm is not searchable by other users (mode %o) and a private tmpfs cannot be mounted: %v", shm.Mode&07777, err)
		}
		t.Cleanup(func() { unix.Unmount(base, unix.MNT_DETACH) })
		t.Logf("/dev/shm has mode %o; running on a private tmpfs at %s", shm.Mode&07777, base)
	}
	if err := unix.Chmod(base, 01777); err != nil {
		t.Fatal(err)
	}
	return newDiffer(t, base, newTestFS(t, Options{RootMode: 01777}), watch)
}

func TestLinuxDifferential(t *testing.T) {
	long := strings.Repeat("x", 200)
	tests := []struct {
		name  string
		watch []string
		steps []step
	}{
		{
			name:  "files and holes",
			watch: []string{"f", "g", "h"},
			steps: []step{
				{op: "create", a: "f", mode: 0644},
				{op: "create", a: "f", mode: 0600},
				{op: "write", a: "f", off: 0, n: 10},
				{op: "read", a: "f", off: 0, n: 100},
				{op: "read", a: "f", off: 0, n: 100},
				{op: "read", a: "f", off: 100, n: 10},
				{op: "read", a: "f", off: 3, n: 0},
				{op: "write", a: "f", off: 1 << 20, n: 1},
				{op: "read", a: "f", off: 4090, n: 20},
				{op: "write", a: "f", off: 4000, n: 10000},
				{op: "write", a: "f", off: 0, n: 0},
				{op: "ftruncate", a: "f", off: 5000},
				{op: "read", a: "f", off: 4990, n: 100},
				{op: "ftruncate", a: "f", off: 5000},
				{op: "truncate", a: "f", off: 100000},
				{op: "read", a: "f", off: 4990, n: 100},
				{op: "truncate", a: "f", off: 4096},
				{op: "ftruncate", a: "f", off: 4097},
				{op: "read", a: "f", off: 4090, n: 10},
				{op: "append", a: "f", n: 5},
				{op: "otrunc", a: "f"},
				{op: "otrunc", a: "f"},
				// truncate(2) of an empty file to 0 moves no time;
				// O_TRUNC and ftruncate do.
				{op: "truncate", a: "f", off: 0},
				{op: "ftruncate", a: "f", off: 0},
				{op: "append", a: "f", n: 8192},
				{op: "truncate", a: "f", off: 8192},
				{op: "create", a: "g", mode: 07777},
				{op: "write", a: "g", off: 8191, n: 2},
				{op: "write", a: "nope", n: 1},
				{op: "create", a: "nope/x", mode: 0644},
				{op: "create", a: "f/x", mode: 0644},
				{op: "truncate", a: "g", off: -1},
				{op: "read", a: "", n: 10},
				{op: "write", a: "", n: 10},
				{op: "truncate", a: "", off: 0},
				{op: "truncate", a: "g", off: 0},
				{op: "create", a: "h", mode: 0},
				{op: "read", a: "h", n: 10},
			},
		},
		{
			name:  "directories and links",
			watch: []string{"d", "d/e", "d/f", "d/g", "f", "l", "s", "t", "d/e/x"},
			steps: []step{
				{op: "mkdir", a: "d", mode: 0755},
				{op: "mkdir", a: "d", mode: 0755},
				{op: "mkdir", a: "d/e", mode: 07777},
				{op: "create", a: "d/f", mode: 0644},
				{op: "link", a: "d/f", b: "f"},
				{op: "link", a: "d/f", b: "d/g"},
				{op: "link", a: "d/f", b: "f"},
				{op: "link", a: "d", b: "l"},
				{op: "link", a: "nope", b: "l"},
				{op: "symlink", a: "s", b: "d/f"},
				{op: "symlink", a: "t", b: long},
				{op: "symlink", a: "s", b: "x"},
				{op: "readlink", a: "s"},
				{op: "readlink", a: "s"},
				{op: "readlink", a: "t"},
				{op: "readlink", a: "d/f"},
				{op: "readdir", a: "d"},
				{op: "readdir", a: "d"},
				{op: "unlink", a: "d/g"},
				{op: "unlink", a: "d"},
				{op: "unlink", a: "d/e"},
				{op: "unlink", a: "nope"},
				{op: "rmdir", a: "d"},
				{op: "rmdir", a: "d/f"},
				{op: "rmdir", a: "nope"},
				{op: "create", a: "d/e/x", mode: 0644},
				{op: "rmdir", a: "d/e"},
				{op: "unlink", a: "d/e/x"},
				{op: "rmdir", a: "d/e"},
				{op: "unlink", a: "f"},
				{op: "unlink", a: "s"},
				{op: "unlink", a: "t"},
				{op: "symlink", a: "t", b: strings.Repeat("y", 127)},
				{op: "symlink", a: "s", b: strings.Repeat("y", 128)},
				{op: "symlink", a: "l", b: strings.Repeat("y", 4095)},
				{op: "unlink", a: "l"},
				{op: "symlink", a: "l", b: strings.Repeat("y", 4096)},
				{op: "symlink", a: "l", b: ""},
			},
		},
		{
			name:  "rename",
			watch: []string{"a", "a/b", "a/b/c", "x", "y", "z", "e", "a/y", "a/z"},
			steps: []step{
				{op: "mkdir", a: "a", mode: 0755},
				{op: "mkdir", a: "a/b", mode: 0755},
				{op: "mkdir", a: "a/b/c", mode: 0755},
				{op: "create", a: "x", mode: 0644},
				{op: "create", a: "y", mode: 0600},
				{op: "mkdir", a: "e", mode: 0700},
				{op: "rename", a: "a", b: "a/b/c/d"},
				{op: "rename", a: "a", b: "a"},
				{op: "rename", a: "a/b", b: "a"},
				{op: "rename", a: "a/b/c", b: "a", flags: unix.RENAME_EXCHANGE},
				{op: "rename", a: "a", b: "a/b", flags: unix.RENAME_EXCHANGE},
				{op: "rename", a: "x", b: "e"},
				{op: "rename", a: "e", b: "x"},
				{op: "rename", a: "e", b: "a"},
				{op: "rename", a: "x", b: "y", flags: unix.RENAME_NOREPLACE},
				{op: "rename", a: "x", b: "q", flags: unix.RENAME_EXCHANGE},
				{op: "rename", a: "q", b: "x"},
				{op: "rename", a: "x", b: "y", flags: 8},
				{op: "rename", a: "x", b: "y", flags: unix.RENAME_EXCHANGE | unix.RENAME_NOREPLACE},
				{op: "rename", a: "x", b: "y"},
				{op: "rename", a: "y", b: "a/y"},
				{op: "create", a: "x", mode: 0644},
				{op: "link", a: "x", b: "z"},
				{op: "rename", a: "x", b: "z"},
				{op: "rename", a: "z", b: "a/y"},
				{op: "rename", a: "e", b: "a/b", flags: unix.RENAME_EXCHANGE},
				{op: "rename", a: "a/y", b: "e", flags: unix.RENAME_EXCHANGE},
				{op: "rename", a: "e", b: "a/b/c"},
				{op: "rename", a: "a/b", b: "e"},
				{op: "rename", a: "x", b: "a/z"},
				{op: "rename", a: "a/z", b: "a/y", flags: unix.RENAME_EXCHANGE},
				{op: "rename", a: "a/y", b: "a/y", flags: unix.RENAME_NOREPLACE},
				{op: "rename", a: "a", b: "a", flags: unix.RENAME_EXCHANGE},
			},
		},
		{
			name:  "unlinked while open",
			watch: []string{"f", "g"},
			steps: []step{
				{op: "create", a: "f", mode: 0644},
				{op: "write", a: "f", n: 100},
				{op: "open", a: "f"},
				{op: "link", a: "f", b: "g"},
				{op: "unlink", a: "f"},
				{op: "unlink", a: "g"},
				{op: "fwrite", a: "f", off: 10000, n: 10},
				{op: "close", a: "f"},
				{op: "create", a: "f", mode: 0644},
			},
		},
		{
			name:  "permissions",
			watch: []string{"p", "p/f", "p/g", "p/d", "s", "s/u", "s/o", "s/d", "sg", "sg/f", "sg/d", "sg/x", "sg/y", "sg/l", "q"},
			steps: []step{
				{op: "mkdir", a: "p", mode: 0755},
				{op: "chown", a: "p", off: 1000, n: 1000},
				{op: "create", a: "p/f", mode: 0640, cred: userCreds},
				{op: "create", a: "p/g", mode: 0640, cred: otherCreds},
				{op: "read", a: "p/f", n: 1, cred: otherCreds},
				{op: "read", a: "p/f", n: 1, cred: strangerCreds},
				{op: "write", a: "p/f", n: 1, cred: otherCreds},
				{op: "write", a: "p/f", n: 1, cred: userCreds},
				{op: "write", a: "p/f", n: 1, cred: rootCreds},
				{op: "chmod", a: "p/f", mode: 0400},
				{op: "write", a: "p/f", n: 1, cred: userCreds},
				{op: "chmod", a: "p/f", mode: 0046},
				{op: "write", a: "p/f", n: 1, cred: userCreds},
				{op: "read", a: "p/f", n: 1, cred: otherCreds},
				{op: "read", a: "p/f", n: 1, cred: strangerCreds},
				{op: "mkdir", a: "p/d", mode: 0700, cred: userCreds},
				{op: "unlink", a: "p/f", cred: otherCreds},
				{op: "chmod", a: "p", mode: 0775},
				{op: "unlink", a: "p/f", cred: strangerCreds},
				{op: "chmod", a: "p", mode: 0577},
				{op: "create", a: "p/g", mode: 0644, cred: userCreds},
				{op: "create", a: "p/h", mode: 0644, cred: userCreds},
				{op: "chmod", a: "p", mode: 0677},
				{op: "create", a: "p/h", mode: 0644, cred: userCreds},
				{op: "read", a: "p/f", n: 1, cred: userCreds},
				{op: "chmod", a: "p", mode: 0775},
				{op: "rename", a: "p/d", b: "q", cred: userCreds},
				{op: "rename", a: "p/d", b: "p/e", cred: otherCreds},
				{op: "rename", a: "p/d", b: "d2", cred: otherCreds},
				{op: "unlink", a: "p/f", cred: otherCreds},
				{op: "mkdir", a: "s", mode: 01777},
				{op: "create", a: "s/u", mode: 0666, cred: userCreds},
				{op: "create", a: "s/o", mode: 0666, cred: otherCreds},
				{op: "mkdir", a: "s/d", mode: 0777, cred: userCreds},
				{op: "unlink", a: "s/u", cred: otherCreds},
				{op: "rename", a: "s/u", b: "s/o", cred: otherCreds},
				{op: "rename", a: "s/o", b: "s/u", cred: otherCreds},
				{op: "rmdir", a: "s/d", cred: otherCreds},
				{op: "chown", a: "s", off: 1001, n: 0},
				{op: "rename", a: "s/o", b: "s/u", cred: otherCreds},
				{op: "rmdir", a: "s/d", cred: otherCreds},
				{op: "unlink", a: "s/u", cred: strangerCreds},
				{op: "mkdir", a: "sg", mode: 0777},
				{op: "chown", a: "sg", off: 0, n: 1000},
				{op: "chmod", a: "sg", mode: 02777},
				{op: "create", a: "sg/f", mode: 07777, cred: strangerCreds},
				{op: "create", a: "sg/x", mode: 02757, cred: strangerCreds},
				{op: "create", a: "sg/y", mode: 06777, cred: otherCreds},
				{op: "mkdir", a: "sg/d", mode: 07777, cred: strangerCreds},
				{op: "symlink", a: "sg/l", b: "f", cred: strangerCreds},
				{op: "write", a: "sg/x", n: 1, cred: strangerCreds},
				{op: "write", a: "sg/y", n: 1, cred: otherCreds},
				{op: "chmod", a: "sg/y", mode: 06757},
				{op: "write", a: "sg/y", n: 1, cred: otherCreds},
				{op: "chmod", a: "sg/y", mode: 06777},
				{op: "write", a: "sg/y", n: 1, cred: rootCreds},
				{op: "chmod", a: "sg/y", mode: 06644},
				{op: "write", a: "sg/y", n: 0, cred: strangerCreds},
				{op: "write", a: "sg/y", n: 1, cred: strangerCreds},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shmDiffer(t, tc.watch, tc.steps).run(tc.steps)
		})
	}
}

// TestLinuxDifferentialLimits compares against a private tmpfs mount with
// size= and nr_inodes=, including statfs and absolute inode numbers.
func TestLinuxDifferentialLimits(t *testing.T) {
	requireShm(t)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=32k,nr_inodes=8,mode=1777"); err != nil {
		t.Skipf("cannot mount a private tmpfs (%v); limits are only unit-tested", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	fs := newTestFS(t, Options{SizeLimit: 32 << 10, MaxInodes: 8, RootMode: 01777})
	df := newDiffer(t, dir, fs, []string{"a", "b", "c", "d", "s", "t"})
	df.absIno, df.statfs = true, true
	df.run([]step{
		{op: "create", a: "a", mode: 0644},
		{op: "write", a: "a", n: 12288},
		{op: "write", a: "a", off: 12288, n: 20000},
		{op: "write", a: "a", off: 0, n: 10},
		{op: "write", a: "a", off: 1 << 30, n: 10},
		{op: "truncate", a: "a", off: 1 << 30},
		{op: "symlink", a: "s", b: strings.Repeat("z", 300)},
		{op: "truncate", a: "a", off: 4096},
		{op: "symlink", a: "s", b: strings.Repeat("z", 300)},
		{op: "symlink", a: "t", b: "short"},
		{op: "link", a: "a", b: "b"},
		{op: "link", a: "a", b: "c"},
		{op: "mkdir", a: "d", mode: 0755},
		{op: "create", a: "d/1", mode: 0644},
		{op: "create", a: "d/2", mode: 0644},
		{op: "create", a: "d/3", mode: 0644},
		{op: "link", a: "a", b: "d/4"},
		{op: "unlink", a: "c"},
		{op: "open", a: "a"},
		{op: "unlink", a: "a"},
		{op: "unlink", a: "b"},
		{op: "create", a: "d/4", mode: 0644},
		{op: "fwrite", a: "a", off: 8192, n: 100},
		{op: "close", a: "a"},
		{op: "create", a: "d/4", mode: 0644},
		{op: "write", a: "d/4", off: 100, n: 100000},
		{op: "write", a: "d/4", off: 50000, n: 100},
		{op: "rename", a: "d/1", b: "d/2"},
		{op: "create", a: "c", mode: 0644},
		{op: "rename", a: "d", b: "t"},
		{op: "unlink", a: "d/4"},
		{op: "unlink", a: "s"},
		{op: "symlink", a: "s", b: strings.Repeat("z", 300)},
	})
}

// TestLinuxStatx compares the statx fields Linux's tmpfs fills.
func TestLinuxStatx(t *testing.T) {
	requireShm(t)
	base, err := os.MkdirTemp("/dev/shm", "tmpfs-statx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.WriteFile(base+"/f", nil, 0644); err != nil {
		t.Fatal(err)
	}
	fs := newTestFS(t, Options{})
	f := mustCreate(t, fs, "f", 0644, rootCreds)

	for _, tc := range []struct {
		name      string
		real      string
		our       vfs.Dentry
		mountRoot bool
	}{
		{"file", base + "/f", f, false},
		{"mount root", "/dev/shm", fs.Root(), true},
	} {
		var rs unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, tc.real, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &rs); err != nil {
			t.Fatal(err)
		}
		var ox unix.Statx_t
		tc.our.Inode().Statx(&ox)
		// The caller adds STATX_MNT_ID; the rest must match.
		if got, want := ox.Mask, rs.Mask&^unix.STATX_MNT_ID; got != want {
			t.Errorf("%s: mask %#x, linux %#x", tc.name, got, want)
		}
		if ox.Attributes_mask != rs.Attributes_mask || ox.Attributes != rs.Attributes {
			t.Errorf("%s: attributes %#x mask %#x, linux %#x mask %#x", tc.name, ox.Attributes, ox.Attributes_mask, rs.Attributes, rs.Attributes_mask)
		}
		if ox.Blksize != rs.Blksize || (tc.name == "file" && (ox.Size != rs.Size || ox.Blocks != rs.Blocks || ox.Nlink != rs.Nlink || ox.Mode != rs.Mode)) {
			t.Errorf("%s: basic fields differ:\nlinux %+v\ntmpfs %+v", tc.name, rs, ox)
		}
		// A new inode's btime is its first mtime and ctime, as i_crtime.
		if tc.name == "file" && (rs.Btime != rs.Ctime || ox.Btime != ox.Ctime || ox.Btime != ox.Mtime) {
			t.Errorf("%s: btime differs from the creation ctime: linux %v/%v, tmpfs %v/%v", tc.name, rs.Btime, rs.Ctime, ox.Btime, ox.Ctime)
		}
		if ox.Dev_major != 0 || ox.Dev_minor != 999 {
			t.Errorf("%s: dev %d:%d", tc.name, ox.Dev_major, ox.Dev_minor)
		}
	}
}

// TestLinuxRelatime compares the relatime rule for an atime older than a
// day and newer than mtime, which needs utimensat on the real side.
func TestLinuxRelatime(t *testing.T) {
	requireShm(t)
	base, err := os.MkdirTemp("/dev/shm", "tmpfs-atime-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	fs := newTestFS(t, Options{})
	p := base + "/f"
	if err := os.WriteFile(p, []byte("data"), 0644); err != nil {
		t.Fatal(err)
	}
	f := mustCreate(t, fs, "f", 0644, rootCreds)
	mustWrite(t, fs, "f", 0, []byte("data"))
	now := time.Now()
	for _, tc := range []struct {
		name         string
		atime, mtime time.Time
	}{
		{"atime after mtime, recent", now.Add(-time.Hour), now.Add(-2 * time.Hour)},
		{"atime after mtime, over a day old", now.Add(-25 * time.Hour), now.Add(-48 * time.Hour)},
		{"atime before mtime", now.Add(-2 * time.Hour), now.Add(-time.Hour)},
		{"atime equal mtime", now.Add(-time.Hour), now.Add(-time.Hour)},
	} {
		ts := []unix.Timespec{unix.NsecToTimespec(tc.atime.UnixNano()), unix.NsecToTimespec(tc.mtime.UnixNano())}
		if err := unix.UtimesNano(p, ts); err != nil {
			t.Fatal(err)
		}
		// Our ctime is the real one: utimensat set it to now.
		var rs unix.Stat_t
		unix.Stat(p, &rs)
		setTimes(f, tc.atime.UnixNano(), tc.mtime.UnixNano(), rs.Ctim.Nano())
		fd, err := unix.Open(p, unix.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Pread(fd, make([]byte, 4), 0)
		unix.Close(fd)
		unix.Stat(p, &rs)
		f.Inode().ReadAt(make([]byte, 4), 0)
		ost := stat(t, f)
		rchanged := rs.Atim.Nano() != tc.atime.UnixNano()
		ochanged := ost.Atim.Nano() != tc.atime.UnixNano()
		if rchanged != ochanged {
			t.Errorf("%s: atime updated: linux %v, tmpfs %v", tc.name, rchanged, ochanged)
		}
	}
}

// TestLinuxDifferentialXattrSpace: extended attributes take the mount's
// inode space as Linux 6.6+ counts it (nr_inodes * BOGO_INODE_SIZE shared
// with the inodes and links): the same steps on a kernel tmpfs with
// nr_inodes=8 give the same errors and statfs, so that xattrs cannot hold
// memory past the limits (a size=1m mount stored 1.3 GB of them).
func TestLinuxDifferentialXattrSpace(t *testing.T) {
	requireShm(t)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=32k,nr_inodes=8,mode=1777"); err != nil {
		t.Skipf("cannot mount a private tmpfs (%v)", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	fs := newTestFS(t, Options{SizeLimit: 32 << 10, MaxInodes: 8, RootMode: 01777})
	df := newDiffer(t, dir, fs, []string{"a", "b", "d"})
	df.statfs = true
	steps := []step{
		{op: "create", a: "a", mode: 0644},
		{op: "mkdir", a: "d", mode: 0755},
		{op: "xattr", a: "a", b: "big", n: 2000},
		{op: "xattr", a: "a", b: "big", n: 3000},
		{op: "xattr", a: "a", b: "big", n: 2000, flags: unix.XATTR_REPLACE},
		{op: "xattr", a: "d", b: "x", n: 1500},
	}
	for i := 0; i < 8; i++ {
		steps = append(steps, step{op: "xattr", a: "a", b: fmt.Sprint("k", i), n: 100})
	}
	steps = append(steps,
		step{op: "create", a: "b", mode: 0644},
		step{op: "xattr", a: "a", b: "big", n: -1},
		step{op: "create", a: "b", mode: 0644},
		step{op: "xattr", a: "b", b: "small", n: 0},
		step{op: "unlink", a: "b"},
		step{op: "xattr", a: "d", b: "x", n: 3500},
		step{op: "rmdir", a: "d"},
		step{op: "xattr", a: "a", b: "big", n: 4000},
	)
	df.run(steps)
}
