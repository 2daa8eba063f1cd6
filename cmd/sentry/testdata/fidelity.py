"""Linux behaviours real test suites check (issue #15), printed for a
comparison of the sandbox's /tmp with a kernel tmpfs: readlink of an
empty path, truncate(2) past RLIMIT_FSIZE, O_NOATIME by a non-owner,
splice/tee/vmsplice, sync_file_range, record locks (F_GETLK's conflicting
lock, F_SETLKW's deadlock), sendfile's errno order, ETXTBSY, RLIMIT_FSIZE
on write and fallocate, linkat's errno order, mmap's argument checks,
chmod of an O_PATH symlink through /proc/self/fd, pread/writev at the
edges, a shebang interpreter stored in the tmpfs, AF_UNIX sockets bound
by a non-root guest, F_CREATED_QUERY.

Nothing printed may name the directory (it is /tmp in the sandbox and a
directory of /dev/shm natively), a pid or an inode number. Run as root or
as any other user (then the calls only root may make fail, alike)."""
import ctypes, errno, fcntl as fcntl_mod, mmap, os, resource, shutil, signal, socket, struct, subprocess, sys, tempfile, time

sys.stdout.reconfigure(line_buffering=True)
d = sys.argv[1]
try:
    os.chmod(d, 0o777)
except OSError:
    pass  # not the owner: a non-root run in a directory made for it
os.chdir(d)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def e(f):
    try:
        return f()
    except OSError as x:
        return errno.errorcode[x.errno]


def sc(nr, *args):
    """The raw system call nr: its result, or its errno's name."""
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *conv)
    if r == -1 and ctypes.get_errno():
        return errno.errorcode[ctypes.get_errno()]
    return r


def case(name, f):
    try:
        print(name + ":", f())
    except Exception as x:
        print(name + ": raised", type(x).__name__, str(x).replace(d, "D"))


BAD = 9999
SYS_splice, SYS_tee, SYS_vmsplice, SYS_sync_file_range = 275, 276, 278, 277
SYS_sendfile, SYS_linkat, SYS_mmap, SYS_pread64, SYS_writev, SYS_fcntl = 40, 265, 9, 17, 20, 72
F_CREATED_QUERY = 1028


def mkfile(name, data=b"", mode=0o666):
    fd = os.open(name, os.O_CREAT | os.O_RDWR | os.O_TRUNC, mode)
    os.write(fd, data)
    os.close(fd)
    os.chmod(name, mode)


def forked(f):
    """Runs f in a child; its exit status is printed by the caller."""
    pid = os.fork()
    if pid == 0:
        try:
            f()
        except Exception as x:
            print("child raised", type(x).__name__, str(x).replace(d, "D"))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


# readlink of an empty path, truncate(2) past RLIMIT_FSIZE, O_NOATIME.
mkfile(d + "/own", mode=0o666)
print("readlink empty:", e(lambda: os.readlink("")))
fd = os.open(d, os.O_RDONLY)
print("readlinkat dirfd empty:", e(lambda: os.readlink("", dir_fd=fd)))
got = []
signal.signal(signal.SIGXFSZ, lambda *a: got.append("SIGXFSZ"))


def xfsz():
    r = list(got)
    got.clear()
    return r


resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))
print("truncate past:", e(lambda: os.truncate(d + "/own", 5000)), xfsz())
print("truncate within:", e(lambda: os.truncate(d + "/own", 500)), xfsz())
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print("chown to root:", e(lambda: os.chown(d + "/own", 0, 0)))


def noatime_nonowner():
    os.setresuid(65534, 65534, 65534)
    print("noatime non-owner:", e(lambda: os.open(d + "/own", os.O_RDONLY | os.O_NOATIME)))


forked(noatime_nonowner)
print("noatime owner:", e(lambda: (os.close(os.open(d + "/own", os.O_RDONLY | os.O_NOATIME)), "ok")[1]))


# O_NOATIME leaves atime alone; a plain read moves it (relatime: atime
# older than mtime).
def atime_moves(flags):
    mkfile("at", b"data")
    os.utime("at", ns=(1000 * 10**9, 2000 * 10**9))
    f = os.open("at", os.O_RDONLY | flags)
    os.read(f, 4)
    os.close(f)
    return os.stat("at").st_atime_ns != 1000 * 10**9


case("atime moves on read", lambda: atime_moves(0))
case("atime moves on read O_NOATIME", lambda: atime_moves(os.O_NOATIME))

# RLIMIT_FSIZE on write (short, then EFBIG with SIGXFSZ), ftruncate and
# fallocate.
mkfile("fs")
f = os.open("fs", os.O_RDWR)
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))
case("fsize write across", lambda: (e(lambda: os.pwrite(f, b"x" * 1500, 0)), xfsz()))
case("fsize write at limit", lambda: (e(lambda: os.pwrite(f, b"x", 1000)), xfsz()))
case("fsize write below", lambda: (e(lambda: os.pwrite(f, b"y", 10)), xfsz()))
case("fsize ftruncate past", lambda: (e(lambda: os.ftruncate(f, 2000)), xfsz()))
case("fsize fallocate past", lambda: (e(lambda: os.posix_fallocate(f, 0, 4096)), xfsz()))
case("fsize fallocate keep size past", lambda: (sc(285, f, 1, 0, 4096), xfsz()))
case("fsize fallocate within", lambda: (sc(285, f, 0, 0, 900), xfsz()))
case("fsize size", lambda: os.fstat(f).st_size)
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
os.close(f)

# splice, tee, vmsplice: a tmpfs file or a pipe on either side.
mkfile("sp", b"0123456789abcdef")
src = os.open("sp", os.O_RDONLY)
dst = os.open("spo", os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
wo = os.open("sp", os.O_WRONLY)
app = os.open("spo", os.O_WRONLY | os.O_APPEND)
r, w = os.pipe()
r2, w2 = os.pipe()
off = ctypes.c_longlong(4)
case("splice file->pipe off", lambda: (sc(SYS_splice, src, ctypes.byref(off), w, 0, 5, 0), off.value, os.lseek(src, 0, os.SEEK_CUR)))
case("splice file->pipe no off", lambda: (sc(SYS_splice, src, 0, w, 0, 3, 0), os.lseek(src, 0, os.SEEK_CUR)))
off = ctypes.c_longlong(10)
case("splice pipe->file off", lambda: (sc(SYS_splice, r, 0, dst, ctypes.byref(off), 4, 0), off.value, os.pread(dst, 32, 0)))
case("splice pipe->file no off", lambda: (sc(SYS_splice, r, 0, dst, 0, 4, 0), os.lseek(dst, 0, os.SEEK_CUR), os.pread(dst, 32, 0)))
case("splice pipe->append file", lambda: (os.write(w, b"zz"), sc(SYS_splice, r, 0, app, 0, 2, 0)))
os.read(r, 16)
case("splice pipe->pipe", lambda: (os.write(w, b"pp"), sc(SYS_splice, r, 0, w2, 0, 2, 0), os.read(r2, 8)))
case("splice file->file", lambda: sc(SYS_splice, src, 0, dst, 0, 4, 0))
off = ctypes.c_longlong(0)
case("splice off on pipe in", lambda: sc(SYS_splice, r, ctypes.byref(off), dst, 0, 4, 0))
case("splice off on pipe out", lambda: sc(SYS_splice, src, 0, w, ctypes.byref(off), 4, 0))
case("splice bad in", lambda: sc(SYS_splice, BAD, 0, w, 0, 4, 0))
case("splice bad out", lambda: sc(SYS_splice, src, 0, BAD, 0, 4, 0))
case("splice bad both", lambda: sc(SYS_splice, BAD, 0, BAD, 0, 4, 0))
case("splice bad in bad flags", lambda: sc(SYS_splice, BAD, 0, w, 0, 4, 0x100))
case("splice bad flags", lambda: sc(SYS_splice, src, 0, w, 0, 4, 0x100))
case("splice wronly in", lambda: sc(SYS_splice, wo, 0, w, 0, 4, 0))
case("splice rdonly out", lambda: (os.write(w, b"q"), sc(SYS_splice, r, 0, src, 0, 1, 0)))
os.read(r, 16)
case("splice zero len", lambda: sc(SYS_splice, src, 0, w, 0, 0, 0))
off = ctypes.c_longlong(-1)
case("splice negative off", lambda: sc(SYS_splice, src, ctypes.byref(off), w, 0, 4, 0))
case("splice off bad pointer", lambda: sc(SYS_splice, src, 8, w, 0, 4, 0))
off = ctypes.c_longlong(100)
case("splice off past eof", lambda: sc(SYS_splice, src, ctypes.byref(off), w, 0, 4, 0))
dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
case("splice dir->pipe", lambda: sc(SYS_splice, dfd, 0, w, 0, 4, 0))
case("splice pipe->dir", lambda: (os.write(w, b"q"), sc(SYS_splice, r, 0, dfd, 0, 1, 0)))
os.read(r, 16)
case("tee pipe->pipe", lambda: (os.write(w, b"tee!"), sc(SYS_tee, r, w2, 10, 0), os.read(r2, 8), os.read(r, 8)))
case("tee same pipe", lambda: (os.write(w, b"x"), sc(SYS_tee, r, w, 1, 0)))
os.read(r, 16)
case("tee file in", lambda: sc(SYS_tee, src, w, 1, 0))
case("tee file out", lambda: sc(SYS_tee, r, dst, 1, 0))
case("tee bad in", lambda: sc(SYS_tee, BAD, w, 1, 0))
case("tee bad out", lambda: sc(SYS_tee, r, BAD, 1, 0))
case("tee bad in file out", lambda: sc(SYS_tee, BAD, dst, 1, 0))
case("tee bad flags", lambda: sc(SYS_tee, r, w2, 1, 0x100))
case("tee wrong ends", lambda: sc(SYS_tee, w, r2, 1, 0))
buf = ctypes.create_string_buffer(b"vmsp")
iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 4)
case("vmsplice to pipe", lambda: (sc(SYS_vmsplice, w, iov, 1, 0), os.read(r, 8)))
case("vmsplice to file", lambda: sc(SYS_vmsplice, dst, iov, 1, 0))
case("vmsplice to rdonly file", lambda: sc(SYS_vmsplice, src, iov, 1, 0))
case("vmsplice bad fd", lambda: sc(SYS_vmsplice, BAD, iov, 1, 0))
case("vmsplice bad flags", lambda: sc(SYS_vmsplice, w, iov, 1, 0x100))
case("vmsplice from pipe", lambda: (os.write(w, b"back"), sc(SYS_vmsplice, r, iov, 1, 0), buf.raw))

# sync_file_range: argument checks, then success.
case("sfr ok", lambda: sc(SYS_sync_file_range, dst, 0, 10, 7))
case("sfr bad flags", lambda: sc(SYS_sync_file_range, dst, 0, 10, 8))
case("sfr neg off", lambda: sc(SYS_sync_file_range, dst, -1, 10, 2))
case("sfr neg len", lambda: sc(SYS_sync_file_range, dst, 0, -10, 2))
case("sfr overflow", lambda: sc(SYS_sync_file_range, dst, 1 << 62, 1 << 62, 2))
case("sfr bad fd", lambda: sc(SYS_sync_file_range, BAD, 0, 10, 2))
case("sfr bad fd bad flags", lambda: sc(SYS_sync_file_range, BAD, 0, 10, 8))
case("sfr pipe", lambda: sc(SYS_sync_file_range, w, 0, 10, 2))
case("sfr dir", lambda: sc(SYS_sync_file_range, dfd, 0, 10, 2))
case("sfr rdonly", lambda: sc(SYS_sync_file_range, src, 0, 0, 2))

# sendfile: a bad out_fd is EBADF even when the input is empty; a
# read-only offset pointer is EFAULT (after the copy, as put_user).
mkfile("empty")
emp = os.open("empty", os.O_RDONLY)
case("sendfile bad out empty in", lambda: sc(SYS_sendfile, BAD, emp, 0, 10))
case("sendfile bad in", lambda: sc(SYS_sendfile, dst, BAD, 0, 10))
case("sendfile empty in", lambda: sc(SYS_sendfile, dst, emp, 0, 10))
case("sendfile file->file", lambda: (sc(SYS_sendfile, dst, src, 0, 4), os.lseek(src, 0, os.SEEK_CUR)))
case("sendfile file->pipe", lambda: (sc(SYS_sendfile, w, src, 0, 2), os.read(r, 8)))
case("sendfile pipe in", lambda: (os.write(w, b"p"), sc(SYS_sendfile, dst, r, 0, 1)))
os.read(r, 8)
case("sendfile wronly in", lambda: sc(SYS_sendfile, dst, wo, 0, 1))
case("sendfile rdonly out", lambda: sc(SYS_sendfile, src, src, 0, 1))
case("sendfile append out", lambda: sc(SYS_sendfile, app, src, 0, 1))
rw = mmap.mmap(-1, 4096)
rwaddr = ctypes.addressof(ctypes.c_char.from_buffer(rw))
rw[:8] = struct.pack("q", 2)
mkfile("rocopy")


def ro_offset():
    # A read-only page that holds offset 2: mprotect a private copy.
    m = mmap.mmap(-1, 4096)
    m[:8] = struct.pack("q", 2)
    a = ctypes.addressof(ctypes.c_char.from_buffer(m))
    libc.mprotect(ctypes.c_void_p(a), 4096, 1)
    out = os.open("rocopy", os.O_WRONLY | os.O_TRUNC)
    res = sc(SYS_sendfile, out, src, a, 4)
    libc.mprotect(ctypes.c_void_p(a), 4096, 3)
    n = os.fstat(out).st_size
    os.close(out)
    return res, struct.unpack("q", m[:8])[0], n


case("sendfile ro offset", ro_offset)
case("sendfile rw offset", lambda: (sc(SYS_sendfile, dst, src, rwaddr, 4), struct.unpack("q", rw[:8])[0]))
case("sendfile bad offset pointer", lambda: sc(SYS_sendfile, dst, src, 8, 4))
case("sendfile bad out bad offset", lambda: sc(SYS_sendfile, BAD, src, 8, 4))

# Record locks: F_GETLK reports the first conflicting lock by start
# offset with its type and range; F_SETLKW detects a deadlock between
# two processes.
LK = "hhxxxxqqixxxx"
mkfile("lk", b"x" * 200)
lk = os.open("lk", os.O_RDWR)


def setlk(f, typ, start, ln, cmd=fcntl_mod.F_SETLK):
    return e(lambda: (fcntl_mod.fcntl(f, cmd, struct.pack(LK, typ, 0, start, ln, 0)), 0)[1])



def getlk(f, typ, start, ln):
    t, _, s, l, pid = struct.unpack(LK, fcntl_mod.fcntl(f, fcntl_mod.F_GETLK, struct.pack(LK, typ, 0, start, ln, 0)))
    return t, s, l, "self" if pid == os.getpid() else "parent" if pid == os.getppid() else "other"


# Taken out of order: a read lock high, then a write lock low, then one
# in between.
setlk(lk, fcntl_mod.F_RDLCK, 100, 10)
setlk(lk, fcntl_mod.F_WRLCK, 20, 5)
setlk(lk, fcntl_mod.F_RDLCK, 50, 0)  # to EOF, merges with the one at 100


def getlk_child():
    g = os.open("lk", os.O_RDWR)
    print("getlk wr whole:", getlk(g, fcntl_mod.F_WRLCK, 0, 0))
    print("getlk rd whole:", getlk(g, fcntl_mod.F_RDLCK, 0, 0))
    print("getlk wr tail:", getlk(g, fcntl_mod.F_WRLCK, 30, 0))
    print("getlk rd tail:", getlk(g, fcntl_mod.F_RDLCK, 30, 0))
    print("getlk wr gap:", getlk(g, fcntl_mod.F_WRLCK, 25, 25))
    print("getlk bad type:", e(lambda: getlk(g, 7, 0, 0)))
    print("getlk neg range:", e(lambda: getlk(g, fcntl_mod.F_WRLCK, 5, -10)))


forked(getlk_child)


def lock_in_child(start, ln, then):
    """Forks a child that write-locks [start, start+ln) of lk and then
    runs then(its descriptor); returns its pid once it holds the lock."""
    held_r, held_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        g = os.open("lk", os.O_RDWR)
        setlk(g, fcntl_mod.F_WRLCK, start, ln)
        os.write(held_w, b"1")
        then(g)
        os._exit(0)
    os.read(held_r, 1)
    return pid


# A second owner's lock at a lower offset, taken after the first owner's:
# F_GETLK reports the first conflicting lock in the inode's list.
go_r, go_w = os.pipe()
holder = lock_in_child(5, 3, lambda g: os.read(go_r, 1))


def getlk_two_owners():
    g = os.open("lk", os.O_RDWR)
    pids = {os.getppid(): "parent", holder: "holder"}
    for name, args in (("wr whole", (fcntl_mod.F_WRLCK, 0, 0)), ("rd whole", (fcntl_mod.F_RDLCK, 0, 0)),
                       ("wr from 10", (fcntl_mod.F_WRLCK, 10, 0)), ("wr 0-6", (fcntl_mod.F_WRLCK, 0, 6))):
        t, _, st, ln, pid = struct.unpack(LK, fcntl_mod.fcntl(g, fcntl_mod.F_GETLK, struct.pack(LK, args[0], 0, args[1], args[2], 0)))
        print("getlk two owners %s:" % name, t, st, ln, pids.get(pid, "other"))


forked(getlk_two_owners)
os.write(go_w, b"1")
os.waitpid(holder, 0)
setlk(lk, fcntl_mod.F_UNLCK, 0, 0)


def blocked_in_fcntl(pid):
    """Whether pid sleeps inside fcntl (so it is on the lock's blocked
    list: posix_lock_inode queues the waiter before it sleeps)."""
    try:
        with open("/proc/%d/stat" % pid) as s:
            state = s.read().rsplit(")", 1)[1].split()[0]
        with open("/proc/%d/syscall" % pid) as s:
            nr = s.read().split()[0]
    except OSError:
        return False
    return state == "S" and nr == str(SYS_fcntl)


def deadlock():
    setlk(lk, fcntl_mod.F_WRLCK, 0, 1)
    # The child waits for the parent's lock on byte 0.
    pid = lock_in_child(1, 1, lambda g: print("deadlock child waited:", setlk(g, fcntl_mod.F_WRLCK, 0, 1, fcntl_mod.F_SETLKW)))
    deadline = time.monotonic() + 20
    while not blocked_in_fcntl(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    res = setlk(lk, fcntl_mod.F_WRLCK, 1, 1, fcntl_mod.F_SETLKW)
    setlk(lk, fcntl_mod.F_UNLCK, 0, 1)
    os.waitpid(pid, 0)
    return res


case("setlkw deadlock", deadlock)

# ETXTBSY: a running binary stored in the tmpfs opened for writing.
shutil.copy("/bin/sleep", "sleep")
os.chmod("sleep", 0o755)
p = subprocess.Popen([d + "/sleep", "100"])  # returns once exec succeeded
case("txtbsy open wronly", lambda: e(lambda: os.open("sleep", os.O_WRONLY)))
case("txtbsy open rdwr", lambda: e(lambda: os.open("sleep", os.O_RDWR)))
case("txtbsy open rdonly", lambda: e(lambda: (os.close(os.open("sleep", os.O_RDONLY)), "ok")[1]))
case("txtbsy truncate", lambda: e(lambda: os.truncate("sleep", 0)))
p.kill()
p.wait()
case("after exit open wronly", lambda: e(lambda: (os.close(os.open("sleep", os.O_WRONLY)), "ok")[1]))

# linkat: ENOTDIR and EBADF before EXDEV, the new name's errors before
# EXDEV, EXDEV across mounts.
host = tempfile.mkdtemp(dir="/var/tmp", prefix="fidelity-")
try:
    mkfile("lsrc")
    open(host + "/exists", "w").close()
    os.chmod(host, 0o755)
    # A directory others may not search, one they may not list.
    for sub, mode in (("closed", 0o700), ("unreadable", 0o711)):
        os.mkdir(host + "/" + sub)
        open(host + "/" + sub + "/exists", "w").close()
        os.chmod(host + "/" + sub, mode)
    reg = os.open("lsrc", os.O_RDONLY)
    os.mkdir("ldir")
    os.symlink("loop", host + "/loop")
    os.symlink("exists", host + "/tofile")
    hostfile = os.open(host + "/exists", os.O_RDONLY)
    hostdir = os.open(host, os.O_RDONLY)
    cases = [
        ("linkat to host", (-100, d + "/lsrc", -100, host + "/new", 0)),
        ("linkat to host dirfd", (-100, d + "/lsrc", hostdir, "new", 0)),
        ("linkat to host missing parent", (-100, d + "/lsrc", -100, host + "/no/new", 0)),
        ("linkat to host existing", (-100, d + "/lsrc", -100, host + "/exists", 0)),
        ("linkat to host notdir", (-100, d + "/lsrc", -100, host + "/exists/new", 0)),
        ("linkat to host unsearchable", (-100, d + "/lsrc", -100, host + "/closed/exists", 0)),
        ("linkat to host unsearchable missing", (-100, d + "/lsrc", -100, host + "/closed/new", 0)),
        ("linkat to host unreadable", (-100, d + "/lsrc", -100, host + "/unreadable/exists", 0)),
        # root's home: others may not search it (as nobody, EACCES).
        ("linkat to /root missing", (-100, d + "/lsrc", -100, "/root/.fidelity-nope", 0)),
        ("linkat to /root existing", (-100, d + "/lsrc", -100, "/root/.profile", 0)),
        ("linkat to bad dirfd", (-100, d + "/lsrc", BAD, "new", 0)),
        ("linkat to file dirfd", (-100, d + "/lsrc", reg, "new", 0)),
        ("linkat to file dirfd abs", (-100, d + "/lsrc", reg, d + "/new2", 0)),
        ("linkat to notdir", (-100, d + "/lsrc", -100, d + "/lsrc/new", 0)),
        ("linkat from bad dirfd", (BAD, "lsrc", -100, host + "/new", 0)),
        ("linkat from file dirfd", (reg, "lsrc", -100, host + "/new", 0)),
        ("linkat from notdir", (-100, d + "/lsrc/x", -100, host + "/new", 0)),
        ("linkat from missing", (-100, d + "/nope", -100, host + "/new", 0)),
        ("linkat from host", (-100, host + "/exists", -100, d + "/fromhost", 0)),
        ("linkat from host to bad dirfd", (-100, host + "/exists", BAD, "x", 0)),
        ("linkat from host to file dirfd", (-100, host + "/exists", reg, "x", 0)),
        ("linkat bad flags", (-100, d + "/lsrc", -100, host + "/new", 0x1)),
        ("linkat bad flags bad fd", (BAD, "lsrc", -100, host + "/new", 0x1)),
        ("linkat empty path", (-100, "", -100, host + "/new", 0)),
        ("linkat empty path AT_EMPTY_PATH", (reg, "", -100, host + "/new", 0x1000)),
        ("linkat empty path AT_EMPTY_PATH same fs", (reg, "", -100, d + "/viaempty", 0x1000)),
        ("linkat from host fd AT_EMPTY_PATH", (hostfile, "", -100, d + "/x", 0x1000)),
        ("linkat from bad fd AT_EMPTY_PATH", (BAD, "", -100, d + "/x", 0x1000)),
        ("linkat from host loop follow", (-100, host + "/loop", -100, d + "/x", 0x400)),
        ("linkat from host loop nofollow", (-100, host + "/loop", -100, d + "/x", 0)),
        ("linkat from host symlink follow", (-100, host + "/tofile", -100, d + "/x", 0x400)),
        ("linkat from host loop to missing", (-100, host + "/loop", -100, d + "/no/x", 0x400)),
        ("linkat from host missing to existing", (-100, host + "/nope", -100, d + "/lsrc", 0)),
        ("linkat from host to existing", (-100, host + "/exists", -100, d + "/lsrc", 0)),
        ("linkat from host to trailing slash", (-100, host + "/exists", -100, d + "/x/", 0)),
        ("linkat to host trailing slash", (-100, d + "/lsrc", -100, host + "/x/", 0)),
        ("linkat to host existing trailing slash", (-100, d + "/lsrc", -100, host + "/exists/", 0)),
        ("linkat trailing slash", (-100, d + "/lsrc", -100, d + "/y/", 0)),
        ("linkat existing trailing slash", (-100, d + "/lsrc", -100, d + "/lsrc/", 0)),
        ("linkat existing dir trailing slash", (-100, d + "/lsrc", -100, d + "/ldir/", 0)),
        ("linkat to host dot", (-100, d + "/lsrc", -100, host + "/.", 0)),
        ("linkat ok", (-100, d + "/lsrc", -100, d + "/lnew", 0)),
    ]
    for name, (od, op, nd, np, fl) in cases:
        case(name, lambda: sc(SYS_linkat, od, op.encode() if isinstance(op, str) else op, nd, np.encode(), fl))
    # renameat looks both directories up before it compares the mounts;
    # the last components after.
    for name, (od, op, nd, np) in [
        ("rename to host", (-100, d + "/lsrc", -100, host + "/new")),
        ("rename to host existing", (-100, d + "/lsrc", -100, host + "/exists")),
        ("rename to host missing parent", (-100, d + "/lsrc", -100, host + "/no/new")),
        ("rename to host notdir", (-100, d + "/lsrc", -100, host + "/exists/new")),
        ("rename to host unsearchable", (-100, d + "/lsrc", -100, host + "/closed/exists")),
        ("rename from host unsearchable", (-100, host + "/closed/exists", -100, d + "/new")),
        ("rename to /root", (-100, d + "/lsrc", -100, "/root/.fidelity-nope")),
        ("rename from /root", (-100, "/root/.profile", -100, d + "/new")),
        ("rename to bad dirfd", (-100, d + "/lsrc", BAD, "new")),
        ("rename to file dirfd", (-100, d + "/lsrc", reg, "new")),
        ("rename missing to host", (-100, d + "/nope", -100, host + "/new")),
        ("rename from bad dirfd", (BAD, "lsrc", -100, d + "/new")),
        ("rename from host missing parent", (-100, host + "/no/x", -100, d + "/new")),
        ("rename from host", (-100, host + "/exists", -100, d + "/new")),
        ("rename from host to missing parent", (-100, host + "/exists", -100, d + "/no/new")),
    ]:
        case(name, lambda: sc(264, od, op.encode(), nd, np.encode()))
    # The same rule (filename_create) for the other calls that make names.
    case("mknod fifo trailing slash", lambda: e(lambda: os.mknod("n1/", 0o644 | 0o10000)))
    case("mknod file trailing slash", lambda: e(lambda: os.mknod("n2/", 0o644 | 0o100000)))
    case("symlink trailing slash", lambda: e(lambda: os.symlink("lsrc", "n3/")))
    case("names after trailing slashes", lambda: sorted(n for n in os.listdir(".") if n[0] in "nly"))
    case("host dir after linkat", lambda: sorted(os.listdir(host)))
    case("host dirs after linkat", lambda: [sorted(e(lambda: os.listdir(host + "/" + sub))) for sub in ("closed", "unreadable")])
finally:
    shutil.rmtree(host)

# mmap: EINVAL for length 0 and for neither MAP_SHARED nor MAP_PRIVATE,
# before EACCES.
mkfile("mm", b"m" * 4096)
mwo = os.open("mm", os.O_WRONLY)
mro = os.open("mm", os.O_RDONLY)
mrw = os.open("mm", os.O_RDWR)
mapp = os.open("mm", os.O_RDWR | os.O_APPEND)
R, W, S, P = 1, 2, 1, 2


def mm(length, prot, flags, f, off=0):
    ctypes.set_errno(0)
    libc.mmap.restype = ctypes.c_void_p
    a = libc.mmap(None, ctypes.c_size_t(length), prot, flags, f, ctypes.c_long(off))
    if a == ctypes.c_void_p(-1).value:
        return errno.errorcode[ctypes.get_errno()]
    libc.munmap(ctypes.c_void_p(a), ctypes.c_size_t(length))
    return "mapped"


for name, args in [
    ("mmap len 0 wronly", (0, R, S, mwo)),
    ("mmap len 0 rdonly", (0, R, P, mro)),
    ("mmap no type wronly", (4096, R, 0, mwo)),
    ("mmap no type rdonly", (4096, R, 0, mro)),
    ("mmap shared|private wronly", (4096, R, 3, mwo)),
    ("mmap shared wronly", (4096, R, S, mwo)),
    ("mmap private wronly", (4096, R, P, mwo)),
    ("mmap shared write rdonly", (4096, R | W, S, mro)),
    ("mmap private write rdonly", (4096, R | W, P, mro)),
    ("mmap shared write rdwr", (4096, R | W, S, mrw)),
    ("mmap shared write append", (4096, R | W, S, mapp)),
    ("mmap shared read append", (4096, R, S, mapp)),
    ("mmap validate unknown flag", (4096, R, 3 | 0x200000, mrw)),
    ("mmap bad fd", (4096, R, S, BAD)),
    ("mmap unaligned off", (4096, R, S, mrw, 1)),
    ("mmap dir", (4096, R, P, dfd)),
]:
    case(name, lambda: mm(*args))

# chmod through /proc/self/fd/N of an O_PATH descriptor of a symlink:
# Linux refuses (EOPNOTSUPP) and the target keeps its mode.
mkfile("ctarget", mode=0o644)
os.symlink("ctarget", "clink")
pl = os.open("clink", os.O_PATH | os.O_NOFOLLOW)
case("chmod O_PATH symlink via proc", lambda: e(lambda: os.chmod("/proc/self/fd/%d" % pl, 0o600)))
case("fchmodat O_PATH symlink via proc", lambda: e(lambda: os.chmod("/proc/self/fd/%d" % pl, 0o600, follow_symlinks=True)))
case("fchmodat nofollow symlink", lambda: sc(452, -100, b"clink", 0o600, 0x100))
case("fchmodat2 empty path O_PATH symlink", lambda: sc(452, pl, b"", 0o600, 0x1000))
forked(lambda: (os.setresuid(65534, 65534, 65534),
                print("chmod O_PATH symlink via proc non-owner:", e(lambda: os.chmod("/proc/self/fd/%d" % pl, 0o600)))))
case("target mode after", lambda: oct(os.stat("ctarget").st_mode))
case("chown O_PATH symlink via proc", lambda: e(lambda: (os.chown("/proc/self/fd/%d" % pl, 65534, 65534), "ok")[1]))
case("symlink owner after", lambda: os.lstat("clink").st_uid)
case("target owner after", lambda: os.stat("ctarget").st_uid)
case("fchmod O_PATH symlink", lambda: e(lambda: os.fchmod(pl, 0o600)))
pf = os.open("ctarget", os.O_PATH)
case("chmod O_PATH file via proc", lambda: e(lambda: (os.chmod("/proc/self/fd/%d" % pf, 0o640), oct(os.stat("ctarget").st_mode))[1]))

# pread that faults part-way returns what it read before the fault;
# writev whose lengths sum past SSIZE_MAX is EINVAL.
mkfile("pr", b"p" * 8192)
pr = os.open("pr", os.O_RDWR)


def pread_fault():
    libc.mmap.restype = ctypes.c_void_p
    a = libc.mmap(None, ctypes.c_size_t(8192), 3, 0x22, -1, ctypes.c_long(0))
    libc.munmap(ctypes.c_void_p(a + 4096), ctypes.c_size_t(4096))
    r1 = sc(SYS_pread64, pr, a + 100, 8192, 0)
    r2 = sc(SYS_pread64, pr, a + 4096, 10, 0)
    r3 = sc(0, pr, a + 4000, 8192)
    libc.munmap(ctypes.c_void_p(a), ctypes.c_size_t(4096))
    return r1, r2, r3, os.lseek(pr, 0, os.SEEK_CUR)


case("pread faulting part-way", pread_fault)


def writev(lens):
    iovs = (ctypes.c_void_p * (2 * len(lens)))()
    b = ctypes.create_string_buffer(64)
    for i, n in enumerate(lens):
        iovs[2 * i] = ctypes.addressof(b)
        iovs[2 * i + 1] = n
    return sc(SYS_writev, pr, iovs, len(lens))


case("writev sum overflows", lambda: writev([1 << 62, 1 << 62, 1 << 62]))
case("writev negative len", lambda: writev([4, (1 << 64) - 1]))
case("writev max len", lambda: writev([(1 << 63) - 1, 1]))
case("writev ok", lambda: writev([4, 4]))
case("writev too many", lambda: sc(SYS_writev, pr, (ctypes.c_void_p * 2050)(), 1025))

# A #! script whose interpreter is stored in the tmpfs.
shutil.copy("/bin/sh", "interp")
os.chmod("interp", 0o755)


def script(name, text):
    with open(name, "w") as s:
        s.write(text)
    os.chmod(name, 0o755)


script("script", "#!%s/interp\necho ran script \"$#\"\n" % d)
script("script2", "#!%s/script arg\n" % d)
script("noexec", "#!%s/ctarget\n" % d)
script("missing", "#!%s/nope\n" % d)


def run(path, *args):
    try:
        c = subprocess.run([path, *args], capture_output=True, timeout=30)
        return c.returncode, c.stdout.decode().replace(d, "D"), c.stderr.decode().replace(d, "D")[:40]
    except OSError as x:
        return errno.errorcode[x.errno]


case("shebang tmpfs interp", lambda: run(d + "/script", "a", "b"))
case("shebang nested", lambda: run(d + "/script2"))
case("shebang relative", lambda: run("./script"))
case("shebang interp not executable", lambda: run(d + "/noexec"))
case("shebang interp missing", lambda: run(d + "/missing"))
script("dirinterp", "#!%s\n" % d)
case("shebang interp directory", lambda: run(d + "/dirinterp"))
script("self", "#!%s/self\n" % d)
case("shebang itself", lambda: run(d + "/self"))
# exec_binprm's limit: five scripts in a chain run, a sixth is ELOOP.
script("chain0", "#!%s/interp\necho chain \"$@\"\n" % d)
for i in range(1, 7):
    script("chain%d" % i, "#!%s/chain%d\n" % (d, i - 1))
for i in range(4, 7):
    case("shebang chain %d" % i, lambda: run(d + "/chain%d" % i, "x"))

# AF_UNIX sockets bound by a non-root guest in a directory it may write,
# and reached by sendmsg and sendmmsg.
os.mkdir("sockdir", 0o777)
os.chmod("sockdir", 0o777)
os.mkdir("rootdir", 0o755)


def nonroot_sockets():
    e(lambda: os.setgroups([]))
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    print("nonroot bind writable dir:", e(lambda: (s.bind("sockdir/s"), "ok")[1]))
    t = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    print("nonroot bind root dir:", e(lambda: (t.bind("rootdir/s"), "ok")[1]))
    print("nonroot bind abs:", e(lambda: (t.bind(d + "/sockdir/s2"), "ok")[1]))
    st = os.stat("sockdir/s")
    print("socket owner mode:", st.st_uid, st.st_gid, oct(st.st_mode))
    c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    print("sendto:", e(lambda: c.sendto(b"one", "sockdir/s")))
    print("sendmsg:", e(lambda: c.sendmsg([b"two"], [], 0, d + "/sockdir/s")))
    print("recv:", s.recv(8), s.recv(8))
    print("sendmsg missing:", e(lambda: c.sendmsg([b"x"], [], 0, "sockdir/nope")))
    os.chmod("sockdir/s", 0o600)
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    u.bind("sockdir/st")
    u.listen(1)
    k = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    print("connect stream:", e(lambda: (k.connect("sockdir/st"), "ok")[1]))
    a, _ = u.accept()
    k.sendall(b"stream")
    print("stream recv:", a.recv(8))


forked(nonroot_sockets)


def sendmmsg(count=3, flags=0, names=None):
    """sendmmsg of count datagrams to a socket bound in the tmpfs (to
    names[i] when given, relative ones too): the count sent, each
    msg_len, what arrived."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if os.path.exists("mm.sock"):
        os.unlink("mm.sock")
    s.bind("mm.sock")
    c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    names = names or [d + "/mm.sock"]
    addrs = [ctypes.create_string_buffer(struct.pack("H", socket.AF_UNIX) + n.encode() + b"\0") for n in names]
    bufs = [ctypes.create_string_buffer(b"m%d" % i) for i in range(count)]
    iovs = [(ctypes.c_void_p * 2)(ctypes.addressof(b), len(b.value)) for b in bufs]
    # struct mmsghdr: msghdr (56 bytes) + unsigned int + pad.
    hdrs = ctypes.create_string_buffer(64 * count)
    for i in range(count):
        a = addrs[i % len(addrs)]
        struct.pack_into("QIxxxxQQQQixxxx", hdrs, 64 * i, ctypes.addressof(a), len(a), ctypes.addressof(iovs[i]), 1, 0, 0, 0)
    n = sc(307, c.fileno(), hdrs, count, flags)
    lens = [struct.unpack_from("I", hdrs, 64 * i + 56)[0] for i in range(count)]
    s.setblocking(False)
    got = []
    while True:
        try:
            got.append(s.recv(8))
        except BlockingIOError:
            break
    if count > 10:
        return n, sum(lens), len(got), got[:2], got[-2:]
    return n, lens, got


case("sendmmsg to tmpfs path", sendmmsg)
case("sendmmsg to tmpfs paths", lambda: sendmmsg(4, 0, [d + "/mm.sock", "mm.sock", "sockdir/../mm.sock"]))
case("sendmmsg missing path second", lambda: sendmmsg(3, 0, [d + "/mm.sock", d + "/nope.sock"]))
case("sendmmsg 100 nonblocking", lambda: sendmmsg(100, socket.MSG_DONTWAIT))
case("sendmmsg 1024 nonblocking", lambda: sendmmsg(1024, socket.MSG_DONTWAIT))

# F_CREATED_QUERY (Linux 6.12): whether this open created the file.
created = os.open("cq", os.O_CREAT | os.O_RDWR, 0o644)
again = os.open("cq", os.O_CREAT | os.O_RDWR, 0o644)
plain = os.open("cq", os.O_RDONLY)
excl = os.open("cqx", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
opath = os.open("cq", os.O_PATH)
tmpf = e(lambda: os.open(".", os.O_TMPFILE | os.O_RDWR, 0o600))
case("created query new", lambda: sc(SYS_fcntl, created, F_CREATED_QUERY, 0))
case("created query existing O_CREAT", lambda: sc(SYS_fcntl, again, F_CREATED_QUERY, 0))
case("created query plain", lambda: sc(SYS_fcntl, plain, F_CREATED_QUERY, 0))
case("created query excl", lambda: sc(SYS_fcntl, excl, F_CREATED_QUERY, 0))
case("created query O_PATH", lambda: sc(SYS_fcntl, opath, F_CREATED_QUERY, 0))
case("created query tmpfile", lambda: sc(SYS_fcntl, tmpf, F_CREATED_QUERY, 0) if isinstance(tmpf, int) else tmpf)
case("created query dup", lambda: sc(SYS_fcntl, os.dup(created), F_CREATED_QUERY, 0))
forked(lambda: print("created query in child:", sc(SYS_fcntl, created, F_CREATED_QUERY, 0)))
case("created query arg", lambda: sc(SYS_fcntl, created, F_CREATED_QUERY, 1))
case("created query dir", lambda: sc(SYS_fcntl, dfd, F_CREATED_QUERY, 0))
case("created query bad fd", lambda: sc(SYS_fcntl, BAD, F_CREATED_QUERY, 0))
