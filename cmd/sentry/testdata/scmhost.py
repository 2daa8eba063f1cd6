"""A guest passes a descriptor of a tmpfs file to a process outside the
sandbox over a host socket (argv[1]) and gets it back: the outside
process holds the file's data itself; what it passes back is the guest's
file again. argv[2] is that process's pid: its /proc/PID/fd links to the
file must not give the guest a second way into the sandbox's store."""
import array, errno, os, socket, sys
from probeutil import e
sock_path, peer = sys.argv[1], int(sys.argv[2])
f = "/tmp/shared"
with open(f, "w") as w: w.write("secret-data")
fd = os.open(f, os.O_RDWR)
os.lseek(fd, 7, os.SEEK_SET)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock_path)
s.sendmsg([b"f"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
os.close(fd)
d = os.open("/tmp", os.O_RDONLY | os.O_DIRECTORY)
s.sendmsg([b"d"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [d]))])
os.close(d)
msg, anc, _, _ = s.recvmsg(64, socket.CMSG_SPACE(8))
print("outside says:", msg.decode())
links = msg.decode().split()[-2:]
fds = array.array("i")
fds.frombytes(anc[0][2])
back = fds[0]
a, b = os.fstat(back), os.stat(f)
print("back is the file:", (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino))
print("back name:", os.readlink("/proc/self/fd/%d" % back))
print("back offset:", os.lseek(back, 0, os.SEEK_CUR))
print("back reads:", os.pread(back, 32, 0))
print("data by name:", open(f, "rb").read())
# The outside process's links to the file and the directory lead into the
# store, which the guest must not reach by them.
for n in links:
    p = "/proc/%d/fd/%s" % (peer, n)
    print("open outside link:", e(lambda: (os.close(os.open(p, os.O_RDONLY)), "opened")[1]))
    print("open outside link dir:", e(lambda: (os.close(os.open(p + "/..", os.O_RDONLY)), "opened")[1]))
    print("stat outside link:", e(lambda: os.stat(p).st_ino == b.st_ino))
s.send(b"done")
