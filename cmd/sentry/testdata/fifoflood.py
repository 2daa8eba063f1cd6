# fifoflood: a hostile guest interrupts blocked FIFO opens on purpose,
# 200 FIFOs, each open cut by a 10 ms alarm whose handler raises (no
# restart): every open must fail with EINTR, as on Linux, and the opens
# the sentry leaves behind must not pile up (the sandbox bounds them) nor
# keep the sandbox from ending. Then one FIFO is opened with a writer, to
# show a FIFO still works after the flood.
import os, signal, sys
class Alarm(Exception):
    pass
def h(*a):
    raise Alarm()
signal.signal(signal.SIGALRM, h)
d = sys.argv[1]
n = 0
for i in range(200):
    p = os.path.join(d, "ff%d" % i)
    os.mkfifo(p)
    signal.setitimer(signal.ITIMER_REAL, 0.01, 0)
    try:
        os.close(os.open(p, os.O_RDONLY))
    except Alarm:
        n += 1
signal.setitimer(signal.ITIMER_REAL, 0, 0)
print("interrupted", n)
p = os.path.join(d, "last")
os.mkfifo(p)
if os.fork() == 0:
    w = os.open(p, os.O_WRONLY)
    os.write(w, b"x")
    os._exit(0)
r = os.open(p, os.O_RDONLY)
print("read", os.read(r, 1).decode())
os.wait()
