"""Inode flags (FS_IOC_GETFLAGS/SETFLAGS) on a tmpfs and what immutable and
append-only refuse (issue #15), printed for a comparison of the sandbox's
/tmp with a kernel tmpfs."""
import ctypes, errno, fcntl, mmap, os, struct, sys
from probeutil import e, testdir
libc = ctypes.CDLL(None, use_errno=True)
GET, SET = 0x80086601, 0x40086602
FSGETX, FSSETX = 0x801c581f, 0x401c5820
I, A, NODUMP, NOATIME, SYNC = 0x10, 0x20, 0x40, 0x80, 0x8
d = testdir()

def getf(fd): return struct.unpack("i", fcntl.ioctl(fd, GET, b"\0" * 4))[0]
def setf(fd, v): fcntl.ioctl(fd, SET, struct.pack("i", v))
def getx(fd): return struct.unpack("7I", fcntl.ioctl(fd, FSGETX, b"\0" * 28))
def setx(fd, x, extsize=0, projid=0): fcntl.ioctl(fd, FSSETX, struct.pack("7I", x, extsize, 0, projid, 0, 0, 0))

def attrs(p):
    # statx's stx_attributes and stx_attributes_mask, restricted to the
    # flag bits (STATX_ATTR_IMMUTABLE 0x10, APPEND 0x20, NODUMP 0x40).
    buf = ctypes.create_string_buffer(256)
    if libc.syscall(332, -100, p.encode(), 0x100, 0xfff, buf) != 0:
        return errno.errorcode[ctypes.get_errno()]
    a, = struct.unpack_from("Q", buf.raw, 8)
    m, = struct.unpack_from("Q", buf.raw, 56)
    return hex(a & 0x70) + "/" + hex(m & 0x70)

def utimens_now(p):
    UTIME_NOW = (1 << 30) - 1
    ts = (ctypes.c_long * 4)(0, UTIME_NOW, 0, UTIME_NOW)
    if libc.utimensat(-100, p.encode(), ts, 0) != 0:
        raise OSError(ctypes.get_errno(), "")

def opens(p, label):
    for name, fl in (("r", os.O_RDONLY), ("w", os.O_WRONLY), ("rw", os.O_RDWR),
                     ("r trunc", os.O_RDONLY | os.O_TRUNC), ("w append", os.O_WRONLY | os.O_APPEND),
                     ("rw append", os.O_RDWR | os.O_APPEND), ("w append trunc", os.O_WRONLY | os.O_APPEND | os.O_TRUNC)):
        print(label, "open", name, e(lambda: (os.close(os.open(p, fl)), "ok")[1]))

def effects(p, label):
    opens(p, label)
    print(label, "access W", e(lambda: os.access(p, os.W_OK)))
    print(label, "truncate", e(lambda: os.truncate(p, 1)))
    print(label, "chmod", e(lambda: os.chmod(p, 0o640)))
    print(label, "chown", e(lambda: os.chown(p, 0, 0)))
    print(label, "chown -1 -1", e(lambda: os.chown(p, -1, -1)))
    print(label, "utime explicit", e(lambda: os.utime(p, (1, 2))))
    print(label, "utime null", e(lambda: os.utime(p)))
    print(label, "utimensat now now", e(lambda: utimens_now(p)))
    print(label, "setxattr", e(lambda: os.setxattr(p, "user.x", b"1")))
    print(label, "removexattr", e(lambda: os.removexattr(p, "user.y")))
    print(label, "getxattr", e(lambda: os.getxattr(p, "user.y")))
    print(label, "link", e(lambda: os.link(p, p + ".l")))
    print(label, "rename", e(lambda: os.rename(p, p + ".r")))
    open(d + "/victim", "w").close()
    print(label, "rename onto", e(lambda: os.rename(d + "/victim", p)))
    print(label, "unlink", e(lambda: os.unlink(p)))
    print(label, "attrs", attrs(p))

# A regular file: flags, their statx attributes, their effects.
p = d + "/f"
with open(p, "w") as f: f.write("hello")
os.setxattr(p, "user.y", b"2")
rw = os.open(p, os.O_RDWR)
ap = os.open(p, os.O_WRONLY | os.O_APPEND)
print("new", getf(rw), getx(rw), attrs(p))
print("set sync", e(lambda: setf(rw, SYNC)), getf(rw))
print("set sync immutable", e(lambda: setf(rw, SYNC | I)), getf(rw))
print("set nodump noatime", e(lambda: setf(rw, NODUMP | NOATIME)), getf(rw), getx(rw), attrs(p))
print("set immutable", e(lambda: setf(rw, I)), getf(rw), getx(rw))
effects(p, "immutable")
# Descriptors opened before: the data calls are not trapped.
print("immutable write old fd", e(lambda: os.write(rw, b"x")))
print("immutable pwrite old fd", e(lambda: os.pwrite(rw, b"y", 3)))
print("immutable ftruncate", e(lambda: os.ftruncate(rw, 5)))
print("immutable fallocate", e(lambda: os.posix_fallocate(rw, 0, 100)))
print("immutable mmap shared", e(lambda: (mmap.mmap(rw, 5, mmap.MAP_SHARED).close(), "ok")[1]))
print("immutable reopen via proc", e(lambda: os.open("/proc/self/fd/%d" % rw, os.O_RDWR)))
print("immutable data", open(p, "rb").read())
print("set append", e(lambda: setf(rw, A)), getf(rw), getx(rw))
effects(p, "append")
print("append write old fd", e(lambda: os.write(rw, b"x")))
print("append write append fd", e(lambda: os.write(ap, b"z")))
print("append ftruncate", e(lambda: os.ftruncate(rw, 1)))
print("append fallocate", e(lambda: os.posix_fallocate(rw, 0, 100)))
print("append punch hole", libc.fallocate(rw, 3, ctypes.c_long(0), ctypes.c_long(1)) == 0 or errno.errorcode[ctypes.get_errno()])
print("append mmap shared", e(lambda: (mmap.mmap(rw, 5, mmap.MAP_SHARED).close(), "ok")[1]))
print("append mmap private", e(lambda: (mmap.mmap(rw, 5, mmap.MAP_PRIVATE).close(), "ok")[1]))
print("append setfl clear", e(lambda: fcntl.fcntl(ap, fcntl.F_SETFL, 0)))
print("append setfl set", e(lambda: fcntl.fcntl(rw, fcntl.F_SETFL, os.O_APPEND)))
print("append data", open(p, "rb").read())
print("clear", e(lambda: setf(rw, 0)), getf(rw), attrs(p))
print("fssetxattr", e(lambda: setx(rw, 0)), e(lambda: setx(rw, 0x8)), getf(rw), e(lambda: setx(rw, 0x80 | 0x10)), getf(rw))
print("fssetxattr sync", e(lambda: setx(rw, 0x20)), getf(rw))
print("fssetxattr extsize", e(lambda: setx(rw, 0x800, 4096)), e(lambda: setx(rw, 0x800)), e(lambda: setx(rw, 0, 4096)), getf(rw))
print("fssetxattr projid", e(lambda: setx(rw, 0, 0, 5)), e(lambda: setx(rw, 0, 0, 0xffffffff)), getf(rw))
print("fssetxattr other", e(lambda: setx(rw, 0x1)), e(lambda: setx(rw, 0x1000)), getf(rw))
print("clear again", e(lambda: setf(rw, 0)), getf(rw))
print("bad pointer get", e(lambda: libc.ioctl(rw, GET, ctypes.c_void_p(8)) and errno.errorcode[ctypes.get_errno()]))
print("bad pointer set", e(lambda: libc.ioctl(rw, SET, ctypes.c_void_p(8)) and errno.errorcode[ctypes.get_errno()]))
opath = os.open(p, os.O_PATH)
print("O_PATH getflags", e(lambda: getf(opath)))
print("O_PATH setflags", e(lambda: setf(opath, I)))
print("O_PATH fionread", e(lambda: fcntl.ioctl(opath, 0x541B, b"\0" * 4) and "ok"))
print("O_PATH fioclex", e(lambda: fcntl.ioctl(opath, 0x5451) and "ok"))
print("O_PATH fd still usable", e(lambda: os.fstat(opath).st_size))
os.close(rw)
os.close(ap)

# O_TMPFILE made immutable goes at its last close.
t = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o600)
print("tmpfile immutable", e(lambda: setf(t, I)), getf(t))
os.close(t)

# Directories.
dd = d + "/dir"
os.mkdir(dd)
open(dd + "/in", "w").close()
os.mkdir(dd + "/sub")
dfd = os.open(dd, os.O_RDONLY | os.O_DIRECTORY)
print("dir new", getf(dfd), attrs(dd))
for label, fl in (("dir immutable", I), ("dir append", A)):
    print(label, "set", e(lambda: setf(dfd, fl)), getf(dfd), attrs(dd))
    print(label, "create", e(lambda: (os.close(os.open(dd + "/new" + str(fl), os.O_CREAT | os.O_WRONLY)), "ok")[1]))
    print(label, "tmpfile", e(lambda: (os.close(os.open(dd, os.O_TMPFILE | os.O_RDWR)), "ok")[1]))
    print(label, "mkdir", e(lambda: os.mkdir(dd + "/nd" + str(fl))))
    print(label, "symlink", e(lambda: os.symlink("x", dd + "/sl" + str(fl))))
    print(label, "link in", e(lambda: os.link(d + "/victim", dd + "/li" + str(fl))))
    print(label, "open child w", e(lambda: (os.close(os.open(dd + "/in", os.O_WRONLY)), "ok")[1]))
    print(label, "unlink", e(lambda: os.unlink(dd + "/in")))
    print(label, "rmdir child", e(lambda: os.rmdir(dd + "/sub")))
    print(label, "rename within", e(lambda: os.rename(dd + "/in", dd + "/in2")))
    print(label, "rename out", e(lambda: os.rename(dd + "/in", d + "/out")))
    print(label, "rmdir", e(lambda: os.rmdir(dd)))
    print(label, "rename dir", e(lambda: os.rename(dd, d + "/dir2")))
    print(label, "chmod", e(lambda: os.chmod(dd, 0o755)))
    print(label, "list", sorted(os.listdir(dd)))
    print(label, "clear", e(lambda: setf(dfd, 0)), getf(dfd))
    for n in os.listdir(dd):
        if n not in ("in", "sub"):
            q = dd + "/" + n
            (os.rmdir if os.path.isdir(q) and not os.path.islink(q) else os.unlink)(q)

# Inherited: nodump and noatime, onto files, directories and symlinks.
print("dir set nodump noatime append", e(lambda: setf(dfd, NODUMP | NOATIME | A)), getf(dfd))
open(dd + "/inh", "w").close()
os.mkdir(dd + "/inhd")
os.symlink("inh", dd + "/inhl")
for n in ("inh", "inhd"):
    q = os.open(dd + "/" + n, os.O_RDONLY)
    print("inherited", n, getf(q), attrs(dd + "/" + n))
    os.close(q)
print("inherited symlink", attrs(dd + "/inhl"))
# noatime: reads leave atime alone (regular file: the host's; directory: the sentry's).
os.utime(dd + "/inh", (1000, 2000))
open(dd + "/inh").read()
print("noatime file atime", os.stat(dd + "/inh").st_atime)
os.utime(dd + "/inhd", (1000, 2000))
os.listdir(dd + "/inhd")
print("noatime dir atime", os.stat(dd + "/inhd").st_atime)
print("clear dir", e(lambda: setf(dfd, 0)))

# Unprivileged: the owner may set nodump, never immutable; others nothing.
os.chmod(p, 0o644)
own = d + "/own"
open(own, "w").close()
os.chown(own, 65534, 65534)
pid = os.fork()
if pid == 0:
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)
    fd = os.open(p, os.O_RDONLY)
    print("nobody get other's", e(lambda: getf(fd)))
    print("nobody set other's", e(lambda: setf(fd, NODUMP)))
    print("nobody fssetxattr other's", e(lambda: setx(fd, 0)))
    fd = os.open(own, os.O_RDONLY)
    print("nobody set own nodump", e(lambda: setf(fd, NODUMP)), getf(fd))
    print("nobody set own immutable", e(lambda: setf(fd, I)), getf(fd))
    print("nobody set own sync", e(lambda: setf(fd, SYNC)), getf(fd))
    print("nobody fssetxattr own immutable", e(lambda: setx(fd, 0x8)))
    print("nobody fssetxattr own", e(lambda: setx(fd, 0x80)))
    os._exit(0)
os.waitpid(pid, 0)
