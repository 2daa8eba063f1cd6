# fdinfo.py DIR: /proc/PID/fdinfo/N of descriptors of files in DIR, printed
# as what must hold on Linux: pos and flags as they are, ino the file's
# st_ino, mnt_id the id of DIR's mount in /proc/self/mountinfo (as statx's
# stx_mnt_id), a lock line's MAJ:MIN:INO the file's st_dev and st_ino.
import fcntl, os, sys, threading
d = os.path.realpath(sys.argv[1])

def mount_id(path):
    best, bid = "", None
    for line in open("/proc/self/mountinfo"):
        f = line.split()
        point = f[4]
        if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, bid = point, f[0]
    return bid

def show(tag, fd, path="/proc/self/fdinfo/%d"):
    st = os.fstat(fd)
    try:
        info = open(path % fd).read()
    except OSError as e:
        print(tag, "error", e.errno)
        return
    devino = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for line in info.splitlines():
        k, _, v = line.partition(":")
        v = v.strip()
        if k == "ino":
            print(tag, "ino is st_ino", v == str(st.st_ino))
        elif k == "mnt_id":
            print(tag, "mnt_id is the mount's", v == mount_id(d))
        elif k == "lock":
            f = v.split()
            print(tag, "lock", f[1:4], "dev:ino is the file's", devino in f, "pid is ours", str(os.getpid()) in f)
        else:
            print(tag, k, v)

fd = os.open(d + "/f", os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b"abcdef")
os.lseek(fd, 4, os.SEEK_SET)
show("file", fd)
fcntl.flock(fd, fcntl.LOCK_EX)
show("flock", fd)
fcntl.flock(fd, fcntl.LOCK_UN)
fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 2, 1)
show("posix-lock", fd)
ap = os.open(d + "/f", os.O_RDONLY | os.O_APPEND | os.O_NONBLOCK)
show("append", ap)
dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
os.listdir(dfd)
show("dir", dfd)
os.mkdir(d + "/sub")
sfd = os.open(d + "/sub", os.O_RDONLY | os.O_DIRECTORY)
show("subdir", sfd)
show("thread-self", fd, "/proc/thread-self/fdinfo/%d")
tid = threading.get_native_id()
show("task", fd, "/proc/self/task/" + str(tid) + "/fdinfo/%d")
show("pid", fd, "/proc/" + str(os.getpid()) + "/fdinfo/%d")
out = []
def other():
    out.append(open("/proc/self/task/%d/fdinfo/%d" % (threading.get_native_id(), fd)).read().count("\n"))
th = threading.Thread(target=other); th.start(); th.join()
print("other thread lines", out)
r, w = os.pipe()
show("pipe", r)
os.close(fd)
try:
    open("/proc/self/fdinfo/%d" % fd)
    print("closed", "opened")
except OSError as e:
    print("closed", "error", e.errno)
for name, flags in [("write", os.O_WRONLY), ("directory", os.O_RDONLY | os.O_DIRECTORY), ("path", os.O_PATH)]:
    try:
        x = os.open("/proc/self/fdinfo/%d" % dfd, flags)
        print(name, "open", "ok", "fstat mode", oct(os.fstat(x).st_mode))
        try:
            print(name, "write", os.write(x, b"x"))
        except OSError as e:
            print(name, "write", "error", e.errno)
        os.close(x)
    except OSError as e:
        print(name, "open", "error", e.errno)
os.unlink(d + "/f")
