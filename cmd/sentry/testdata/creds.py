# creds.py setup DIR HOST: as root, makes the files the probe needs, in
# DIR (the tmpfs under test) and in HOST (a host directory).
# creds.py probe DIR HOST [capset|fsuid]: tries what the capabilities
# decide (reading, writing, searching, chmod, chown, utimes, mknod, the
# sticky bit, trusted. and security. attributes, set-id bits, exec) on
# DIR's files and, through DIR/.., on HOST's, and prints each result.
# With capset, it first drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
# from its effective set (capset(2), no exec); with fsuid, it probes as
# fsuid 65534 (setfsuid(2)), then back as 0. With userns (a probe in a
# user namespace of its own) it leaves out chown, whose ids would be the
# namespace's: the sentry does not translate ids between namespaces.
import ctypes, errno, os, subprocess, sys

libc = ctypes.CDLL(None, use_errno=True)
cmd, d, host = sys.argv[1], sys.argv[2], sys.argv[3]
NOBODY = 65534


def err(f, *a, **k):
    try:
        r = f(*a, **k)
        return "ok" if r is None else r
    except OSError as e:
        return errno.errorcode.get(e.errno, e.errno)
    except subprocess.CalledProcessError as e:
        return "exit %d" % e.returncode


def read(p):
    with open(p, "rb") as f:
        return f.read()


def write(p, data=b"w"):
    with open(p, "r+b") as f:
        f.write(data)


def mode(p):
    return oct(os.stat(p).st_mode)


if cmd == "setup":
    def mk(p, m, data=b"", uid=0, gid=0):
        with open(p, "wb") as f:
            f.write(data)
        os.chown(p, uid, gid)
        os.chmod(p, m)
    mk(d + "/secret", 0o000, b"s3cret")
    os.mkdir(d + "/d000")
    mk(d + "/d000/f", 0o644, b"in d000")
    os.chmod(d + "/d000", 0)
    mk(d + "/nob", 0o644, b"n", NOBODY, NOBODY)
    mk(d + "/nob600", 0o600, b"n6", NOBODY, NOBODY)
    mk(d + "/nob000", 0o000, b"n0", NOBODY, NOBODY)
    mk(d + "/nobx", 0o100, b"#!/bin/sh\necho ran\n", NOBODY, NOBODY)
    mk(d + "/mine", 0o644, b"m")
    mk(d + "/suid", 0o6777, b"x")
    os.mkdir(d + "/st")
    os.chown(d + "/st", NOBODY, NOBODY)
    os.chmod(d + "/st", 0o1777)
    mk(d + "/st/v", 0o644, b"v", NOBODY, NOBODY)
    mk(host + "/secret", 0o000, b"host s3cret")
    mk(host + "/nob600", 0o600, b"host n6", NOBODY, NOBODY)
    os.mkdir(host + "/nobdir")
    mk(host + "/nobdir/f", 0o644, b"f")
    os.chown(host + "/nobdir", NOBODY, NOBODY)
    os.chmod(host + "/nobdir", 0o700)
    sys.exit(0)

# The host directory reached through the tmpfs: DIR/.. up to / then HOST
# (in the sandbox /tmp/../HOST, which leaves the sentry's mount).
up = d + "/.." * d.count("/") + host

with open("/proc/self/status") as f:
    caps = [l.split()[1] for l in f if l.startswith("CapEff")][0]


def probe(tag):
    r = []
    r.append(("read secret", err(read, d + "/secret")))
    r.append(("list d000", err(os.listdir, d + "/d000")))
    r.append(("stat d000/f", err(lambda: os.stat(d + "/d000/f").st_size)))
    r.append(("read nob600", err(read, d + "/nob600")))
    r.append(("read nob000", err(read, d + "/nob000")))
    r.append(("write nob", err(write, d + "/nob")))
    r.append(("chmod nob", err(os.chmod, d + "/nob", 0o666)))
    if tag != "userns":
        r.append(("chown mine to nobody", err(os.chown, d + "/mine", NOBODY, -1)))
        r.append(("chgrp mine to nobody", err(os.chown, d + "/mine", -1, NOBODY)))
        r.append(("chown nob to itself", err(os.chown, d + "/nob", NOBODY, -1)))
    r.append(("utime nob", err(os.utime, d + "/nob", (1, 1))))
    r.append(("touch nob", err(os.utime, d + "/nob")))
    r.append(("mknod null", err(os.mknod, d + "/null", 0o20666, os.makedev(1, 3))))
    r.append(("mkfifo", err(os.mkfifo, d + "/fifo")))
    r.append(("unlink st/v", err(os.unlink, d + "/st/v")))
    r.append(("set trusted", err(os.setxattr, d + "/mine", "trusted.t", b"1")))
    r.append(("get trusted", err(os.getxattr, d + "/mine", "trusted.t")))
    r.append(("set security", err(os.setxattr, d + "/mine", "security.s", b"1")))
    r.append(("set user", err(os.setxattr, d + "/mine", "user.u", b"1")))
    r.append(("write suid", err(write, d + "/suid"), err(mode, d + "/suid")))
    r.append(("exec nobx", err(lambda: subprocess.run([d + "/nobx"], check=True, capture_output=True).stdout)))
    r.append(("host read secret", err(read, up + "/secret")))
    r.append(("host read nob600", err(read, up + "/nob600")))
    r.append(("host stat nobdir/f", err(lambda: os.stat(up + "/nobdir/f").st_size)))
    r.append(("host access nob600", err(os.access, up + "/nob600", os.R_OK, effective_ids=True)))
    r.append(("host create in nobdir", err(lambda: os.close(os.open(up + "/nobdir/new", os.O_CREAT | os.O_WRONLY, 0o644)))))
    for x in r:
        print(tag, *x)


if len(sys.argv) > 4 and sys.argv[4] == "capset":
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
    h, data = Header(0x20080522, 0), (Data * 2)()
    assert libc.capget(ctypes.byref(h), data) == 0
    data[0].effective &= ~((1 << 1) | (1 << 2))  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
    assert libc.capset(ctypes.byref(h), data) == 0
    probe("capset")
elif len(sys.argv) > 4 and sys.argv[4] == "fsuid":
    libc.setfsuid(NOBODY)
    print("fsuid", err(read, d + "/secret"), err(read, d + "/nob600"), err(read, up + "/secret"), err(read, up + "/nob600"))
    libc.setfsuid(0)
    print("fsuid 0", err(read, d + "/secret"), err(read, up + "/secret"))
elif len(sys.argv) > 4 and sys.argv[4] == "userns":
    print("caps", caps)
    probe("userns")
else:
    print("caps", caps)
    probe("probe")
