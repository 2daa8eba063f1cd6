"""name_to_handle_at and open_by_handle_at on a tmpfs (issue #15), printed
for a comparison of the sandbox's /tmp with a kernel tmpfs."""
import ctypes, errno, os, struct, sys
from probeutil import testdir
libc = ctypes.CDLL(None, use_errno=True)
SYS_name_to_handle_at, SYS_open_by_handle_at = 303, 304
AT_FDCWD, AT_EMPTY_PATH, AT_SYMLINK_FOLLOW = -100, 0x1000, 0x400
AT_HANDLE_FID, AT_HANDLE_MNT_ID_UNIQUE, AT_HANDLE_CONNECTABLE = 0x200, 1, 2
d = testdir()

def mnt_id(p, mask=0x1000):
    # statx's stx_mnt_id (STATX_MNT_ID, or STATX_MNT_ID_UNIQUE).
    buf = ctypes.create_string_buffer(256)
    if libc.syscall(332, AT_FDCWD, p.encode(), 0, mask, buf) != 0:
        return None
    return struct.unpack_from("Q", buf.raw, 0x90)[0]

def n2h(dfd, path, size, flags, mnt=True, raw=None):
    """name_to_handle_at; returns (ret or errno name, handle_bytes, type, mount id, bytes)."""
    buf = ctypes.create_string_buffer(b"\xaa" * (8 + 130), 8 + 130)
    struct.pack_into("Ii", buf, 0, size, -7)
    mid = ctypes.c_uint64(0xdeadbeefdeadbeef)
    p = None if path is None else path.encode()
    r = libc.syscall(SYS_name_to_handle_at, dfd, p, buf if raw is None else raw,
                     ctypes.byref(mid) if mnt else None, flags)
    hb, ht = struct.unpack_from("Ii", buf.raw, 0)
    res = errno.errorcode[ctypes.get_errno()] if r < 0 else r
    # Bytes past the handle's own must be left alone.
    untouched = buf.raw[8 + 12:] == b"\xaa" * 118
    return res, hb, ht, mid.value, buf.raw[8:8 + min(hb, 128)], untouched

def obh(mfd, hb, ht, data, flags):
    buf = ctypes.create_string_buffer(struct.pack("Ii", hb, ht) + data + b"\0" * 128)
    r = libc.syscall(SYS_open_by_handle_at, mfd, buf, flags)
    if r < 0:
        return errno.errorcode[ctypes.get_errno()]
    return r

with open(d + "/f", "w") as f: f.write("hello")
os.mkdir(d + "/sub")
os.symlink("f", d + "/ln")
root_id, root_uniq = mnt_id(d), mnt_id(d, 0x4000)

def show(name, r):
    res, hb, ht, mid, data, untouched = r
    if mid == 0xdeadbeefdeadbeef: same = "mount id unset"
    elif mid == root_uniq: same = "mount id unique"
    elif mid == 0xdeadbeef00000000 | root_id: same = "mount id int"
    else: same = "mount id other"
    print(name, res, "bytes", hb, "type", ht, same, "data", data == b"\xaa" * len(data), "rest untouched", untouched)

for size in (0, 4, 8, 11, 12, 13, 128, 129):
    show("size %d:" % size, n2h(AT_FDCWD, d + "/f", size, 0))
show("flags bad:", n2h(AT_FDCWD, d + "/f", 128, 0x4))
show("flags fid:", n2h(AT_FDCWD, d + "/f", 128, AT_HANDLE_FID))
show("flags uniq:", n2h(AT_FDCWD, d + "/f", 128, AT_HANDLE_MNT_ID_UNIQUE))
show("flags conn:", n2h(AT_FDCWD, d + "/f", 128, AT_HANDLE_CONNECTABLE))
show("flags conn dir:", n2h(AT_FDCWD, d + "/sub", 128, AT_HANDLE_CONNECTABLE))
show("flags conn+fid:", n2h(AT_FDCWD, d + "/f", 128, AT_HANDLE_CONNECTABLE | AT_HANDLE_FID))
show("flags conn+empty:", n2h(AT_FDCWD, d + "/f", 128, AT_HANDLE_CONNECTABLE | AT_EMPTY_PATH))
show("dir:", n2h(AT_FDCWD, d + "/sub", 128, 0))
show("root:", n2h(AT_FDCWD, d, 128, 0))
show("symlink nofollow:", n2h(AT_FDCWD, d + "/ln", 128, 0))
show("symlink follow:", n2h(AT_FDCWD, d + "/ln", 128, AT_SYMLINK_FOLLOW))
show("missing:", n2h(AT_FDCWD, d + "/nope", 128, 0))
show("empty no flag:", n2h(AT_FDCWD, "", 128, 0))
fd = os.open(d + "/f", os.O_RDONLY)
show("empty fd:", n2h(fd, "", 128, AT_EMPTY_PATH))
show("null fd:", n2h(fd, None, 128, AT_EMPTY_PATH))
os.chdir(d)
show("empty cwd:", n2h(AT_FDCWD, "", 128, AT_EMPTY_PATH))
show("relative:", n2h(AT_FDCWD, "f", 128, 0))
show("bad mnt ptr:", n2h(AT_FDCWD, d + "/f", 128, 0, mnt=False))
show("bad handle ptr:", n2h(AT_FDCWD, d + "/f", 128, 0, raw=ctypes.c_void_p(8)))
show("bad fd:", n2h(999, "f", 128, 0))
show("missing size 129:", n2h(AT_FDCWD, d + "/nope", 129, 0))
show("conn bad ptr:", n2h(AT_FDCWD, d + "/f", 128, AT_HANDLE_CONNECTABLE, raw=ctypes.c_void_p(8)))
show("size 4 bad mnt ptr:", n2h(AT_FDCWD, d + "/f", 4, 0, mnt=False))
h = {}
for n in ("f", "sub", "ln"):
    res, hb, ht, mid, data, _ = n2h(AT_FDCWD, d + "/" + n, 128, 0)
    h[n] = (hb, ht, data)
# The handle's bytes: generation, then the inode number's two halves.
gen, lo, hi = struct.unpack("III", h["f"][2][:12])
print("handle ino matches:", (hi << 32 | lo) == os.stat(d + "/f").st_ino)
mfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)

def opened(r):
    if isinstance(r, str): return r
    st = os.fstat(r)
    fl = __import__("fcntl").fcntl(r, 1)  # F_GETFD
    acc = __import__("fcntl").fcntl(r, 3)  # F_GETFL
    try: data = os.pread(r, 5, 0)
    except OSError as x: data = errno.errorcode[x.errno]
    os.close(r)
    return ("ino ok" if st.st_ino in (os.stat(d + "/f").st_ino, os.stat(d + "/sub").st_ino, os.lstat(d + "/ln").st_ino) else "ino other", oct(st.st_mode), "cloexec", fl, "flags", oct(acc), data)

print("open f:", opened(obh(mfd, *h["f"], os.O_RDONLY)))
print("open f rw:", opened(obh(mfd, *h["f"], os.O_RDWR | os.O_CLOEXEC)))
print("open f via file mfd:", opened(obh(fd, *h["f"], os.O_RDONLY)))
print("open f cwd:", opened(obh(AT_FDCWD, *h["f"], os.O_RDONLY)))
print("open sub:", opened(obh(mfd, *h["sub"], os.O_RDONLY)))
print("open sub rw:", opened(obh(mfd, *h["sub"], os.O_RDWR)))
print("open ln:", opened(obh(mfd, *h["ln"], os.O_RDONLY)))
print("open ln path:", opened(obh(mfd, *h["ln"], os.O_PATH)))
print("open f creat excl:", opened(obh(mfd, *h["f"], os.O_RDWR | os.O_CREAT | os.O_EXCL)))
print("open f dir:", opened(obh(mfd, *h["f"], os.O_RDONLY | os.O_DIRECTORY)))
print("open f trunc:", opened(obh(mfd, *h["f"], os.O_RDWR | os.O_TRUNC)), os.stat(d + "/f").st_size)
with open(d + "/f", "w") as f: f.write("hello")
hb, ht, data = h["f"]
print("bytes 0:", opened(obh(mfd, 0, ht, data, 0)))
print("bytes 129:", opened(obh(mfd, 129, ht, data, 0)))
print("bytes 8:", opened(obh(mfd, 8, ht, data, 0)))
print("bytes 13:", opened(obh(mfd, 13, ht, data, 0)))
print("type 0:", opened(obh(mfd, hb, 0, data, 0)))
print("type 2:", opened(obh(mfd, hb, 2, data, 0)))
print("type -1:", opened(obh(mfd, hb, -1, data, 0)))
print("type conn flag:", opened(obh(mfd, hb, ht | 0x10000, data, 0)))
print("type bad flag:", opened(obh(mfd, hb, ht | 0x40000, data, 0)))
bad = struct.pack("III", gen ^ 1, lo, hi)
print("bad generation:", opened(obh(mfd, hb, ht, bad, 0)))
print("bad ino:", opened(obh(mfd, hb, ht, struct.pack("III", gen, (lo + 100000) & 0xffffffff, hi), 0)))
print("bad mount fd:", opened(obh(999, hb, ht, data, 0)))
print("bad handle ptr:", libc.syscall(SYS_open_by_handle_at, mfd, ctypes.c_void_p(8), 0), errno.errorcode.get(ctypes.get_errno()))
# Unlinked while open: still decodes; unlinked and closed: stale.
open(d + "/g", "w").close()
g = n2h(AT_FDCWD, d + "/g", 128, 0)
gfd = os.open(d + "/g", os.O_RDONLY)
gino = os.fstat(gfd).st_ino
os.unlink(d + "/g")
r = obh(mfd, g[1], g[2], g[4], 0)
print("unlinked open:", r if isinstance(r, str) else (os.fstat(r).st_ino == gino, os.fstat(r).st_nlink, os.close(r)))
os.close(gfd)
print("unlinked closed:", opened(obh(mfd, g[1], g[2], g[4], 0)))
# A second link keeps the inode.
open(d + "/k", "w").close()
os.link(d + "/k", d + "/k2")
k = n2h(AT_FDCWD, d + "/k", 128, 0)
os.unlink(d + "/k")
r = obh(mfd, k[1], k[2], k[4], 0)
print("other link:", r if isinstance(r, str) else (os.fstat(r).st_ino == os.stat(d + "/k2").st_ino, os.readlink("/proc/self/fd/%d" % r) == d + "/k2", os.close(r)))
os.rmdir(d + "/sub")
print("removed dir:", opened(obh(mfd, *h["sub"], 0)))
# A handle of this mount is not decoded on another file system (/ of the host).
rfd = os.open("/", os.O_RDONLY)
print("other mount fd:", opened(obh(rfd, *h["f"], 0)))
pid = os.fork()
if pid == 0:
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)
    print("unprivileged open:", opened(obh(mfd, *h["f"], 0)))
    print("unprivileged bad mount fd:", opened(obh(999, *h["f"], 0)))
    show("unprivileged encode:", n2h(AT_FDCWD, d + "/f", 128, 0))
    os._exit(0)
os.waitpid(pid, 0)
# A handle of a host file (the root file system's) is not decoded on the
# tmpfs: a guest cannot reach a host file through a sentry mount fd.
hres = n2h(AT_FDCWD, "/etc/hostname", 128, 0)
print("host handle:", hres[0], hres[1], hres[2])
if hres[0] == 0:
    print("host handle on tmpfs mount fd:", opened(obh(mfd, hres[1], hres[2], hres[4], 0)))
    print("host handle on tmpfs file fd:", opened(obh(fd, hres[1], hres[2], hres[4], 0)))
# Every inode number near the file's with a wrong generation is stale.
stale = set()
for delta in range(-3, 4):
    stale.add(opened(obh(mfd, hb, ht, struct.pack("III", (gen + 1) & 0xffffffff, (lo + delta) & 0xffffffff, hi), 0)))
print("neighbours:", sorted(stale))
