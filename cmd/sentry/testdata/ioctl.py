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
