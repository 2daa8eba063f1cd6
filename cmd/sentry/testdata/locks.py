import fcntl, os, sys, struct, time
d = sys.argv[1]
p = d + "/db"
fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b"x" * 100)
def getlk(f, typ, start, ln, cmd=fcntl.F_GETLK):
    r = fcntl.fcntl(f, cmd, struct.pack("hhxxxxqqixxxx", typ, 0, start, ln, 0))
    t, w, s, l, pid = struct.unpack("hhxxxxqqixxxx", r)
    return t, s, l, (pid == os.getpid() or pid == -1 and "ofd" or pid)
fcntl.lockf(fd, fcntl.LOCK_EX, 20, 10)  # len 20 at 10
# No step depends on how fast a process runs: the parent holds its lock
# until the child has made its checks, and the child's blocking lock has
# waited if it returns after the parent said it was unlocking (a lock
# that did not block returns before, unless the child is held up longer
# than the parent's 0.3 s).
ready, ready_w = os.pipe()
unlocking, unlocking_w = os.pipe()
pid = os.fork()
if pid == 0:
    f2 = os.open(p, os.O_RDWR)
    print("child getlk", getlk(f2, fcntl.F_WRLCK, 0, 0)[:3])
    try: fcntl.lockf(f2, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 5)
    except OSError as e: print("child conflict", e.errno)
    fcntl.lockf(f2, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 40); print("child other range ok")
    os.write(ready_w, b"r")
    fcntl.lockf(f2, fcntl.LOCK_EX, 20, 10)
    os.set_blocking(unlocking, False)
    try: waited = os.read(unlocking, 1) == b"u"
    except BlockingIOError: waited = False
    print("child waited", waited)
    os._exit(0)
os.read(ready, 1)
time.sleep(0.3)
os.write(unlocking_w, b"u")
fcntl.lockf(fd, fcntl.LOCK_UN, 20, 10)
os.waitpid(pid, 0)
print("after child", getlk(fd, fcntl.F_WRLCK, 0, 0)[0] == fcntl.F_UNLCK)
fcntl.lockf(fd, fcntl.LOCK_SH, 50, 0)
fcntl.lockf(fd, fcntl.LOCK_UN, 10, 20)
print("split", getlk(os.open(p, os.O_RDWR), fcntl.F_WRLCK, 25, 0)[:3])
g = os.open(p, os.O_RDONLY)
try: fcntl.lockf(g, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
except OSError as e: print("rdonly wrlck", e.errno)
os.close(g)
pid = os.fork()
if pid == 0:
    f2 = os.open(p, os.O_RDWR)
    print("after close of other fd", getlk(f2, fcntl.F_WRLCK, 0, 0)[0] == fcntl.F_UNLCK)
    os._exit(0)
os.waitpid(pid, 0)
try: fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("hhxxxxqqixxxx", 9, 0, 0, 0, 0))
except OSError as e: print("bad type", e.errno)
try: fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("hhxxxxqqixxxx", fcntl.F_WRLCK, 0, 5, -10, 0))
except OSError as e: print("before zero", e.errno)
o1 = os.open(p, os.O_RDWR); o2 = os.open(p, os.O_RDWR)
fcntl.fcntl(o1, 37, struct.pack("hhxxxxqqixxxx", fcntl.F_WRLCK, 0, 0, 10, 0))
try: fcntl.fcntl(o2, 37, struct.pack("hhxxxxqqixxxx", fcntl.F_WRLCK, 0, 0, 10, 0))
except OSError as e: print("ofd conflict", e.errno)
print("ofd getlk", getlk(o2, fcntl.F_WRLCK, 0, 0, 36))
os.close(o1)
fcntl.fcntl(o2, 37, struct.pack("hhxxxxqqixxxx", fcntl.F_WRLCK, 0, 0, 10, 0)); print("ofd after close ok")
