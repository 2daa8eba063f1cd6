import os, socket, sys, stat
d = sys.argv[1]
p = os.path.join(d, "s.sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(p); srv.listen(1)
st = os.stat(p)
print("mode", oct(st.st_mode), stat.S_ISSOCK(st.st_mode))
try:
    socket.socket(socket.AF_UNIX).bind(p)
except OSError as e:
    print("rebind", e.errno)
if os.fork() == 0:
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(p); c.sendall(b"hello over unix"); c.close(); os._exit(0)
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
