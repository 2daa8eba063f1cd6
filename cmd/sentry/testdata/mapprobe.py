# mapprobe.py DIR: mmap of a file in DIR, shared and private, against
# read, write, truncate, another process mapping it, unlink, and the
# access-mode errors; every line must match Linux on a kernel tmpfs.
import mmap, os, sys
d = sys.argv[1]
p = d + "/m"
fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b"hello world")
m = mmap.mmap(fd, 11, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[0:5] = b"HELLO"
print("pread after map write", os.pread(fd, 11, 0))
os.pwrite(fd, b"WORLD", 6)
print("map after pwrite", m[:])
st = os.fstat(fd); print("size", st.st_size, "blocks", st.st_blocks)
os.ftruncate(fd, 8192)
m2 = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m2[5000:5003] = b"abc"
print("pread 5000", os.pread(fd, 3, 5000), "blocks", os.fstat(fd).st_blocks)
priv = mmap.mmap(fd, 8192, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
os.pwrite(fd, b"xyz", 100)
print("private sees pwrite before COW", priv[100:103])
priv[100:103] = b"PPP"
os.pwrite(fd, b"qqq", 100)
print("private after COW", priv[100:103], "file", os.pread(fd, 3, 100))
pid = os.fork()
if pid == 0:
    fd2 = os.open(p, os.O_RDWR)
    c = mmap.mmap(fd2, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    c[200:205] = b"child"
    os._exit(0)
os.waitpid(pid, 0)
print("parent read child's map write", os.pread(fd, 5, 200), m2[200:205])
ro = os.open(p, os.O_RDONLY)
try: mmap.mmap(ro, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
except OSError as e: print("ro shared rw", e.errno)
print("ro private rw ok", len(mmap.mmap(ro, 4096, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)))
wo = os.open(p, os.O_WRONLY)
try: mmap.mmap(wo, 4096, mmap.MAP_SHARED, mmap.PROT_READ)
except OSError as e: print("wo", e.errno)
os.ftruncate(fd, 4096)
print("size after shrink", os.fstat(fd).st_size, "blocks", os.fstat(fd).st_blocks)
os.close(fd)
print(open(p, "rb").read()[:16])
os.unlink(p)
print("map after unlink", m[:5])
