# tmpfile.py DIR: O_TMPFILE in DIR: an unnamed file, its flags and
# /proc name, linkat(AT_EMPTY_PATH) giving it a name, O_EXCL forbidding
# that, and open's errors. (Not linkat through /proc/self/fd: with a
# kernel tmpfs mounted twice at /dev/shm, as on this VM, that is EXDEV.)
import ctypes, fcntl, os, sys
d = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o640)
st = os.fstat(fd)
print("nlink", st.st_nlink, "mode", oct(st.st_mode), "size", st.st_size, "blocks", st.st_blocks)
os.write(fd, b"data")
print("listing", sorted(os.listdir(d)))
link = os.readlink("/proc/self/fd/%d" % fd)
print("proc name", link.replace(d, "D").split("#")[0], link.endswith(" (deleted)"))
print("flags", hex(fcntl.fcntl(fd, fcntl.F_GETFL)))
def flink(fd, name):
    r = libc.linkat(fd, b"", -100, (d + "/" + name).encode(), 0x1000)
    return ctypes.get_errno() if r else 0
print("link", flink(fd, "named"), sorted(os.listdir(d)), os.fstat(fd).st_nlink, open(d + "/named").read())
print("again", flink(fd, "named2"), os.fstat(fd).st_nlink)
fd2 = os.open(d, os.O_TMPFILE | os.O_WRONLY | os.O_EXCL, 0o600)
print("excl link", flink(fd2, "n2"))
fd3 = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o600)
os.write(fd3, b"x" * 5000)
print("blocks", os.fstat(fd3).st_blocks, "statvfs change", os.statvfs(d).f_bfree >= 0)
os.close(fd2)
for fl, path, what in [(os.O_TMPFILE | os.O_RDONLY, d, "rdonly"), (os.O_TMPFILE | os.O_RDWR, d + "/named", "on a file"),
                       (os.O_TMPFILE | os.O_RDWR, d + "/missing", "missing"), (os.O_TMPFILE | os.O_RDWR | os.O_CREAT, d, "with O_CREAT")]:
    try: os.close(os.open(path, fl, 0o600)); print(what, "ok")
    except OSError as e: print(what, e.errno)
os.mkdir(d + "/sub"); os.chmod(d + "/sub", 0o2755); os.chown(d + "/sub", -1, 4)
fd4 = os.open(d + "/sub", os.O_TMPFILE | os.O_RDWR, 0o777)
st = os.fstat(fd4); print("sgid dir: gid", st.st_gid, "mode", oct(st.st_mode))
os.close(fd4); os.close(fd3); os.close(fd)
print("after close", sorted(os.listdir(d)), sorted(os.listdir(d + "/sub")))
