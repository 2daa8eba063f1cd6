"""Helpers shared by the differential probes (handles.py, inodeflags.py,
scmrights.py): the directory under test, made writable by all, and e(),
which runs a call and prints its result or its errno's name."""
import errno, os, sys


def testdir():
    d = sys.argv[1]
    os.chmod(d, 0o777)
    return d


def e(f):
    try:
        r = f()
        return "ok" if r is None else r
    except OSError as x:
        return errno.errorcode[x.errno]
