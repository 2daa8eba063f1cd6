"""Directory notification (fcntl F_NOTIFY) in a directory of the tmpfs
under test (issue #15), printed for a comparison of the sandbox's /tmp with
a kernel tmpfs: for each change in (or out of, or into) a watched
directory, the signals its watch delivers (number, si_code, si_band),
with each mask alone and all together, DN_MULTISHOT or one shot, F_SETSIG
or the default SIGIO; and F_NOTIFY's errors. The lines starting "fd "
are changes made through a descriptor (write, read), which the sandbox
does not report (a known divergence)."""
import fcntl, os, signal, sys
from probeutil import e

d = sys.argv[1]
w = d + "/w"
os.mkdir(w)
os.mkdir(d + "/other")
SIG = signal.SIGRTMIN + 1
signal.pthread_sigmask(signal.SIG_BLOCK, [SIG, signal.SIGIO])
ALL = (fcntl.DN_ACCESS | fcntl.DN_MODIFY | fcntl.DN_CREATE | fcntl.DN_DELETE |
       fcntl.DN_RENAME | fcntl.DN_ATTRIB)


def drain():
    out = []
    while True:
        i = signal.sigtimedwait([SIG, signal.SIGIO], 0)
        if i is None:
            return out
        name = "SIGIO" if i.si_signo == signal.SIGIO else "RT+%d" % (i.si_signo - signal.SIGRTMIN)
        out.append("%s/%d/%#x" % (name, i.si_code, i.si_band))


def case(name, mask, op, sig=SIG, setup=None):
    if setup:
        setup()
    fd = os.open(w, os.O_RDONLY)
    if sig:
        fcntl.fcntl(fd, fcntl.F_SETSIG, sig)
    fcntl.fcntl(fd, fcntl.F_NOTIFY, mask)
    r = e(op)
    got = drain()
    os.close(fd)
    print(name, "mask=%#x" % mask, r, got)


def rm(p):
    try:
        if os.path.isdir(p) and not os.path.islink(p):
            os.rmdir(p)
        else:
            os.unlink(p)
    except FileNotFoundError:
        pass


def touch(p):
    open(p, "w").close()


M = fcntl.DN_MULTISHOT
touch(w + "/f")
touch(d + "/other/o")
for mask in [ALL | M, fcntl.DN_CREATE | M, fcntl.DN_DELETE | M, fcntl.DN_RENAME | M,
             fcntl.DN_ATTRIB | M, fcntl.DN_MODIFY | M, fcntl.DN_ACCESS | M]:
    case("create", mask, lambda: touch(w + "/c"), setup=lambda: rm(w + "/c"))
    case("create existing", mask, lambda: touch(w + "/c"))
    case("mkdir", mask, lambda: os.mkdir(w + "/dir"), setup=lambda: rm(w + "/dir"))
    case("symlink", mask, lambda: os.symlink("f", w + "/s"), setup=lambda: rm(w + "/s"))
    case("mkfifo", mask, lambda: os.mkfifo(w + "/p"), setup=lambda: rm(w + "/p"))
    case("link", mask, lambda: os.link(w + "/f", w + "/l"), setup=lambda: rm(w + "/l"))
    case("unlink", mask, lambda: os.unlink(w + "/l"))
    case("rmdir", mask, lambda: os.rmdir(w + "/dir"))
    case("rename within", mask, lambda: os.rename(w + "/c", w + "/c2"))
    case("rename over", mask, lambda: os.rename(w + "/c2", w + "/s"))
    case("rename out", mask, lambda: os.rename(w + "/s", d + "/other/s"))
    case("rename in", mask, lambda: os.rename(d + "/other/s", w + "/s"))
    case("rename in over", mask, lambda: os.rename(d + "/other/o", w + "/s"), setup=lambda: touch(d + "/other/o"))
    case("chmod", mask, lambda: os.chmod(w + "/f", 0o640))
    case("chown", mask, lambda: os.chown(w + "/f", 0, 0))
    case("utime", mask, lambda: os.utime(w + "/f", (1, 2)))
    case("utime atime", mask, lambda: os.utime(w + "/f", ns=(1, 0)) if False else os.utime(w + "/f", (5, os.stat(w + "/f").st_mtime)))
    case("truncate", mask, lambda: os.truncate(w + "/f", 0))
    case("O_TRUNC", mask, lambda: os.close(os.open(w + "/f", os.O_WRONLY | os.O_TRUNC)))
    case("setxattr", mask, lambda: os.setxattr(w + "/f", "user.a", b"1"))
    case("removexattr", mask, lambda: os.removexattr(w + "/f", "user.a"))
    case("mkdir other", mask, lambda: os.mkdir(d + "/other/x"), setup=lambda: rm(d + "/other/x"))
    case("chmod dir itself", mask, lambda: os.chmod(w, 0o755))
    case("utime dir itself", mask, lambda: os.utime(w, (1, 2)))
    case("setxattr dir itself", mask, lambda: os.setxattr(w, "user.d", b"1"))
    case("listdir", mask, lambda: len(os.listdir(w)))
    case("fd write", mask, lambda: os.pwrite(fd2, b"x", 0), setup=lambda: globals().update(fd2=os.open(w + "/f", os.O_RDWR)))
    case("fd read", mask, lambda: os.pread(fd2, 1, 0))
    os.close(fd2)

# One shot: the watch goes with the first event.
case("one shot, two creates", fcntl.DN_CREATE, lambda: (touch(w + "/o1"), touch(w + "/o2")) and None)
# The default signal.
case("SIGIO create", fcntl.DN_CREATE | M, lambda: touch(w + "/sigio"), sig=0)
# Another process's change.
def child_create():
    pid = os.fork()
    if pid == 0:
        touch(w + "/child")
        os._exit(0)
    os.waitpid(pid, 0)
case("child create", fcntl.DN_CREATE | M, child_create)
# Cleared with a mask of 0.
fd = os.open(w, os.O_RDONLY)
fcntl.fcntl(fd, fcntl.F_SETSIG, SIG)
fcntl.fcntl(fd, fcntl.F_NOTIFY, ALL | M)
fcntl.fcntl(fd, fcntl.F_NOTIFY, 0)
touch(w + "/cleared")
print("cleared:", drain())
os.close(fd)
# Errors.
fd = os.open(w + "/f", os.O_RDONLY)
print("F_NOTIFY on a file:", e(lambda: fcntl.fcntl(fd, fcntl.F_NOTIFY, ALL)))
os.close(fd)
fd = os.open(w, os.O_PATH)
print("F_NOTIFY on O_PATH:", e(lambda: fcntl.fcntl(fd, fcntl.F_NOTIFY, ALL)))
os.close(fd)
fd = os.open(w, os.O_RDONLY)
print("F_NOTIFY unknown bits:", e(lambda: fcntl.fcntl(fd, fcntl.F_NOTIFY, 0x7f000000 | fcntl.DN_CREATE)))
os.close(fd)
print("listing:", sorted(os.listdir(w)))
# Known divergence: a write through a descriptor opened before the
# directory was first watched.
os.mkdir(d + "/w2")
fd2 = os.open(d + "/w2/f", os.O_CREAT | os.O_RDWR)
w = d + "/w2"
case("fd write, opened before the first watch", fcntl.DN_MODIFY | M, lambda: os.pwrite(fd2, b"x", 0))
os.close(fd2)
