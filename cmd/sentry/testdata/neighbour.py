# Run as nobody in one sandbox while another sandbox's guest holds a FIFO,
# sockets and a file in its /tmp: look for them through every host path
# this guest can find, and print a "reached" line for each one reached.
# The neighbour wrote b"fifo-secret" into its FIFO and b"file-secret" into
# its file, and counts the connections and datagrams its sockets get.
import glob
import os
import re
import socket
import stat

SECRETS = (b"fifo-secret", b"file-secret")
# Host names that stood (or stand) for a sentry's special files end in
# KIND<mount>-<ino>, KIND one of f (FIFO), s (socket), d (device).
SPECIAL = re.compile(r"^(.*?)([fsd])(\d+)-(\d+)$")

unix_paths = []
for line in open("/proc/net/unix").read().splitlines()[1:]:
    f = line.split()
    if len(f) >= 8 and f[7].startswith("/"):
        unix_paths.append(f[7])
print("unix sockets with a path:", len(unix_paths))

pids = [p for p in os.listdir("/proc") if p.isdigit()]
# Roots this guest may enter: its own, and those of processes it may
# ptrace-read.
roots = ["", "/proc/self/root"]
for p in pids:
    try:
        os.listdir("/proc/%s/root/" % p)
        roots.append("/proc/%s/root" % p)
    except OSError:
        pass

cands = set(unix_paths)
dirs = {os.path.dirname(p) for p in unix_paths}
for p in pids:
    try:
        names = os.listdir("/proc/%s/fd" % p)
    except OSError:
        continue
    for n in names:
        link = "/proc/%s/fd/%s" % (p, n)
        cands.add(link)
        try:
            t = os.readlink(link)
        except OSError:
            continue
        if t.startswith("/"):
            cands.add(t)
            dirs.add(os.path.dirname(t))
for base in {"/tmp", "/var/tmp", "/dev/shm", os.environ.get("TMPDIR", "/tmp")}:
    for pat in ("/sentry-special-*", "/sentry-special-*/*", "/.sentry-special"):
        for r in roots:
            dirs.update(d[len(r):] for d in glob.glob(r + base + pat))
dirs.add("/tmp/.sentry-special")

# Every directory, under every root: what it lists, and the names a
# socket seen in /proc/net/unix makes guessable (its FIFO and device
# neighbours, inode numbers 1 to 40).
guesses = set()
for p in unix_paths:
    m = SPECIAL.match(os.path.basename(p))
    if m:
        for prefix in {m.group(1), ""}:
            for kind in "fsd":
                for ino in range(1, 41):
                    guesses.add("%s%s%s-%d" % (prefix, kind, m.group(3), ino))
for d in dirs:
    for r in roots:
        dd = r + d
        try:
            names = os.listdir(dd)
        except OSError:
            names = []
        for n in names:
            cands.add(dd + "/" + n)
        for g in guesses:
            cands.add(dd + "/" + g)

tried = 0
for c in sorted(cands):
    try:
        st = os.stat(c)
    except OSError:
        continue
    tried += 1
    if stat.S_ISFIFO(st.st_mode):
        # Only the neighbour's: opening any other pipe (a process's
        # stdout through /proc/PID/fd) could steal its data.
        if not SPECIAL.match(os.path.basename(c)):
            continue
        try:
            fd = os.open(c, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            data = os.read(fd, 100)
        except OSError:
            data = b""
        os.close(fd)
        print("reached fifo", c, data)
    elif stat.S_ISSOCK(st.st_mode):
        if not SPECIAL.match(os.path.basename(c)):
            continue
        for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            s = socket.socket(socket.AF_UNIX, typ)
            try:
                if typ == socket.SOCK_DGRAM:
                    s.sendto(b"probe", c)
                else:
                    s.connect(c)
                print("reached socket", c, typ)
            except OSError:
                pass
            s.close()
    elif stat.S_ISREG(st.st_mode):
        try:
            with open(c, "rb") as f:
                data = f.read(100)
        except OSError:
            continue
        if any(s in data for s in SECRETS):
            print("reached file", c)
print("candidates tried:", tried)

# Every other process's descriptors 0-63, taken with pidfd_getfd (the
# neighbour's sentry holds its store and its guest the file): a regular
# file is read, a directory's files are; pipes and sockets are left alone.
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
SYS_pidfd_getfd = 438


def scan(fd, label):
    """Report a secret in the file fd or in a directory fd's files; close fd."""
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and any(s in os.pread(fd, 100, 0) for s in SECRETS):
            print("reached file", label)
        elif stat.S_ISDIR(st.st_mode):
            for name in os.listdir(fd):
                try:
                    g = os.open(name, os.O_RDONLY | os.O_NONBLOCK, dir_fd=fd)
                except OSError:
                    continue
                try:
                    if stat.S_ISREG(os.fstat(g).st_mode) and any(s in os.read(g, 100) for s in SECRETS):
                        print("reached file", label, name)
                except OSError:
                    pass
                finally:
                    os.close(g)
    except OSError:
        # A file that cannot be read so (a /proc or sysfs file).
        pass
    finally:
        os.close(fd)


taken = asked = 0
for p in pids:
    if int(p) == os.getpid():
        continue
    try:
        pfd = os.pidfd_open(int(p))
    except OSError:
        continue
    for n in range(64):
        asked += 1
        fd = libc.syscall(SYS_pidfd_getfd, pfd, n, 0)
        if fd >= 0:
            taken += 1
            scan(fd, "%s %d" % (p, n))
    os.close(pfd)
print("descriptors asked:", asked, "taken:", taken)

# The same descriptors reopened through their magic links, directly and
# by a path through the sandbox's /tmp (which the sentry resolves and
# opens itself): what a sentry acting for this guest may open must be
# what the guest itself may.
opened = 0
for p in pids:
    if int(p) == os.getpid():
        continue
    for n in range(64):
        for form in ("/proc/%s/fd/%d", "/tmp/../proc/%s/fd/%d"):
            try:
                fd = os.open(form % (p, n), os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            opened += 1
            scan(fd, form % (p, n))
print("magic links opened:", opened)
