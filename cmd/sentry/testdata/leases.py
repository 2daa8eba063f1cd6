# Leases: refused on the sentry's files (EINVAL, as on a file system
# without them), so that no guest can make the sentry's own open of a
# file wait in the kernel's lease break while the holder waits for the
# sandbox; a host file's lease is the host's, as natively.
import fcntl, os, select, sys
tmp, host = sys.argv[1], sys.argv[2]
F_SETLEASE, F_GETLEASE = 1024, 1025
p = tmp + "/leased"
open(p, "w").close()
fd = os.open(p, os.O_RDONLY)
try:
    fcntl.fcntl(fd, F_SETLEASE, fcntl.F_RDLCK); print("sentry file lease: granted")
except OSError as e: print("sentry file lease:", e.errno)
print("sentry file getlease:", fcntl.fcntl(fd, F_GETLEASE) == fcntl.F_UNLCK)
# The holder keeps its descriptor and waits for a writer's open, which a
# granted lease would hold for lease-break-time (45 s): the writer says it
# opened through a pipe, and the holder gives up after 20 s.
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    wfd = os.open(p, os.O_WRONLY | os.O_TRUNC)
    os.write(w, b"o")
    os._exit(0)
ready, _, _ = select.select([r], [], [], 20)
print("writer opened while the holder waits:", bool(ready))
os.waitpid(pid, 0)
os.close(fd)
h = host + "/leased"
open(h, "w").close()
hfd = os.open(h, os.O_RDONLY)
fcntl.fcntl(hfd, F_SETLEASE, fcntl.F_RDLCK); print("host file lease: granted")
print("host file getlease:", fcntl.fcntl(hfd, F_GETLEASE) == fcntl.F_RDLCK)
fcntl.fcntl(hfd, F_SETLEASE, fcntl.F_UNLCK)
print("host file released:", fcntl.fcntl(hfd, F_GETLEASE) == fcntl.F_UNLCK)
