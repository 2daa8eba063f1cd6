import os, time, ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
def fa(fd, mode, off, ln):
    r = libc.fallocate(fd, mode, ctypes.c_long(off), ctypes.c_long(ln))
    return r if r == 0 else -ctypes.get_errno()
d = sys.argv[1]
p = d + "/fa"
fd=os.open(p, os.O_CREAT|os.O_RDWR|os.O_TRUNC, 0o644)
def st(tag):
    s=os.fstat(fd); print(tag, s.st_size, s.st_blocks)
st("new")
m0=os.fstat(fd).st_mtime_ns; time.sleep(0.01)
print("alloc", fa(fd,0,0,10000)); st(" after"); print(" mtime moved", os.fstat(fd).st_mtime_ns!=m0)
m0=os.fstat(fd).st_mtime_ns; time.sleep(0.01)
print("keep", fa(fd,1,0,20000)); st(" after"); print(" mtime moved", os.fstat(fd).st_mtime_ns!=m0)
os.pwrite(fd, b"x"*10000, 0)
m0=os.fstat(fd).st_mtime_ns; time.sleep(0.01)
print("punch", fa(fd,3,100,8192)); st(" after"); print(" mtime moved", os.fstat(fd).st_mtime_ns!=m0, os.pread(fd, 4, 98))
os.ftruncate(fd, 15000); st("grow"); print(os.pread(fd, 8, 12000))
os.ftruncate(fd, 15000); st("same")
print("punch no keep", fa(fd,2,0,10))
print("zero range", fa(fd,0x10,0,10))
print("collapse", fa(fd,0x8,0,4096))
print("neg", fa(fd,0,-1,10), fa(fd,0,0,0), fa(fd,0,0,-5))
r=os.open(p, os.O_RDONLY); print("rdonly", fa(r,0,0,10))
dd=os.open(d, os.O_RDONLY); print("dir", fa(dd,0,0,10))
print("big", fa(fd, 0, 1<<62, 1<<62))
os.unlink(p)
