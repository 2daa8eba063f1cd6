"""Linux behaviours real test suites check (issue #15), printed for a
comparison of the sandbox's /tmp with a kernel tmpfs: readlink of an
empty path, truncate(2) past RLIMIT_FSIZE, O_NOATIME by a non-owner."""
import os, signal, resource, sys, errno
d=sys.argv[1]
os.chmod(d, 0o777)
os.chdir(d)
def e(f):
    try: return f()
    except OSError as x: return errno.errorcode[x.errno]
open(d+"/own","w").close(); os.chmod(d+"/own",0o666)
print("readlink empty:", e(lambda: os.readlink("")))
fd=os.open(d, os.O_RDONLY)
print("readlinkat dirfd empty:", e(lambda: os.readlink("", dir_fd=fd)))
signal.signal(signal.SIGXFSZ, lambda *a: print("got SIGXFSZ"))
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))
print("truncate past:", e(lambda: os.truncate(d+"/own", 5000)))
print("truncate within:", e(lambda: os.truncate(d+"/own", 500)))
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
os.chown(d+"/own", 0, 0)
pid=os.fork()
if pid==0:
    os.setresuid(65534,65534,65534)
    print("noatime non-owner:", e(lambda: os.open(d+"/own", os.O_RDONLY|os.O_NOATIME)))
    os._exit(0)
os.waitpid(pid,0)
print("noatime owner:", e(lambda: (os.close(os.open(d+"/own", os.O_RDONLY|os.O_NOATIME)), "ok")[1]))
