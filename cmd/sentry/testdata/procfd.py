# procfd.py DIR: a virtual fd named through /proc/thread-self/fd,
# /proc/self/task/TID/fd and /proc/PID/task/TID/fd, from the main thread and
# another one, and a TID that is not a thread of the process.
import os, sys, threading
d = sys.argv[1]
fd = os.open(d + "/x", os.O_CREAT | os.O_RDWR, 0o600)
pid, tid = os.getpid(), threading.get_native_id()
out = []
def probe(tag, tid2):
    for p in ["/proc/thread-self/fd/%d", "/proc/self/task/%d/fd/%%d" % tid2, "/proc/%d/task/%d/fd/%%d" % (pid, tid2), "/proc/self/task/1/fd/%d"]:
        try: out.append((tag, p.split("/fd")[0].replace(str(pid), "PID").replace(str(tid2), "TID"), os.readlink(p % fd).replace(d, "D"), os.stat(p % fd).st_size))
        except OSError as e: out.append((tag, p, e.errno))
probe("main", tid)
th = threading.Thread(target=lambda: probe("thread", threading.get_native_id())); th.start(); th.join()
os.write(fd, b"abc")
with open("/proc/thread-self/fd/%d" % fd) as f: out.append(f.read())
for o in out: print(o)
