# fifostat.py DIR: fstat of an open FIFO and device node shows their own
# mode and owner, also after a chmod between opens.
import os, sys, stat
d = sys.argv[1]
os.mkfifo(d + "/f", 0o640)
os.chown(d + "/f", 65534, 65534)
r = os.open(d + "/f", os.O_RDONLY | os.O_NONBLOCK)
st = os.fstat(r)
print(oct(st.st_mode), st.st_uid, st.st_gid, st.st_nlink, st.st_size)
os.chmod(d + "/f", 0o604)
w = os.open(d + "/f", os.O_WRONLY | os.O_NONBLOCK)
st = os.fstat(w); print(oct(st.st_mode), st.st_uid)
os.mknod(d + "/null", 0o620 | stat.S_IFCHR, os.makedev(1, 3))
n = os.open(d + "/null", os.O_RDWR); st = os.fstat(n); print(oct(st.st_mode), st.st_uid, hex(st.st_rdev))
