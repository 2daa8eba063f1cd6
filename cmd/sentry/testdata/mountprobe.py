"""mount(2) of a tmpfs on a directory of the tmpfs under test (issue #15),
printed for a comparison of the sandbox's /tmp with a kernel tmpfs (run
natively in a mount namespace of its own): the new mount's stat, statfs
and mountinfo line, read-only and remount (EROFS in each write-type call,
EBUSY while a file is open for writing or mapped), umount2 (busy, lazy,
EINVAL, EAGAIN), nested and stacked mounts, bad types and options, and a
caller without CAP_SYS_ADMIN."""
import ctypes, errno, mmap, os, shutil, stat, sys
from probeutil import e

libc = ctypes.CDLL(None, use_errno=True)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MNT_FORCE, MNT_DETACH, MNT_EXPIRE = 1, 2, 4
d = sys.argv[1]
m = d + "/m"


def b(s):
    return None if s is None else s.encode()


def mount(target, fstype="tmpfs", flags=0, data=None, source="none"):
    r = libc.mount(b(source), b(target), b(fstype), ctypes.c_ulong(flags), b(data))
    return "ok" if r == 0 else errno.errorcode[ctypes.get_errno()]


def umount(target, flags=0):
    r = libc.umount2(b(target), flags)
    return "ok" if r == 0 else errno.errorcode[ctypes.get_errno()]


def info(p):
    """The mountinfo line of the top mount on p, less ids and device."""
    out = "none"
    for line in open("/proc/self/mountinfo"):
        f = line.split()
        if f[4] == p:
            sep = f.index("-")
            out = " ".join([f[3], f[5]] + f[sep:sep + 2] + [f[sep + 3]])
    return out


def mounts(p):
    out = "none"
    for line in open("/proc/mounts"):
        f = line.split()
        if f[1] == p:
            out = " ".join([f[0], f[2], f[3]])
    return out


def show(tag):
    st = os.stat(m)
    sv = os.statvfs(m)
    print(tag, "mode=%o uid=%d gid=%d nlink=%d ino=%d own-dev=%s blocks=%d flag=%#x" % (
        st.st_mode, st.st_uid, st.st_gid, st.st_nlink, st.st_ino,
        st.st_dev != os.stat(d).st_dev, sv.f_blocks, sv.f_flag))
    print(tag, "mountinfo:", info(m))
    print(tag, "mounts:", mounts(m))


# A directory the unprivileged child can search, as the sandbox's /tmp.
os.chmod(d, 0o1777)
os.mkdir(m)
print("mount:", mount(m, data="size=1m,mode=755"))
show("new")
print("dotdot is d:", os.stat(m + "/..").st_ino == os.stat(d).st_ino)
with open(m + "/f", "w") as f:
    f.write("data")
os.mkdir(m + "/sub")
print("listing:", sorted(os.listdir(m)))
print("rename across:", e(lambda: os.rename(m + "/f", d + "/f")))
print("link across:", e(lambda: os.link(m + "/f", d + "/f")))
print("rmdir point:", e(lambda: os.rmdir(m)))
print("unlink point:", e(lambda: os.unlink(m)))
print("rename point:", e(lambda: os.rename(m, d + "/m2")))
print("rename onto point:", e(lambda: (os.mkdir(d + "/o"), os.rename(d + "/o", m))[1]))
print("mkdir point:", e(lambda: os.mkdir(m)))
print("size limit:", e(lambda: open(m + "/big", "wb").write(b"x" * (2 << 20))))
e(lambda: os.unlink(m + "/big"))

# Read-only: refused while a file is open for writing or mapped.
fd = os.open(m + "/f", os.O_RDWR)
print("remount ro, open for writing:", mount(m, flags=MS_REMOUNT | MS_RDONLY))
mp = mmap.mmap(fd, 4, mmap.MAP_SHARED, mmap.PROT_WRITE | mmap.PROT_READ)
os.close(fd)
print("remount ro, mapped:", mount(m, flags=MS_REMOUNT | MS_RDONLY))
mp.close()
rfd = os.open(m + "/f", os.O_RDONLY)
print("remount ro:", mount(m, flags=MS_REMOUNT | MS_RDONLY))
show("ro")
print("read:", os.pread(rfd, 10, 0))
print("write through a read-only fd:", e(lambda: os.write(rfd, b"x")))
os.close(rfd)
for name, f in [
    ("create", lambda: os.open(m + "/new", os.O_CREAT | os.O_WRONLY, 0o644)),
    ("open existing O_CREAT read-only", lambda: os.close(os.open(m + "/f", os.O_CREAT | os.O_RDONLY))),
    ("open O_WRONLY", lambda: os.open(m + "/f", os.O_WRONLY)),
    ("open O_RDWR", lambda: os.open(m + "/f", os.O_RDWR)),
    ("open O_TRUNC", lambda: os.open(m + "/f", os.O_RDONLY | os.O_TRUNC)),
    ("open dir", lambda: os.close(os.open(m + "/sub", os.O_RDONLY))),
    ("O_TMPFILE", lambda: os.open(m, os.O_TMPFILE | os.O_WRONLY, 0o600)),
    ("mkdir", lambda: os.mkdir(m + "/d2")),
    ("mkdir existing", lambda: os.mkdir(m + "/sub")),
    ("unlink", lambda: os.unlink(m + "/f")),
    ("unlink missing", lambda: os.unlink(m + "/nope")),
    ("rmdir", lambda: os.rmdir(m + "/sub")),
    ("rename", lambda: os.rename(m + "/f", m + "/g")),
    ("rename missing", lambda: os.rename(m + "/nope", m + "/g")),
    ("link", lambda: os.link(m + "/f", m + "/g")),
    ("symlink", lambda: os.symlink("f", m + "/s")),
    ("mkfifo", lambda: os.mkfifo(m + "/p")),
    ("chmod", lambda: os.chmod(m + "/f", 0o600)),
    ("chown", lambda: os.chown(m + "/f", 1, 1)),
    ("utime", lambda: os.utime(m + "/f", (1, 1))),
    ("truncate", lambda: os.truncate(m + "/f", 0)),
    ("truncate dir", lambda: os.truncate(m + "/sub", 0)),
    ("setxattr", lambda: os.setxattr(m + "/f", "user.a", b"1")),
    ("removexattr", lambda: os.removexattr(m + "/f", "user.a")),
    ("access W_OK", lambda: os.access(m + "/f", os.W_OK)),
]:
    print("ro", name + ":", e(f))
print("ro contents:", open(m + "/f").read())
print("remount rw:", mount(m, flags=MS_REMOUNT))
show("rw")
print("write after rw:", e(lambda: open(m + "/f", "a").write("more")))

# The mount alone read-only (do_reconfigure_mnt): the superblock stays
# read-write.
print("bind remount ro:", mount(m, flags=MS_REMOUNT | MS_BIND | MS_RDONLY))
show("bindro")
print("bind ro create:", e(lambda: os.open(m + "/bro", os.O_CREAT | os.O_WRONLY)))
print("bind remount rw:", mount(m, flags=MS_REMOUNT | MS_BIND))
show("bindrw")

# Remount with new limits (shmem_reconfigure).
print("remount size=2m:", mount(m, flags=MS_REMOUNT, data="size=2m"))
show("resized")
with open(m + "/big", "wb") as f:
    f.write(b"x" * (1536 << 10))
print("remount below use:", mount(m, flags=MS_REMOUNT, data="size=1m"))
print("remount nr_inodes below use:", mount(m, flags=MS_REMOUNT, data="nr_inodes=2"))
print("remount nr_inodes=100:", mount(m, flags=MS_REMOUNT, data="nr_inodes=100"))
print("remount bad option:", mount(m, flags=MS_REMOUNT, data="foo=1"))
show("resized2")
os.unlink(m + "/big")
print("remount size=0:", mount(m, flags=MS_REMOUNT, data="size=0"))
print("remount size on unlimited:", mount(m, flags=MS_REMOUNT, data="size=1m"))
show("unlimited")

# Exec from a noexec mount.
print("remount noexec:", mount(m, flags=MS_REMOUNT | MS_NOEXEC))
shutil.copy("/bin/true", m + "/true")
os.chmod(m + "/true", 0o755)
print("exec noexec:", e(lambda: os.waitpid(os.spawnv(os.P_NOWAIT, m + "/true", ["true"]), 0)[1]))
print("remount exec:", mount(m, flags=MS_REMOUNT))
print("exec:", e(lambda: os.waitstatus_to_exitcode(os.waitpid(os.spawnv(os.P_NOWAIT, m + "/true", ["true"]), 0)[1])))

# umount2.
print("umount not a mount root:", umount(m + "/sub"))
print("umount missing:", umount(m + "/nope"))
print("umount bad flags:", umount(m, 0x100))
print("umount expire+detach:", umount(m, MNT_EXPIRE | MNT_DETACH))
print("umount expire:", umount(m, MNT_EXPIRE))
fd = os.open(m + "/f", os.O_RDONLY)
print("umount, file open:", umount(m))
os.close(fd)
os.chdir(m + "/sub")
print("umount, cwd inside:", umount(m))
print("getcwd:", os.getcwd().replace(d, "D"))
os.chdir(d)
fd = os.open(m + "/f", os.O_RDONLY)
mp = mmap.mmap(fd, 4, mmap.MAP_SHARED, mmap.PROT_READ)
os.close(fd)
print("umount, mapped:", umount(m))
mp.close()
print("umount:", umount(m))
print("after umount:", sorted(os.listdir(m)), os.stat(m).st_dev == os.stat(d).st_dev, info(m))
print("umount again:", umount(m))

# Lazy umount: the open file stays usable.
print("mount:", mount(m))
with open(m + "/lazy", "w") as f:
    f.write("lazy")
fd = os.open(m + "/lazy", os.O_RDONLY)
print("umount lazy:", umount(m, MNT_DETACH))
print("read after lazy:", os.pread(fd, 10, 0), sorted(os.listdir(m)))
os.close(fd)

# Nested and stacked mounts.
print("mount:", mount(m, data="mode=700"))
os.mkdir(m + "/n")
print("nested mount:", mount(m + "/n", data="nr_inodes=10"))
print("nested mountinfo:", info(m + "/n"))
print("nested dotdot:", os.stat(m + "/n/..").st_ino == os.stat(m).st_ino, os.stat(m + "/n/../..").st_ino == os.stat(d).st_ino)
print("umount parent of nested:", umount(m))
print("umount nested:", umount(m + "/n"))
open(m + "/below", "w").close()
print("stacked mount:", mount(m, data="mode=711"))
show("stacked")
print("stacked listing:", sorted(os.listdir(m)))
print("umount top:", umount(m))
print("below listing:", sorted(os.listdir(m)))
print("umount below:", umount(m))

# Options, types, targets.
open(d + "/file", "w").close()
print("mount on a file:", mount(d + "/file"))
print("mount on missing:", mount(d + "/missing"))
print("mount unknown type:", mount(m, fstype="nosuchfs"))
print("mount no type:", mount(m, fstype=None))
print("mount bad size:", mount(m, data="size=x"))
print("mount unknown option:", mount(m, data="foo=1"))
print("mount bad uid:", mount(m, data="uid=-1"))
print("mount owner:", mount(m, data="uid=1000,gid=1001,mode=0750"))
show("owner")
print("umount:", umount(m))
print("mount ro:", mount(m, flags=MS_RDONLY | MS_NOSUID | MS_NODEV))
show("newro")
print("ro create:", e(lambda: os.open(m + "/x", os.O_CREAT | os.O_WRONLY)))
print("ro opendir:", e(lambda: sorted(os.listdir(m))))
print("umount:", umount(m))
os.chdir(d)
print("mount relative:", mount("m"))
print("relative mountinfo:", info(m))
print("umount relative:", umount("m"))

# The new mount API (util-linux 2.39 and later): fsopen, fsconfig,
# fsmount, then move_mount onto the target.
def newapi(target, opts=(), attrs=0):
    sc = libc.syscall
    sc.restype = ctypes.c_long
    fs = sc(430, b"tmpfs", 1)
    if fs < 0:
        return "fsopen " + errno.errorcode[ctypes.get_errno()]
    for k, v in opts:
        if sc(431, fs, 1, k.encode(), v.encode(), 0) < 0:
            return "fsconfig " + errno.errorcode[ctypes.get_errno()]
    sc(431, fs, 6, None, None, 0)
    mfd = sc(432, fs, 1, attrs)
    os.close(fs)
    if mfd < 0:
        return "fsmount " + errno.errorcode[ctypes.get_errno()]
    r = sc(429, mfd, b"", -100, target.encode(), 4)
    res = "ok" if r == 0 else errno.errorcode[ctypes.get_errno()]
    os.close(mfd)
    return res


print("new API mount:", newapi(m, [("size", "1m"), ("mode", "750"), ("uid", "7")]))
show("newapi")
print("new API write:", e(lambda: open(m + "/n", "w").write("n")))
print("umount:", umount(m))
print("new API read-only:", newapi(m, [("nr_inodes", "50")], 1 | 2 | 8))
show("newapi-ro")
print("new API ro write:", e(lambda: os.open(m + "/n", os.O_CREAT | os.O_WRONLY)))
print("umount:", umount(m))
print("new API on a file:", newapi(d + "/file"))
print("new API on missing:", newapi(d + "/missing"))
print("new API bad option:", newapi(m, [("size", "x")]))
print("after:", info(m))

# Without CAP_SYS_ADMIN.
print("mount:", mount(m))
os.chmod(m, 0o777)
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)
    os.mkdir(m + "/u")
    print("unprivileged mount:", mount(m + "/u"))
    print("unprivileged umount:", umount(m))
    print("unprivileged remount:", mount(m, flags=MS_REMOUNT | MS_RDONLY))
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
print("umount:", umount(m))
