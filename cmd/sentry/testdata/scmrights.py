"""Descriptors of tmpfs files passed between processes with SCM_RIGHTS
(issue #15), printed for a comparison of the sandbox's /tmp with a kernel
tmpfs: the receiver has the same open file (data, offset, flags, stat,
name), directories and O_PATH descriptors too, with sendmsg, sendmmsg,
recvmsg and recvmmsg, MSG_CMSG_CLOEXEC, and the sender closing first."""
import array, errno, fcntl, os, socket, sys
from probeutil import e, testdir
d = testdir()

def send(s, fds, data=b"m"):
    return s.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])

def recv(s, n=4, flags=0):
    msg, anc, fl, _ = s.recvmsg(16, socket.CMSG_SPACE(4 * n), flags)
    fds = array.array("i")
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % 4])
    return msg, list(fds), fl

def same(fd, path):
    a, b = os.fstat(fd), os.lstat(path)
    return (a.st_dev, a.st_ino, a.st_mode, a.st_nlink, a.st_size, a.st_uid) == (b.st_dev, b.st_ino, b.st_mode, b.st_nlink, b.st_size, b.st_uid)

def describe(fd, path):
    fl = fcntl.fcntl(fd, fcntl.F_GETFL)
    return "same stat %s, name %s, flags %s, cloexec %s" % (
        same(fd, path), os.readlink("/proc/self/fd/%d" % fd) == path, oct(fl), fcntl.fcntl(fd, fcntl.F_GETFD))

f = d + "/f"
with open(f, "w") as w: w.write("hello world")
os.mkdir(d + "/dir")
open(d + "/dir/a", "w").close()
open(d + "/dir/b", "w").close()
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
c, dg = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
pid = os.fork()
if pid == 0:
    a.close()
    # 1. A file whose sender keeps it open: the same offset both ways.
    _, fds, _ = recv(b)
    fd = fds[0]
    print("file:", describe(fd, f))
    print("read from shared offset:", os.read(fd, 3))
    os.write(fd, b"XY")
    b.send(b"1")
    # 2. The sender closed it before the receipt.
    _, fds, _ = recv(b)
    print("closed by sender:", describe(fds[0], f), os.pread(fds[0], 5, 0))
    os.close(fds[0])
    # 3. Several at once, with MSG_CMSG_CLOEXEC: a directory, O_PATH, a file.
    _, fds, _ = recv(b, 4, socket.MSG_CMSG_CLOEXEC)
    print("count:", len(fds))
    print("dir:", describe(fds[0], d + "/dir"), sorted(os.listdir(fds[0])))
    print("openat in dir:", e(lambda: (os.close(os.open("a", os.O_RDONLY, dir_fd=fds[0])), "ok")[1]))
    print("O_PATH:", describe(fds[1], f), e(lambda: os.read(fds[1], 1)))
    print("fstatat O_PATH:", os.stat(fds[1]).st_ino == os.stat(f).st_ino)
    print("file rdonly:", describe(fds[2], f), e(lambda: os.write(fds[2], b"z")))
    os.fchdir(fds[0])
    print("fchdir:", os.getcwd() == d + "/dir", sorted(os.listdir(".")))
    os.chdir("/")
    for x in fds: os.close(x)
    # 4. Unlinked before the receipt.
    _, fds, _ = recv(b)
    st = os.fstat(fds[0])
    print("unlinked:", st.st_nlink, os.pread(fds[0], 10, 0), os.readlink("/proc/self/fd/%d" % fds[0]).endswith(" (deleted)"))
    os.close(fds[0])
    # 5. recvmmsg on a datagram socket (through libc).
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    class iovec(ctypes.Structure): _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    class msghdr(ctypes.Structure): _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32), ("iov", ctypes.POINTER(iovec)), ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t), ("flags", ctypes.c_int)]
    class mmsghdr(ctypes.Structure): _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]
    vec = (mmsghdr * 2)()
    keep = []
    for i in range(2):
        buf = ctypes.create_string_buffer(16); ctl = ctypes.create_string_buffer(64); io = iovec(ctypes.cast(buf, ctypes.c_void_p), 16)
        keep += [buf, ctl, io]
        vec[i].hdr.iov = ctypes.pointer(io); vec[i].hdr.iovlen = 1
        vec[i].hdr.control = ctypes.cast(ctl, ctypes.c_void_p); vec[i].hdr.controllen = 64
    n = libc.recvmmsg(dg.fileno(), vec, 2, 0x40000000 | 0x100, None)  # MSG_CMSG_CLOEXEC | MSG_WAITFORONE
    got = []
    for i in range(max(n, 0)):
        raw = ctypes.string_at(vec[i].hdr.control, vec[i].hdr.controllen)
        got += list(array.array("i", raw[16:16 + (len(raw) - 16) // 4 * 4]))[:1]
    print("recvmmsg:", n, [describe(x, f) for x in got])
    for x in got: os.close(x)
    # 6. Peeked first (MSG_PEEK installs the descriptors too), closed,
    # then received.
    _, fds, _ = recv(b, 4, socket.MSG_PEEK)
    print("peeked:", describe(fds[0], f))
    os.close(fds[0])
    _, fds, _ = recv(b)
    print("received after peek:", describe(fds[0], f), os.pread(fds[0], 5, 0))
    os._exit(0)
b.close()
fd = os.open(f, os.O_RDWR)
os.lseek(fd, 6, os.SEEK_SET)
send(a, [fd])
a.recv(1)
print("sender offset after receiver read and wrote:", os.lseek(fd, 0, os.SEEK_CUR))
fd2 = os.open(f, os.O_RDONLY)
send(a, [fd2])
os.close(fd2)
dfd = os.open(d + "/dir", os.O_RDONLY | os.O_DIRECTORY)
pfd = os.open(f, os.O_PATH)
rfd = os.open(f, os.O_RDONLY)
send(a, [dfd, pfd, rfd])
for x in (dfd, pfd, rfd): os.close(x)
with open(d + "/gone", "w") as w: w.write("ephemeral")
g = os.open(d + "/gone", os.O_RDONLY)
os.unlink(d + "/gone")
send(a, [g])
os.close(g)
m1 = os.open(f, os.O_RDONLY)
m2 = os.open(f, os.O_WRONLY | os.O_APPEND)
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for x in (m1, m2):
    c.sendmsg([b"d"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [x]))])
    os.close(x)
p6 = os.open(f, os.O_RDONLY)
send(a, [p6])
os.close(p6)
_, status = os.waitpid(pid, 0)
print("child status:", status)
print("data:", open(f, "rb").read())
# Sending to a peer that is gone fails and passes nothing.
x, y = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
y.close()
fd = os.open(f, os.O_RDONLY)
print("send to closed peer:", e(lambda: send(x, [fd])))
print("send bad fd:", e(lambda: send(a, [9999])))
