"""A hostile guest's race against the second name a watched file's backing
gets (fs/tmpfs/dnotify.go): threads add watches to a file while others
rename it back and forth, then the file is removed. Printed: the bytes the
tmpfs holds (statvfs) before the file, with it, and after it is gone; a
second name left behind would keep its bytes (and the store's space) for
good."""
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


ts = [threading.Thread(target=renamer) for _ in range(2)] + [threading.Thread(target=watcher) for _ in range(3)]
for t in ts:
    t.start()
threading.Event().wait(float(sys.argv[2]) if len(sys.argv) > 2 else 3)
stop = True
for t in ts:
    t.join()
for p in (a, b):
    if os.path.exists(p):
        os.unlink(p)
after = used()
print("with file", withfile - before >= 4 << 20, "after", after - before)
