"""A hostile guest's races against the names a watched file's and a watched
directory's backings get (fs/tmpfs/dnotify.go). Threads add watches to a
file while others rename it back and forth, then the file is removed:
printed, the bytes the tmpfs holds (statvfs) before the file, with it,
and after it is gone (a second name left behind would keep its bytes, and
the store's space, for good). Then a watched directory is renamed back
and forth (its backing with it) while other threads open, list and fill
it: printed, the errors other than ENOENT they met (none: each open finds
the directory by one name or the other) and whether the watch still sees
a file made in it afterwards."""
import ctypes, os, sys, threading

libc = ctypes.CDLL(None, use_errno=True)
d = sys.argv[1] + "/race"
os.mkdir(d)


def used():
    st = os.statvfs(d)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


before = used()
a, b = d + "/a", d + "/b"
with open(a, "wb") as f:
    f.write(b"x" * (4 << 20))
withfile = used()
stop = False


def renamer():
    while not stop:
        for x, y in ((a, b), (b, a)):
            try:
                os.rename(x, y)
            except FileNotFoundError:
                pass


def watcher():
    while not stop:
        fd = libc.inotify_init1(0o4000)
        for p in (a, b):
            libc.inotify_add_watch(fd, p.encode(), 0xfff)
        os.close(fd)


def race(*workers):
    """Runs each worker (a function, its arguments) on a thread of its own
    for argv[2] seconds (3 by default)."""
    global stop
    stop = False
    ts = [threading.Thread(target=f, args=a) for f, *a in workers]
    for t in ts:
        t.start()
    threading.Event().wait(float(sys.argv[2]) if len(sys.argv) > 2 else 3)
    stop = True
    for t in ts:
        t.join()


race((renamer,), (renamer,), (watcher,), (watcher,), (watcher,))
for p in (a, b):
    if os.path.exists(p):
        os.unlink(p)
after = used()
print("with file", withfile - before >= 4 << 20, "after", after - before)

dd = (d + "/dir1", d + "/dir2")
os.mkdir(dd[0])
inst = libc.inotify_init1(0o4000)
libc.inotify_add_watch(inst, dd[0].encode(), 0x100)  # IN_CREATE
odd = set()


def drenamer():
    while not stop:
        for x, y in (dd, dd[::-1]):
            try:
                os.rename(x, y)
            except FileNotFoundError:
                pass


def dfiller(k):
    while not stop:
        for p in dd:
            try:
                fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY)
                os.listdir(fd)
                os.close(fd)
                f = os.open(p + "/f%d" % k, os.O_WRONLY | os.O_CREAT, 0o644)
                os.close(f)
                os.unlink(p + "/f%d" % k)
            except FileNotFoundError:
                pass
            except OSError as x:
                odd.add(x.errno)


race((drenamer,), (drenamer,), (dfiller, 0), (dfiller, 1), (dfiller, 2))
while True:
    try:
        os.read(inst, 65536)
    except BlockingIOError:
        break
last = [p for p in dd if os.path.isdir(p)][0] + "/last"
open(last, "w").close()
seen = False
try:
    seen = b"last" in os.read(inst, 65536)
except BlockingIOError:
    pass
print("dir errors", sorted(odd), "last seen", seen)
