"""A guest that uses up descriptors: it opens a tmpfs file until the
open fails, then, with every descriptor it could get still open, tries
what a sandboxed program does (write through a descriptor it had, stat,
create, rename, mkdir, list, read /proc/self/mounts, exec a tmpfs
binary, unlink), closes them all and tries again. In the sandbox each
open description also holds one of the sentry's own descriptors, so
where the sentry cannot raise its limit above the guest's, the sentry's
table fills first. Prints one line per try: "TAG NAME ok" or
"TAG NAME err ERRNO"; then what the file holds."""
import os
import sys

d = sys.argv[1]


def t(name, f):
    try:
        f()
        print(name, "ok", flush=True)
    except OSError as e:
        print(name, "err", e.errno, flush=True)


with open(f"{d}/keep", "w") as f:
    f.write("hello\n")
with open("/bin/true", "rb") as src, open(f"{d}/true", "wb") as dst:
    dst.write(src.read())
os.chmod(f"{d}/true", 0o755)
w = os.open(f"{d}/keep", os.O_WRONLY | os.O_APPEND)
fds = []
try:
    while True:
        fds.append(os.open(f"{d}/keep", os.O_RDONLY))
except OSError as e:
    print("opened", len(fds), "err", e.errno, flush=True)


def run_true():
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(f"{d}/true", ["true"])
        except OSError as e:
            os._exit(100 + e.errno)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code >= 100:
        raise OSError(code - 100, "exec")


def checks(tag):
    t(tag + " write", lambda: os.write(w, b"more\n"))
    t(tag + " stat", lambda: os.stat(f"{d}/keep"))
    t(tag + " create", lambda: os.close(os.open(f"{d}/new", os.O_CREAT | os.O_WRONLY)))
    t(tag + " rename", lambda: (os.rename(f"{d}/keep", f"{d}/keep2"), os.rename(f"{d}/keep2", f"{d}/keep")))
    t(tag + " mkdir", lambda: os.mkdir(f"{d}/sub-" + tag))
    t(tag + " list", lambda: os.listdir(d))
    t(tag + " mounts", lambda: open("/proc/self/mounts").read())
    t(tag + " exec", run_true)
    t(tag + " unlink", lambda: os.unlink(f"{d}/new"))


checks("full")
for fd in fds:
    os.close(fd)
checks("after")
print("keep", " ".join(open(f"{d}/keep").read().split()))
