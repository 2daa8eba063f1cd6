// Copied from the session's shared yardsticks (../shared/bench/floor.c, issue #16) so that
// "sentry bench" needs nothing outside the repository; keep it a plain C yardstick.

// floor: the least a supervisor can do per trapped call, in C, as a yardstick for the sentry.
// usage: floor ptrace|unotify PROG [ARG...]
// Traps openat, close, fstat, newfstatat like the sentry does (seccomp RET_TRACE or USER_NOTIF),
// serves fstat and newfstatat(fd, "", AT_EMPTY_PATH) from a per-fd cache of struct stat
// (filled once per open via pidfd_getfd, as the sentry keeps inodes in memory), and lets
// openat/close run on the host after one stop (ptrace) or one notification (unotify).
// So it is a lower bound: one stop or notification per call, nothing else.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1
#endif

#define MAXFD 4096
static struct stat cache[MAXFD];
static char have[MAXFD];
static int pidfd;

static void die(const char *m) { perror(m); exit(125); }

static int filter(unsigned action) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 4, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close, 3, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fstat, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_newfstatat, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, action),
  };
  struct sock_fprog p = {sizeof f / sizeof f[0], f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) die("no_new_privs");
  unsigned flags = action == SECCOMP_RET_USER_NOTIF ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
  int r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &p);
  if (r < 0) die("seccomp");
  return r;
}

// stat_of returns the cached stat of the guest's fd, fetching it on first sight.
static struct stat *stat_of(int fd) {
  if (fd < 0 || fd >= MAXFD) return NULL;
  if (!have[fd]) {
    int h = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
    if (h < 0) return NULL;
    fstat(h, &cache[fd]);
    close(h);
    have[fd] = 1;
  }
  return &cache[fd];
}

static int put(pid_t pid, unsigned long addr, void *buf, size_t n) {
  struct iovec l = {buf, n}, r = {(void *)addr, n};
  return process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -EFAULT;
}

static int empty_path(pid_t pid, unsigned long addr) {
  char c = 1;
  struct iovec l = {&c, 1}, r = {(void *)addr, 1};
  return process_vm_readv(pid, &l, 1, &r, 1, 0) == 1 && c == 0;
}

// serve returns 1 with *ret set when the call is answered, 0 to let it run on the host.
static int serve(pid_t pid, long nr, unsigned long a0, unsigned long a1, unsigned long a2,
                 unsigned long a3, long *ret) {
  struct stat *st;
  switch (nr) {
  case SYS_close:
    if ((long)a0 >= 0 && a0 < MAXFD) have[a0] = 0;
    return 0;
  case SYS_fstat:
    if (!(st = stat_of(a0))) return 0;
    *ret = put(pid, a1, st, sizeof *st);
    return 1;
  case SYS_newfstatat:
    if (a3 != AT_EMPTY_PATH || (int)a0 < 0 || !empty_path(pid, a1) || !(st = stat_of(a0))) return 0;
    *ret = put(pid, a2, st, sizeof *st);
    return 1;
  }
  return 0;
}

static int run_ptrace(char **argv) {
  pid_t pid = fork();
  if (pid == 0) {
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    raise(SIGSTOP);
    filter(SECCOMP_RET_TRACE);
    execvp(argv[0], argv);
    die("exec");
  }
  int ws;
  waitpid(pid, &ws, 0);
  pidfd = syscall(SYS_pidfd_open, pid, 0);
  ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL);
  ptrace(PTRACE_CONT, pid, 0, 0);
  struct user_regs_struct r;
  for (;;) {
    if (waitpid(pid, &ws, 0) < 0) die("waitpid");
    if (WIFEXITED(ws)) return WEXITSTATUS(ws);
    if (WIFSIGNALED(ws)) return 128 + WTERMSIG(ws);
    int sig = 0;
    if (ws >> 8 == (SIGTRAP | (PTRACE_EVENT_SECCOMP << 8))) {
      long ret;
      ptrace(PTRACE_GETREGS, pid, 0, &r);
      if (serve(pid, r.orig_rax, r.rdi, r.rsi, r.rdx, r.r10, &ret)) {
        r.orig_rax = -1;
        r.rax = ret;
        ptrace(PTRACE_SETREGS, pid, 0, &r);
      }
    } else if (WIFSTOPPED(ws) && WSTOPSIG(ws) != SIGTRAP && WSTOPSIG(ws) != SIGSTOP) {
      sig = WSTOPSIG(ws);
    }
    ptrace(PTRACE_CONT, pid, 0, sig);
  }
}

static int run_unotify(char **argv) {
  int up[2], down[2];
  if (pipe(up) || pipe(down)) die("pipe");
  pid_t pid = fork();
  if (pid == 0) {
    int l = filter(SECCOMP_RET_USER_NOTIF);
    char ack;
    if (write(up[1], &l, sizeof l) != sizeof l || read(down[0], &ack, 1) != 1) _exit(125);
    close(l); // served by the parent from here on
    execvp(argv[0], argv);
    die("exec");
  }
  int l;
  if (read(up[0], &l, sizeof l) != sizeof l) die("listener");
  pidfd = syscall(SYS_pidfd_open, pid, 0);
  int fd = syscall(SYS_pidfd_getfd, pidfd, l, 0);
  if (fd < 0) die("pidfd_getfd");
  ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0);
  if (write(down[1], "", 1) != 1) die("ack");
  struct seccomp_notif *req = calloc(1, 4096);
  struct seccomp_notif_resp *resp = calloc(1, 4096);
  for (;;) {
    memset(req, 0, sizeof *req);
    if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
      if (errno == EINTR) continue;
      break; // the guest is gone
    }
    long ret;
    unsigned long *a = (unsigned long *)req->data.args;
    memset(resp, 0, sizeof *resp);
    resp->id = req->id;
    if (serve(req->pid, req->data.nr, a[0], a[1], a[2], a[3], &ret)) {
      if (ret < 0) resp->error = ret; else resp->val = ret;
    } else {
      resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    }
    ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, resp);
  }
  int ws;
  waitpid(pid, &ws, 0);
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: floor ptrace|unotify PROG [ARG...]\n");
    return 2;
  }
  if (!strcmp(argv[1], "ptrace")) return run_ptrace(argv + 2);
  if (!strcmp(argv[1], "unotify")) return run_unotify(argv + 2);
  fprintf(stderr, "floor: unknown mode %s\n", argv[1]);
  return 2;
}
