# linuxrefuses: calls that Linux itself fails on a tmpfs file, in DIR
# (argv[1]): the sandbox must give Linux's errno, in Linux's order, for
# its own tmpfs. One line per case: name and "ok" or the errno's name.
import ctypes
import errno
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
d = sys.argv[1]


def sc(name, *args):
    r = libc.syscall(*args)
    print(name, "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])


def qcmd(cmd, typ):
    return (cmd << 8) | typ


Q_SYNC, Q_GETINFO, Q_QUOTAON = 0x800001, 0x800005, 0x800002
f = os.path.join(d, "f").encode()
with open(f, "w") as fh:
    fh.write("x" * 8192)
os.mkdir(os.path.join(d, "sub"))
missing = os.path.join(d, "missing").encode()
fd = os.open(f, os.O_RDONLY)
buf = ctypes.create_string_buffer(256)

sc("swapon-file", 167, f, 0)
sc("swapon-dir", 167, d.encode(), 0)
sc("swapon-missing", 167, missing, 0)
sc("swapoff-file", 168, f)
sc("swapoff-missing", 168, missing)
sc("uselib-file", 134, f)
sc("quotactl-getinfo-file", 179, qcmd(Q_GETINFO, 0), f, 0, buf)
sc("quotactl-sync-dir", 179, qcmd(Q_SYNC, 0), d.encode(), 0, None)
sc("quotactl-missing", 179, qcmd(Q_GETINFO, 0), missing, 0, buf)
sc("quotactl_fd-getinfo", 443, fd, qcmd(Q_GETINFO, 0), 0, buf)
sc("quotactl_fd-sync", 443, fd, qcmd(Q_SYNC, 1), 0, None)
sc("quotactl_fd-badtype", 443, fd, qcmd(Q_GETINFO, 3), 0, buf)
sc("quotactl_fd-badfd", 443, 9999, qcmd(Q_GETINFO, 0), 0, buf)

# finit_module reads the file itself: the sandbox's descriptor of a file
# is its backing, so the loader sees the same bytes (not an ELF module
# here: ENOEXEC, or EPERM without CAP_SYS_MODULE); a directory and an
# O_PATH descriptor get Linux's errnos for them.
dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
pfd = os.open(f, os.O_PATH)
sc("finit_module-file", 313, fd, b"", 0)
sc("finit_module-dir", 313, dfd, b"", 0)
sc("finit_module-opath", 313, pfd, b"", 0)
