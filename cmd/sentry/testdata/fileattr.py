"""file_getattr and file_setattr on a tmpfs (issue #15): the inode flags
as fsxattr flags, sizes, flags, errnos, printed for a comparison of the
sandbox's /tmp with a kernel tmpfs."""
import ctypes, errno, os, struct, sys
from probeutil import testdir
libc = ctypes.CDLL(None, use_errno=True)
GETA, SETA = 468, 469
d = testdir()
def call(nr, dfd, path, buf, size, flags):
    r = libc.syscall(nr, dfd, None if path is None else path.encode(), buf, ctypes.c_size_t(size), flags)
    return errno.errorcode[ctypes.get_errno()] if r < 0 else r
def get(path, size=24, flags=0, dfd=-100):
    buf = ctypes.create_string_buffer(b"\xaa" * 64, 64)
    r = call(GETA, dfd, path, buf, size, flags)
    return r, buf.raw[:size + 4].hex()
def set_(path, x, size=24, flags=0, extra=b"", dfd=-100, projid=0, extsize=0):
    buf = ctypes.create_string_buffer(struct.pack("QIIII", x, extsize, 0, projid, 0) + extra + b"\0" * 16)
    return call(SETA, dfd, path, buf, size, flags)
open(d + "/f", "w").close(); os.mkdir(d + "/dd"); os.symlink("f", d + "/ln"); os.mkfifo(d + "/fifo")
print("get f", get(d + "/f"))
print("set f nodump", set_(d + "/f", 0x80), get(d + "/f"))
print("set f immutable", set_(d + "/f", 0x8), get(d + "/f"))
print("set f clear", set_(d + "/f", 0), get(d + "/f"))
print("get small", get(d + "/f", 16))
print("get big", get(d + "/f", 32))
print("get huge", get(d + "/f", 5000))
print("get bad flags", get(d + "/f", 24, 0x2))
print("get nofollow ln", get(d + "/ln", 24, 0x100))
print("get follow ln", get(d + "/ln", 24, 0))
print("get fifo", get(d + "/fifo"))
print("get dir", get(d + "/dd"))
print("get missing", get(d + "/nope"))
fd = os.open(d + "/f", os.O_RDONLY)
print("get empty fd", get("", 24, 0x1000, fd))
print("get null fd", get(None, 24, 0x1000, fd))
print("get null no flag", get(None, 24, 0, fd))
print("set sync", set_(d + "/f", 0x20), get(d + "/f"))
print("set unknown", set_(d + "/f", 1 << 40))
print("set realtime", set_(d + "/f", 0x1))
print("set extsize", set_(d + "/f", 0x800, extsize=4096))
print("set projid", set_(d + "/f", 0, projid=3))
print("set trailing nonzero", set_(d + "/f", 0, size=32, extra=b"\1"))
print("set trailing zero", set_(d + "/f", 0x40, size=32), get(d + "/f"))
print("set small", set_(d + "/f", 0, size=16))
print("set ln nofollow", set_(d + "/ln", 0x40, flags=0x100))
print("set fifo", set_(d + "/fifo", 0x40))
print("set dir", set_(d + "/dd", 0x40), get(d + "/dd"))
print("set missing", set_(d + "/nope", 0x40))
print("set empty fd", set_("", 0x0, flags=0x1000, dfd=fd), get(d + "/f"))
pid = os.fork()
if pid == 0:
    os.setresuid(65534, 65534, 65534)
    print("nobody get", get(d + "/f"))
    print("nobody set", set_(d + "/f", 0x40))
    print("nobody set fifo", set_(d + "/fifo", 0x40))
    os._exit(0)
os.waitpid(pid, 0)
print("clear", set_(d + "/f", 0), set_(d + "/dd", 0))
