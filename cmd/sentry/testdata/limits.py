"""The mount's limits, as a guest meets them (issue #13): run in a tmpfs
mounted size=1m,nr_inodes=64 (natively, or the sandbox's --tmpfs with the
same options) and print what each way of storing bytes gets."""
import errno, mmap, os, signal, sys

d = sys.argv[1]

def fs():
    s = os.statvfs(d)
    return "blocks=%d bfree=%d files=%d ffree=%d" % (s.f_blocks, s.f_bfree, s.f_files, s.f_ffree)

print("empty", fs())

# write(2) past the size limit: short, then ENOSPC.
fd = os.open(d + "/w", os.O_CREAT | os.O_WRONLY, 0o644)
total = 0
try:
    while True:
        n = os.write(fd, b"x" * 65536)
        total += n
        if n < 65536:
            break
except OSError as e:
    print("write stops at", total, errno.errorcode[e.errno])
os.close(fd)
print("after write", fs())
os.unlink(d + "/w")

# Writes through a shared mapping past the limit: SIGBUS, as Linux.
fd = os.open(d + "/m", os.O_CREAT | os.O_RDWR, 0o644)
os.ftruncate(fd, 2 << 20)
pid = os.fork()
if pid == 0:
    m = mmap.mmap(fd, 2 << 20, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    for page in range(512):
        m[page * 4096] = 1
        os.write(1, b"")  # keep going
    os._exit(0)
_, st = os.waitpid(pid, 0)
blocks = os.fstat(fd).st_blocks
print("mapped writes:", "killed by", signal.Signals(os.WTERMSIG(st)).name if os.WIFSIGNALED(st) else "exit %d" % os.WEXITSTATUS(st),
      "blocks", blocks)
os.close(fd)
os.unlink(d + "/m")
print("after mmap", fs())

# Extended attributes take the inode space (nr_inodes * 1024 bytes).
open(d + "/x", "w").close()
n = 0
try:
    while n < 100000:
        os.setxattr(d + "/x", "user.k%d" % n, b"v" * 1000)
        n += 1
except OSError as e:
    print("xattrs stop at", n, errno.errorcode[e.errno])
print("after xattrs", fs())
os.unlink(d + "/x")

# Inodes.
n = 0
try:
    while n < 100000:
        open(d + "/f%d" % n, "w").close()
        n += 1
except OSError as e:
    print("files stop at", n, errno.errorcode[e.errno])
print("after files", fs())
