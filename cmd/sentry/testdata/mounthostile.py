"""A hostile guest's ways around the sandbox with mount(2) and umount2
(issue #15), run as root in the sandbox: argv[1] is a host directory
outside /tmp, argv[2] a token the host then looks for, argv[3] the name
of a file in the host's /tmp the guest must never see. Each line is what
the guest saw; the host side checks that nothing of it reached the host."""
import ctypes, errno, os, sys, threading

libc = ctypes.CDLL(None, use_errno=True)
MS_BIND, MS_REC, MNT_DETACH = 4096, 16384, 2
host, token, hostfile = sys.argv[1], sys.argv[2], sys.argv[3]


def mount(target, fstype="tmpfs", flags=0, source="none"):
    r = libc.mount(source.encode(), target.encode(), None if fstype is None else fstype.encode(), ctypes.c_ulong(flags), None)
    return "ok" if r == 0 else errno.errorcode[ctypes.get_errno()]


def umount(target, flags=0):
    r = libc.umount2(target.encode(), flags)
    return "ok" if r == 0 else errno.errorcode[ctypes.get_errno()]


def drop(p):
    """Writes the token into directory p, if it can."""
    try:
        with open(p + "/" + token, "w") as f:
            f.write(token)
        return "written"
    except OSError as x:
        return errno.errorcode[x.errno]


# The sandbox's own /tmp cannot be unmounted: under it is the namespace's
# cover, and beneath that the host's /tmp.
open("/tmp/mine", "w").close()
print("umount /tmp:", umount("/tmp"))
print("umount /tmp lazy:", umount("/tmp", MNT_DETACH))
print("umount /tmp/:", umount("/tmp/"))
print("/tmp after:", sorted(os.listdir("/tmp")), hostfile in os.listdir("/tmp"))
# A mount over /tmp itself is the guest's, and goes away again.
print("mount over /tmp:", mount("/tmp"))
print("over /tmp:", sorted(os.listdir("/tmp")))
print("umount it:", umount("/tmp"))
print("/tmp again:", sorted(os.listdir("/tmp")), hostfile in os.listdir("/tmp"))
print("umount /tmp again:", umount("/tmp"))

# Bind mounts of the sandbox's /tmp onto a host directory, and of a host
# directory into /tmp.
os.mkdir("/tmp/b")
print("bind /tmp onto host:", mount(host, None, MS_BIND | MS_REC, "/tmp"))
print("bind /tmp/b onto host:", mount(host, None, MS_BIND, "/tmp/b"))
print("bind host into /tmp:", mount("/tmp/b", None, MS_BIND, host))
print("bind host /tmp into /tmp:", mount("/tmp/b", None, MS_BIND, "/proc/1/root/tmp"))
print("move /tmp:", mount(host, None, 8192, "/tmp"))
print("other type into /tmp:", mount("/tmp/b", "proc", 0, "proc"))

# move_mount of a host mount (attached, or an open_tree clone of one)
# into the sandbox's tmpfs: refused, it would put the host's files there.
sc = libc.syscall
sc.restype = ctypes.c_long
os.mkdir("/tmp/mv")
fd = os.open("/dev/shm", os.O_PATH)
r = sc(429, fd, b"", -100, b"/tmp/mv", 4)
print("move_mount host mount in:", "ok" if r == 0 else errno.errorcode[ctypes.get_errno()])
os.close(fd)
fd = sc(428, -100, b"/dev/shm", 1 | 0o2000000)
r = sc(429, fd, b"", -100, b"/tmp/mv", 4)
print("move_mount open_tree clone in:", "ok" if r == 0 else errno.errorcode[ctypes.get_errno()])
os.close(fd)
print("/tmp/mv:", os.listdir("/tmp/mv"), umount("/tmp/mv"))

# A relative target after chdir: the sentry's working directory decides,
# not the kernel's (which stayed on the host).
os.chdir("/tmp")
os.mkdir("rel")
print("mount relative:", mount("rel"))
print("drop relative:", drop("rel"))
print("umount relative:", umount("rel"))
os.chdir("/")

# A symlink target another thread rewrites between a sentry directory and
# the host directory: each mount lands on one of them (the host's in the
# guest's own namespace), never anywhere the host sees.
os.mkdir("/tmp/x")
stop = False


def flip():
    while not stop:
        for t in ("/tmp/x", host):
            try:
                os.symlink(t, "/tmp/l.new")
                os.rename("/tmp/l.new", "/tmp/l")
            except OSError:
                pass


th = threading.Thread(target=flip)
th.start()
landed = set()
# At least 200 tries, and on until one lands somewhere (ENOENT alone 200
# times in a row happened once in 600 runs on a loaded machine).
for i in range(5000):
    r = mount("/tmp/l")
    landed.add(r)
    if r == "ok":
        umount("/tmp/l", MNT_DETACH)
    if i >= 199 and landed - {"ENOENT"}:
        break
stop = True
th.join()
print("symlink race outcomes:", sorted(landed - {"ENOENT"}))
left = [l.split()[4] for l in open("/proc/self/mountinfo") if " /tmp/" in l]
print("symlink race mounts left on /tmp/x only:", set(left) <= {"/tmp/x"})
while umount("/tmp/x") == "ok":
    pass
# The umount through the link may have found it flipped: mounts left on
# the host directory (in the guest's namespace) would count against the
# namespace's limit below.
while umount(host, MNT_DETACH) == "ok":
    pass

# The target string itself rewritten by another thread while the call
# runs: the sentry reads it once; whichever it read, the mount lands
# there (a host path in the guest's own namespace).
buf = ctypes.create_string_buffer(4096)
stop = False


def flip_mem():
    while not stop:
        for t in (b"/tmp/x", host.encode()):
            ctypes.memmove(buf, t + b"\0", len(t) + 1)


th = threading.Thread(target=flip_mem)
th.start()
landed = set()
# At least 40 tries, and on until one lands (at most 40 mounts: the
# namespace's limit is 80): ENOENT alone 40 times in a row happened once
# in 409 runs, the flipping thread sharing the guest's one CPU.
oks = 0
for i in range(4000):
    r = libc.mount(b"none", buf, b"tmpfs", ctypes.c_ulong(0), None)
    landed.add("ok" if r == 0 else errno.errorcode[ctypes.get_errno()])
    oks += r == 0
    if (i >= 39 and oks) or oks >= 40:
        break
stop = True
th.join()
# ENOENT: the kernel read the sentry's path, which in the guest's
# namespace is the cover's.
rewritten = "ok" in landed and landed <= {"ok", "ENOENT"}
print("target rewritten outcomes:", rewritten)
if not rewritten:
    # Only when the case fails: which outcomes it saw.
    print("target rewritten saw:", sorted(landed))
while umount("/tmp/x") == "ok":
    pass
while umount(host, MNT_DETACH) == "ok":
    pass

# A tmpfs over the host directory: served by the host in the guest's own
# namespace, as before; the token stays in that namespace's mount.
print("mount over host:", mount(host))
print("drop over host:", drop(host))

# Nested mounts, and umount of a parent.
os.mkdir("/tmp/n")
print("mount n:", mount("/tmp/n"))
os.mkdir("/tmp/n/m")
print("mount n/m:", mount("/tmp/n/m"))
print("drop nested:", drop("/tmp/n/m"))
print("umount n:", umount("/tmp/n"))
print("umount n lazy:", umount("/tmp/n", MNT_DETACH))
print("n after lazy:", sorted(os.listdir("/tmp/n")))

# As many mounts as the namespace may hold: then ENOSPC.
os.mkdir("/tmp/many")
n, last = 0, "ok"
while last == "ok" and n < 1000000:
    last = mount("/tmp/many")
    n += last == "ok"
print("many:", last, n > 0)
print("umount many:", umount("/tmp/many"))
print("mount after one umount:", mount("/tmp/many"))
sys.stdout.flush()
