# xattrs.py DIR [nobody]: extended attributes on files, directories and
# symlinks in DIR: namespaces, flags, sizes, permissions and errors.
import ctypes, errno, os, stat, sys
d = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
P, S = ctypes.c_void_p, ctypes.c_size_t
libc.setxattr.argtypes = [ctypes.c_char_p, ctypes.c_char_p, P, S, ctypes.c_int]
libc.getxattr.argtypes = [ctypes.c_char_p, ctypes.c_char_p, P, S]
libc.listxattr.argtypes = [ctypes.c_char_p, P, S]
libc.fgetxattr.argtypes = [ctypes.c_int, ctypes.c_char_p, P, S]
for fn in (libc.setxattr, libc.getxattr, libc.listxattr, libc.fgetxattr):
    fn.restype = ctypes.c_ssize_t
def err(f, *a, **k):
    try:
        r = f(*a, **k)
        return r if r is not None else "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, e.errno)
def c(fn, *a):
    r = getattr(libc, fn)(*a)
    return r if r >= 0 else errno.errorcode[ctypes.get_errno()]
# POSIX ACLs in their xattr form: version 2, then {tag, perm, id} entries.
UO, U, GO, G, M, O, X = 1, 2, 4, 8, 0x10, 0x20, 0xffffffff
def acl(*entries, version=2):
    return version.to_bytes(4, "little") + b"".join(
        t.to_bytes(2, "little") + p.to_bytes(2, "little") + i.to_bytes(4, "little") for t, p, i in entries)
def mode(p):
    return oct(os.stat(p).st_mode & 0o7777)
f = d + "/f"
open(f, "w").close()
os.mkdir(d + "/dir")
os.symlink("f", d + "/ln")
os.mkfifo(d + "/fifo")
print("set user", err(os.setxattr, f, "user.a", b"1"))
print("set empty", err(os.setxattr, f, "user.empty", b""), err(os.getxattr, f, "user.empty"))
print("create exists", err(os.setxattr, f, "user.a", b"2", os.XATTR_CREATE))
print("replace missing", err(os.setxattr, f, "user.b", b"2", os.XATTR_REPLACE))
print("replace", err(os.setxattr, f, "user.a", b"22", os.XATTR_REPLACE), err(os.getxattr, f, "user.a"))
print("bad flags", c("setxattr", f.encode(), b"user.c", b"x", 1, 4))
print("bare prefix", err(os.setxattr, f, "user.", b"x"), err(os.getxattr, f, "user."))
print("unknown ns", err(os.setxattr, f, "foo.bar", b"x"), err(os.getxattr, f, "foo.bar"))
print("acl", err(os.getxattr, f, "system.posix_acl_access"))
print("empty name", err(os.setxattr, f, "", b"x"), err(os.getxattr, f, ""))
print("long name", err(os.setxattr, f, "user." + "n" * 251, b"x"), err(os.setxattr, f, "user." + "n" * 250, b"x"))
print("big value", c("setxattr", f.encode(), b"user.big", ctypes.create_string_buffer(65537), 65537, 0),
      c("setxattr", f.encode(), b"user.big", ctypes.create_string_buffer(65536), 65536, 0))
buf = ctypes.create_string_buffer(8)
print("get size 0", c("getxattr", f.encode(), b"user.a", None, 0), "small", c("getxattr", f.encode(), b"user.a", buf, 1))
print("missing", err(os.getxattr, f, "user.zz"), err(os.getxattr, d + "/nofile", "user.a"), err(os.getxattr, d + "/nofile", ""))
print("list", err(os.listxattr, f))
print("list size 0", c("listxattr", f.encode(), None, 0), "small", c("listxattr", f.encode(), buf, 3))
print("trusted", err(os.setxattr, f, "trusted.t", b"t"), err(os.getxattr, f, "trusted.t"))
print("security", err(os.setxattr, f, "security.s", b"s"), err(os.getxattr, f, "security.s"))
print("dir", err(os.setxattr, d + "/dir", "user.d", b"d"), err(os.listxattr, d + "/dir"))
print("symlink follow", err(os.setxattr, d + "/ln", "user.via", b"v"), err(os.getxattr, f, "user.via"))
print("symlink nofollow", err(os.setxattr, d + "/ln", "user.l", b"l", follow_symlinks=False),
      err(os.getxattr, d + "/ln", "user.l", follow_symlinks=False), err(os.listxattr, d + "/ln", follow_symlinks=False))
print("symlink trusted", err(os.setxattr, d + "/ln", "trusted.l", b"l", follow_symlinks=False), err(os.listxattr, d + "/ln", follow_symlinks=False))
print("fifo user", err(os.setxattr, d + "/fifo", "user.x", b"x"), err(os.getxattr, d + "/fifo", "user.x"))
fd = os.open(f, os.O_RDONLY)
print("fd", err(os.setxattr, fd, "user.fd", b"fd"), err(os.getxattr, fd, "user.fd"), err(os.removexattr, fd, "user.fd"), err(os.removexattr, fd, "user.fd"))
pfd = os.open(f, os.O_PATH)
print("O_PATH", err(os.getxattr, pfd, "user.a"), err(os.setxattr, pfd, "user.a", b"x"), err(os.listxattr, pfd), c("fgetxattr", pfd, b"", None, 0))
st0 = os.stat(f).st_ctime_ns
print("remove", err(os.removexattr, f, "user.empty"), err(os.removexattr, f, "user.empty"), os.stat(f).st_ctime_ns >= st0)
print("final list", err(os.listxattr, f))
if len(sys.argv) > 2:
    os.chmod(d, 0o1777); os.chmod(f, 0o644); os.chmod(d + "/dir", 0o1777)
    pid = os.fork()
    if pid == 0:
        os.setgroups([]); os.setgid(65534); os.setuid(65534)
        print("nobody get", err(os.getxattr, f, "user.a"), "set", err(os.setxattr, f, "user.n", b"n"))
        print("nobody trusted", err(os.getxattr, f, "trusted.t"), err(os.setxattr, f, "trusted.n", b"n"), "list", err(os.listxattr, f))
        print("nobody security", err(os.getxattr, f, "security.s"), err(os.setxattr, f, "security.n", b"n"), err(os.removexattr, f, "security.s"))
        print("nobody sticky dir", err(os.setxattr, d + "/dir", "user.n", b"n"), err(os.getxattr, d + "/dir", "user.d"))
        g = d + "/mine"; open(g, "w").close()
        print("nobody own", err(os.setxattr, g, "user.n", b"n"), err(os.listxattr, g))
        v2 = (0x02000000).to_bytes(4, "little") + bytes(16)
        print("nobody acl", err(os.removexattr, f, "system.posix_acl_access"), err(os.removexattr, f, "system.posix_acl_default"), err(os.removexattr, g, "system.posix_acl_access"))
        print("nobody caps", err(os.setxattr, g, "security.capability", v2), err(os.setxattr, g, "security.capability", b"bad"), err(os.removexattr, g, "security.capability"))
        os.chmod(g, 0); print("nobody mode 0", err(os.getxattr, g, "user.n"), err(os.listxattr, g), err(os.removexattr, g, "user.n"))
        sys.stdout.flush(); os._exit(0)
    os.waitpid(pid, 0)
for n in ["system.posix_acl_access", "system.posix_acl_default", "system.foo", "system."]:
    print(n, err(os.getxattr, f, n), err(os.removexattr, f, n), err(os.removexattr, d + "/dir", n))
print("set acl garbage", err(os.setxattr, f, "system.posix_acl_access", b"garbage"))
# An ACL a mode can say becomes the mode (posix_acl_update_mode) and is not
# stored; malformed ones fail in do_set_acl's order.
h = d + "/aclf"
open(h, "w").close()
os.chmod(h, 0o2644)
A = "system.posix_acl_access"
st0 = os.stat(h).st_ctime_ns
print("acl minimal", err(os.setxattr, h, A, acl((UO, 7, X), (GO, 5, X), (O, 1, X))), mode(h),
      err(os.getxattr, h, A), err(os.listxattr, h), os.stat(h).st_ctime_ns >= st0)
print("acl flags ignored", err(os.setxattr, h, A, acl((UO, 6, X), (GO, 4, X), (O, 4, X)), os.XATTR_REPLACE), mode(h))
print("acl header only", err(os.setxattr, h, A, acl()), "empty", err(os.setxattr, h, A, b""), mode(h))
print("acl short", err(os.setxattr, h, A, b"\2\0"), "ragged", err(os.setxattr, h, A, acl((UO, 6, X), (GO, 4, X), (O, 4, X)) + b"x"))
print("acl version 1", err(os.setxattr, h, A, acl((UO, 6, X), (GO, 4, X), (O, 4, X), version=1)))
print("acl bad tag", err(os.setxattr, h, A, acl((UO, 6, X), (0x40, 4, X), (O, 4, X))),
      "user without id", err(os.setxattr, h, A, acl((UO, 6, X), (U, 4, X), (GO, 4, X), (M, 4, X), (O, 4, X))))
print("acl bad perm", err(os.setxattr, h, A, acl((UO, 8, X), (GO, 4, X), (O, 4, X))),
      "unsorted", err(os.setxattr, h, A, acl((GO, 4, X), (UO, 6, X), (O, 4, X))),
      "no other", err(os.setxattr, h, A, acl((UO, 6, X), (GO, 4, X))),
      "twice", err(os.setxattr, h, A, acl((UO, 6, X), (UO, 6, X), (GO, 4, X), (O, 4, X))), mode(h))
print("acl default on a file", err(os.setxattr, h, "system.posix_acl_default", acl((UO, 7, X), (GO, 5, X), (O, 5, X))),
      err(os.setxattr, h, "system.posix_acl_default", b""))
print("acl on a fifo", err(os.setxattr, d + "/fifo", A, acl((UO, 6, X), (GO, 0, X), (O, 0, X))), mode(d + "/fifo"))
print("acl on a symlink", err(os.setxattr, d + "/ln", A, acl((UO, 6, X), (GO, 4, X), (O, 4, X)), follow_symlinks=False))
hfd = os.open(h, os.O_RDONLY)
print("acl by fd", err(os.setxattr, hfd, A, acl((UO, 4, X), (GO, 0, X), (O, 0, X))), mode(h))
os.close(hfd)
os.chmod(h, 0o2644)
os.chown(h, 65534, 0)
pid = os.fork()
if pid == 0:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
    # The owner outside the file's group: the setgid bit goes, as a chmod.
    print("nobody acl own", err(os.setxattr, h, A, acl((UO, 6, X), (GO, 6, X), (O, 4, X))), mode(h),
          "unsorted", err(os.setxattr, h, A, acl((GO, 4, X), (UO, 6, X), (O, 4, X))))
    print("nobody acl root's", err(os.setxattr, f, A, acl((UO, 6, X), (GO, 4, X), (O, 4, X))),
          "unsorted", err(os.setxattr, f, A, acl((GO, 4, X), (UO, 6, X), (O, 4, X))),
          "version 1", err(os.setxattr, f, A, acl(version=1)))
    sys.stdout.flush(); os._exit(0)
os.waitpid(pid, 0)
print("caps", err(os.setxattr, f, "security.capability", b"garbage"), err(os.getxattr, f, "security.capability"))
v2 = (0x02000001).to_bytes(4, "little") + bytes(16)
print("caps v2", err(os.setxattr, f, "security.capability", v2), err(os.getxattr, f, "security.capability") == v2, err(os.removexattr, f, "security.capability"))
import subprocess
subprocess.run(["cp", "-a", f, d + "/copy"], check=True)
print("cp -a", err(os.listxattr, d + "/copy"), err(os.getxattr, d + "/copy", "user.a"))
# The *xattrat calls (Linux 6.13): struct xattr_args {value, size, flags}.
class XattrArgs(ctypes.Structure):
    _fields_ = [("value", ctypes.c_uint64), ("size", ctypes.c_uint32), ("flags", ctypes.c_uint32)]
libc.syscall.restype = ctypes.c_long
def sc(nr, *a):
    # Every argument as a full register: a bare Python int is passed as a
    # C int, whose upper half is undefined.
    a = [ctypes.c_long(x) if isinstance(x, int) else x for x in a]
    r = libc.syscall(ctypes.c_long(nr), *a)
    return r if r >= 0 else errno.errorcode[ctypes.get_errno()]
val = ctypes.create_string_buffer(b"atval")
dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
args = XattrArgs(ctypes.addressof(val), 5, 0)
print("setxattrat", sc(463, dfd, b"f", 0, b"user.at", ctypes.byref(args), 16), err(os.getxattr, f, "user.at"))
args.flags = os.XATTR_CREATE
print("setxattrat create", sc(463, dfd, b"f", 0, b"user.at", ctypes.byref(args), 16))
print("setxattrat small args", sc(463, dfd, b"f", 0, b"user.at", ctypes.byref(args), 8), "bad at_flags", sc(463, dfd, b"f", 0x400, b"user.at", ctypes.byref(args), 16))
big = ctypes.create_string_buffer(bytes(ctypes.sizeof(args)) + b"\x00" * 8)
ctypes.memmove(big, ctypes.byref(args), ctypes.sizeof(args))
print("setxattrat bigger zero args", sc(463, dfd, b"ln", 0x100, b"trusted.x", big, 24))
big[20] = b"\x01"
print("setxattrat bigger nonzero args", sc(463, dfd, b"f", 0, b"user.x", big, 24))
out = ctypes.create_string_buffer(64)
gargs = XattrArgs(ctypes.addressof(out), 64, 0)
print("getxattrat", sc(464, dfd, b"f", 0, b"user.at", ctypes.byref(gargs), 16), out.value)
gargs.flags = 1
print("getxattrat flags", sc(464, dfd, b"f", 0, b"user.at", ctypes.byref(gargs), 16))
fdf = os.open(f, os.O_RDONLY)
print("listxattrat empty path", sc(465, fdf, b"", 0x1000, None, 0) > 0, "nofollow", sc(465, dfd, b"ln", 0x100, out, 64), out.raw[:10])
print("removexattrat", sc(466, dfd, b"f", 0, b"user.at"), sc(466, dfd, b"f", 0, b"user.at"))
