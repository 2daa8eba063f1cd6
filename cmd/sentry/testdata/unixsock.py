import os, socket, sys, stat
d = sys.argv[1]
p = os.path.join(d, "s.sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(p); srv.listen(1)
print("sockname", srv.getsockname().replace(d, "D"))
st = os.stat(p)
print("mode", oct(st.st_mode), stat.S_ISSOCK(st.st_mode))
try:
    socket.socket(socket.AF_UNIX).bind(p)
except OSError as e:
    print("rebind", e.errno)
if os.fork() == 0:
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(p); c.sendall(b"hello over unix " + c.getpeername().replace(d, "D").encode()); c.close(); os._exit(0)
conn, _ = srv.accept()
print(conn.recv(100).decode())
os.wait()
try:
    socket.socket(socket.AF_UNIX).connect(os.path.join(d, "nope"))
except OSError as e:
    print("missing", e.errno)
open(os.path.join(d, "plain"), "w").close()
try:
    socket.socket(socket.AF_UNIX).connect(os.path.join(d, "plain"))
except OSError as e:
    print("notsock", e.errno)
os.unlink(p); print(sorted(os.listdir(d)))
# Datagrams sent to a path (sendto), between processes.
dp = os.path.join(d, "d.sock")
dsrv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
dsrv.bind(dp)
if os.fork() == 0:
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"datagram", dp); os._exit(0)
print(dsrv.recv(100).decode())
os.wait()
for name in ("nope", "plain"):
    try:
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", os.path.join(d, name))
    except OSError as e:
        print("sendto", name, e.errno)
os.unlink(dp); print(sorted(os.listdir(d)))
# A relative path is reported as given; a short buffer gets a truncated
# address and the full length.
os.chdir(d)
rel = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
rel.bind("rel.sock")
print("relative", rel.getsockname())
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(8); ln = ctypes.c_uint32(8)
print("short", libc.getsockname(rel.fileno(), buf, ctypes.byref(ln)), ln.value, buf.raw[2:8])
os.unlink("rel.sock")
