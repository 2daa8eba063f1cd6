"""inotify watches on files and directories of the tmpfs under test,
printed for a comparison of the sandbox's /tmp with a kernel tmpfs: for
each change, the events each watch reads (its label, the mask's names,
the name, cookies as their order of first appearance), and
inotify_add_watch's errors in Linux's order. A line is one case:
its name, then what the case printed."""
import ctypes, errno, os, socket, struct, sys
from probeutil import e

libc = ctypes.CDLL(None, use_errno=True)
IN_NONBLOCK = 0o4000
NAMES = [(0x1, "ACCESS"), (0x2, "MODIFY"), (0x4, "ATTRIB"), (0x8, "CLOSE_WRITE"),
         (0x10, "CLOSE_NOWRITE"), (0x20, "OPEN"), (0x40, "MOVED_FROM"), (0x80, "MOVED_TO"),
         (0x100, "CREATE"), (0x200, "DELETE"), (0x400, "DELETE_SELF"), (0x800, "MOVE_SELF"),
         (0x2000, "UNMOUNT"), (0x4000, "Q_OVERFLOW"), (0x8000, "IGNORED"), (0x40000000, "ISDIR")]
ALL = 0xfff
ONLYDIR, DONT_FOLLOW, EXCL_UNLINK, MASK_CREATE, MASK_ADD, ONESHOT = 0x1000000, 0x2000000, 0x4000000, 0x10000000, 0x20000000, 0x80000000

d = sys.argv[1]
w = d + "/w"
other = d + "/other"
u = d + "/u"


def init():
    fd = libc.inotify_init1(IN_NONBLOCK)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1")
    return fd


def add(fd, path, mask):
    """The watch descriptor, or the errno's name."""
    wd = libc.inotify_add_watch(fd, path.encode() if isinstance(path, str) else path, ctypes.c_uint32(mask))
    if wd < 0:
        return errno.errorcode[ctypes.get_errno()]
    return wd


def drain(fd, labels):
    """The events waiting, each as label:MASK|MASK:name:cookie."""
    out, cookies = [], {}
    while True:
        try:
            b = os.read(fd, 65536)
        except BlockingIOError:
            return out
        i = 0
        while i < len(b):
            wd, mask, cookie, n = struct.unpack_from("iIII", b, i)
            name = b[i + 16:i + 16 + n].rstrip(b"\0").decode()
            i += 16 + n
            names = [s for bit, s in NAMES if mask & bit]
            c = ""
            if cookie:
                c = cookies.setdefault(cookie, "c%d" % (len(cookies) + 1))
            out.append("%s:%s:%s:%s" % (labels.get(wd, "?"), "|".join(names), name, c))


def reset():
    for p in (w, other, u):
        if os.path.isdir(p):
            for n in os.listdir(p):
                q = p + "/" + n
                if os.path.isdir(q) and not os.path.islink(q):
                    os.rmdir(q)
                else:
                    os.unlink(q)
        else:
            os.mkdir(p)
    for p in (w + "/f", u + "/f"):
        with open(p, "w") as f:
            f.write("hello\n")


def case(name, watches, op, setup=None):
    """Runs op with watches (label, path, mask) on a new instance, placed
    after setup, and prints what each watch read."""
    reset()
    if setup:
        setup()
    fd = init()
    labels, got = {}, []
    for label, path, mask in watches:
        wd = add(fd, path, mask)
        if isinstance(wd, str):
            got.append("%s=%s" % (label, wd))
        else:
            labels.setdefault(wd, label)
    r = e(op)
    got += drain(fd, labels)
    os.close(fd)
    print(name, r, " ".join(got))


def write(p, data=b"x", flags=os.O_WRONLY):
    fd = os.open(p, flags, 0o644)
    os.write(fd, data)
    os.close(fd)


def read(p):
    fd = os.open(p, os.O_RDONLY)
    os.read(fd, 100)
    os.close(fd)


D = [("W", w, ALL)]
F = [("F", u + "/f", ALL)]
case("dir create", D, lambda: write(w + "/g", flags=os.O_WRONLY | os.O_CREAT))
case("dir write", D, lambda: write(w + "/f"))
case("dir append", D, lambda: write(w + "/f", flags=os.O_WRONLY | os.O_APPEND))
case("dir read", D, lambda: read(w + "/f"))
case("dir unlink", D, lambda: os.unlink(w + "/f"))
case("dir mkdir", D, lambda: os.mkdir(w + "/s"))
case("dir mkdir rmdir", D, lambda: (os.mkdir(w + "/s"), os.rmdir(w + "/s")) and None)
case("dir mknod fifo", D, lambda: os.mkfifo(w + "/p"))
case("dir symlink", D, lambda: os.symlink("f", w + "/l"))
case("dir link", D, lambda: os.link(w + "/f", w + "/h"))
case("dir rename within", D, lambda: os.rename(w + "/f", w + "/g"))
case("dir rename out", D, lambda: os.rename(w + "/f", other + "/g"))
case("dir rename in", D, lambda: (write(other + "/g", flags=os.O_WRONLY | os.O_CREAT), os.rename(other + "/g", w + "/g")) and None)
case("dir rename dir in", D + [("O", other, ALL)], lambda: (os.mkdir(other + "/s"), os.rename(other + "/s", w + "/s")) and None)
case("dir rename over", D, lambda: (write(w + "/g", flags=os.O_WRONLY | os.O_CREAT), os.rename(w + "/g", w + "/f")) and None)
case("dir chmod", D, lambda: os.chmod(w + "/f", 0o600))
case("dir chown", D, lambda: os.chown(w + "/f", 1, 1))
case("dir utime", D, lambda: os.utime(w + "/f", (1, 2)))
case("dir truncate", D, lambda: os.truncate(w + "/f", 1))
case("dir self chmod", D, lambda: os.chmod(w, 0o755))
case("dir subdir chmod", D, lambda: (os.mkdir(w + "/s"), os.chmod(w + "/s", 0o700)) and None)
case("dir rmdir self", D, lambda: (os.unlink(w + "/f"), os.rmdir(w)) and None)
case("file open read", F, lambda: read(u + "/f"))
case("file write", F, lambda: write(u + "/f"))
case("file chmod", F, lambda: os.chmod(u + "/f", 0o600))
case("file utime", F, lambda: os.utime(u + "/f", (1, 2)))
case("file write trunc", F, lambda: write(u + "/f", flags=os.O_WRONLY | os.O_TRUNC))
case("dir write trunc", D, lambda: write(w + "/f", flags=os.O_WRONLY | os.O_TRUNC))
case("file truncate", F, lambda: os.truncate(u + "/f", 0))
case("file unlink", F, lambda: os.unlink(u + "/f"))
case("file unlink excl", [("F", u + "/f", ALL | EXCL_UNLINK)], lambda: os.unlink(u + "/f"))
case("file oneshot", [("F", u + "/f", ALL | ONESHOT)], lambda: (read(u + "/f"), write(u + "/f")) and None)
def unlink_open(p):
    fd = os.open(p, os.O_RDONLY)
    os.unlink(p)
    os.close(fd)


case("file unlink open", F, lambda: unlink_open(u + "/f"))
case("file link", F, lambda: os.link(u + "/f", u + "/h"))
case("file rename", F, lambda: os.rename(u + "/f", u + "/g"))
case("dir list", D, lambda: os.listdir(w) and None)
case("dir subdir list", D, lambda: (os.mkdir(w + "/s"), os.listdir(w + "/s")) and None)
case("symlink itself", [("L", w + "/l", ALL | DONT_FOLLOW)], lambda: os.lchown(w + "/l", 1, 1),
     lambda: os.symlink("f", w + "/l"))
L = [("L", u + "/l", ALL | DONT_FOLLOW)]
mkl = lambda: os.symlink("f", u + "/l")
case("symlink rename", L, lambda: os.rename(u + "/l", u + "/m"), mkl)
case("symlink unlink", L, lambda: os.unlink(u + "/l"), mkl)
case("symlink link unlink", L, lambda: (os.link(u + "/l", u + "/k", follow_symlinks=False), os.unlink(u + "/l"),
                                        os.unlink(u + "/k")) and None, mkl)
case("symlink utime", L, lambda: os.utime(u + "/l", (1, 2), follow_symlinks=False), mkl)
case("symlink followed", [("F", u + "/l", ALL)], lambda: write(u + "/l"), mkl)
case("symlink in watched dir", D + [("L", w + "/l", ALL | DONT_FOLLOW)],
     lambda: (os.lchown(w + "/l", 2, 2), os.rename(w + "/l", w + "/m"), os.unlink(w + "/m")) and None,
     lambda: os.symlink("f", w + "/l"))


def mksock():
    s = socket.socket(socket.AF_UNIX)
    s.bind(u + "/sock")
    s.close()


case("socket", [("S", u + "/sock", ALL)], lambda: (os.chmod(u + "/sock", 0o600), os.rename(u + "/sock", u + "/sock2"),
                                                   os.unlink(u + "/sock2")) and None, mksock)
case("fifo", [("P", w + "/p", ALL)], lambda: os.chmod(w + "/p", 0o600), lambda: os.mkfifo(w + "/p"))
case("two names one watch", F + [("H", u + "/f", 0x2)], lambda: write(u + "/f"))
case("file and dir", D + [("F", w + "/f", ALL)], lambda: write(w + "/f"))
case("file unlink in watched dir", D + [("F", w + "/f", ALL)], lambda: os.unlink(w + "/f"))
case("open file unlink in watched dir", D + [("F", w + "/f", ALL)], lambda: unlink_open(w + "/f"))
case("subdir rmdir in watched dir", D + [("S", w + "/s", ALL)], lambda: os.rmdir(w + "/s"), lambda: os.mkdir(w + "/s"))
case("subdir chmod in watched dir", D + [("S", w + "/s", ALL)], lambda: os.chmod(w + "/s", 0o700), lambda: os.mkdir(w + "/s"))
case("file rename in watched dir", D + [("F", w + "/f", ALL)], lambda: os.rename(w + "/f", w + "/g"))
case("file rename twice", F, lambda: (os.rename(u + "/f", u + "/g"), os.rename(u + "/g", u + "/f")) and None)
case("file exchange", F, lambda: libc.renameat2(-100, (u + "/f").encode(), -100, (u + "/g").encode(), 2) and None,
     lambda: write(u + "/g", flags=os.O_WRONLY | os.O_CREAT))
case("file rename over watched", F, lambda: os.rename(u + "/g", u + "/f"), lambda: write(u + "/g", flags=os.O_WRONLY | os.O_CREAT))
case("file link unlink", F, lambda: (os.link(u + "/f", u + "/h"), os.unlink(u + "/f"), os.unlink(u + "/h")) and None)
case("dir rename self", D, lambda: os.rename(w, d + "/w2"))
os.rename(d + "/w2", w)
case("dir rename twice then create", D, lambda: (os.rename(w, d + "/w2"), os.rename(d + "/w2", w),
                                                  write(w + "/n", flags=os.O_WRONLY | os.O_CREAT)) and None)
case("dir moved then create", D, lambda: (os.rename(w, other + "/w"), write(other + "/w/n", flags=os.O_WRONLY | os.O_CREAT),
                                           os.listdir(other + "/w"), os.rename(other + "/w", w)) and None)
case("dir exchange", D + [("O", other, ALL)],
     lambda: libc.renameat2(-100, w.encode(), -100, other.encode(), 2) and None)
libc.renameat2(-100, w.encode(), -100, other.encode(), 2)

# inotify_add_watch's errors, and watch descriptors.
reset()
fd = init()
reg = os.open(w + "/f", os.O_RDONLY)
os.symlink("f", w + "/l")
os.symlink("nowhere", w + "/dangling")
os.link(w + "/f", w + "/h")
print("errors",
      "mask0", add(fd, w + "/f", 0),
      "mask0 badfd", add(999, w + "/f", 0),
      "badbits", add(fd, w + "/f", 0x8000),
      "badfd", add(999, w + "/f", ALL),
      "badfd missing", add(999, w + "/nope", ALL),
      "notinotify", add(reg, w + "/f", ALL),
      "notinotify missing", add(reg, w + "/nope", ALL),
      "add create", add(fd, w + "/nope", ALL | MASK_ADD | MASK_CREATE),
      "missing", add(fd, w + "/nope", ALL),
      "dangling", add(fd, w + "/dangling", ALL),
      "onlydir", add(fd, w + "/f", ALL | ONLYDIR),
      "onlydir dir", add(fd, w, ALL | ONLYDIR) == add(fd, w, ALL),
      "notdir", add(fd, w + "/f/x", ALL),
      "loop", add(fd, w + "/loop/x", ALL) if os.symlink("loop", w + "/loop") is None else "",
      "long", add(fd, w + "/" + "x" * 300, ALL),
      "badptr", add(fd, ctypes.c_char_p(1), ALL))
a = add(fd, w + "/f", ALL)
print("wds",
      "same", add(fd, w + "/f", 0x2) == a,
      "hardlink", add(fd, w + "/h", 0x2) == a,
      "symlink followed", add(fd, w + "/l", 0x2) == a,
      "create again", add(fd, w + "/f", ALL | MASK_CREATE),
      "rm", e(lambda: libc.inotify_rm_watch(fd, a)),
      "rm again", libc.inotify_rm_watch(fd, a), errno.errorcode.get(ctypes.get_errno()),
      "after rm new", add(fd, w + "/f", ALL) != a)
os.close(fd)
os.close(reg)

# As nobody: read permission on the file, search on the way.
reset()
os.chmod(d, 0o755)
os.chmod(w, 0o755)
os.chmod(w + "/f", 0o600)
os.mkdir(w + "/closed", 0o700)
pid = os.fork()
if pid == 0:
    os.setgid(65534)
    os.setuid(65534)
    fd = init()
    print("nobody",
          "unreadable", add(fd, w + "/f", ALL),
          "dir", isinstance(add(fd, w, ALL), int),
          "unsearchable", add(fd, w + "/closed/x", ALL))
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
