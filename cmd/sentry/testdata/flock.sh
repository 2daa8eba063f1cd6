set -e
cd "$1"
touch lk
flock -n lk -c 'echo got-ex; flock -n lk -c "echo inner" || echo inner-refused'
flock -s lk -c 'flock -s -n lk -c "echo shared-too"; flock -n -x lk -c "echo no" || echo ex-refused'
( flock -x lk -c 'sleep 0.3; echo first-done' & )
sleep 0.1
flock -x lk -c 'echo second-after'
python3 -c '
import fcntl, os, sys
f = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(f, fcntl.LOCK_EX)
g = os.dup(f); fcntl.flock(g, fcntl.LOCK_EX | fcntl.LOCK_NB); print("dup shares")
h = os.open(sys.argv[1], os.O_RDONLY)
try: fcntl.flock(h, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError as e: print("other open", e.errno)
try: fcntl.flock(h, 99)
except OSError as e: print("bad op", e.errno)
os.close(f); os.close(g)
fcntl.flock(h, fcntl.LOCK_EX | fcntl.LOCK_NB); print("released on last close")
' lk
