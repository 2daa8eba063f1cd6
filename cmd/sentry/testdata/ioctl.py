import os, fcntl, termios, struct, array, sys
d = sys.argv[1]
fd=os.open(d + "/io", os.O_CREAT|os.O_RDWR); os.write(fd, b"x"*100); os.lseek(fd, 30, 0)
buf=array.array("i",[0]); fcntl.ioctl(fd, termios.FIONREAD, buf); print("fionread", buf[0])
for req,name in ((termios.TCGETS,"TCGETS"),(termios.TIOCGWINSZ,"TIOCGWINSZ"),(0x12345678,"unknown"),(0x80086601,"FS_IOC_GETFLAGS")):
  try: fcntl.ioctl(fd, req, b"\0"*64); print(name, "ok")
  except OSError as e: print(name, e.errno)
print("fionbio", fcntl.ioctl(fd, termios.FIONBIO, struct.pack("i",1)), hex(fcntl.fcntl(fd, fcntl.F_GETFL)))
fcntl.ioctl(fd, termios.FIOCLEX); print("fioclex", fcntl.fcntl(fd, fcntl.F_GETFD))
fcntl.ioctl(fd, termios.FIONCLEX); print("fionclex", fcntl.fcntl(fd, fcntl.F_GETFD))
dd=os.open(d, os.O_RDONLY)
try: fcntl.ioctl(dd, termios.FIONREAD, buf); print("dir fionread", buf[0])
except OSError as e: print("dir fionread", e.errno)
print(os.isatty(fd))
# The generic requests tmpfs answers, and ones it does not (ENOTTY).
def q(f, req, arg, name, show=True):
  try: r = fcntl.ioctl(f, req, arg); print(name, "ok", r if show else len(r))
  except OSError as e: print(name, e.errno)
q(fd, 0x5460, b"\0"*8, "file FIOQSIZE")
q(dd, 0x5460, b"\0"*8, "dir FIOQSIZE")
q(fd, 0x2, b"\0"*4, "FIGETBSZ")
q(fd, 0xC020660B, b"\0"*32, "FS_IOC_FIEMAP")
q(fd, 0x80111500, b"\0"*17, "FS_IOC_GETFSUUID", False)
q(fd, 0x40305839, struct.pack("hhxxxxqqi16x", 0, 0, 200, 10, 0), "FS_IOC_ZERO_RANGE")
print("size after zero range", os.fstat(fd).st_size)
q(fd, 0x80811501, b"\0"*129, "FS_IOC_GETFSSYSFSPATH")
q(dd, 0x40086610, b"\0"*8, "dir unknown")
q(dd, 0xC0189436, b"\0"*24, "dir FIDEDUPERANGE")
