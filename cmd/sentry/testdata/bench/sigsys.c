// sigsys: what a seccomp SECCOMP_RET_TRAP + SIGSYS fast path costs, in C: the
// yardstick for a third platform (issue #16; docs/ARCHITECTURE.md, "Where the
// time goes", has the numbers and why no platform uses it yet).
// build: gcc -O2 -pthread -o sigsys sigsys.c
// usage: sigsys native
//        sigsys trap-local
//        sigsys trap-spin  pinned|float|free
//        sigsys trap-futex pinned|float|free   (env SIGSYS_SPIN: spin iterations before FUTEX_WAIT, default 2000)
//        sigsys trap-traced
//        sigsys pitfalls
// Each measuring mode loops syscall(SYS_fstat, fd, &st) on a file in /dev/shm for ~DUR_NS
// (env SIGSYS_NS, default 1e9) and prints "MODE VARIANT ops/s X ns/op Y".
//
// The filter traps fstat (SECCOMP_RET_TRAP) unless seccomp_data.instruction_pointer lies in a
// dedicated stub page (which holds a "syscall; ret" trampoline used for untrapped fstat).
// pinned: guest and supervisor both on CPU 0; float: guest CPU 0, supervisor CPU 1; free: no
// affinity.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

__attribute__((noreturn)) static void die(const char *m) { perror(m); exit(125); }

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

// ---- stub page: long stub(nr, a0, a1, a2, a3, a4) = raw syscall, allowed by the filter ----
typedef long (*stub_fn)(long, long, long, long, long, long);
static stub_fn stub;
static uintptr_t stub_page;

static void make_stub(void) {
  static const unsigned char code[] = {
      0x48, 0x89, 0xf8, // mov rax, rdi
      0x48, 0x89, 0xf7, // mov rdi, rsi
      0x48, 0x89, 0xd6, // mov rsi, rdx
      0x48, 0x89, 0xca, // mov rdx, rcx
      0x4d, 0x89, 0xc2, // mov r10, r8
      0x4d, 0x89, 0xc8, // mov r8, r9
      0x0f, 0x05,       // syscall
      0xc3,             // ret
  };
  void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) die("mmap stub");
  memcpy(p, code, sizeof code);
  if (mprotect(p, 4096, PROT_READ | PROT_EXEC)) die("mprotect stub");
  stub_page = (uintptr_t)p;
  stub = (stub_fn)p;
  if ((uint32_t)stub_page > 0xffffffffu - 4096) die("stub page straddles 4G");
}

// install_filter: fstat -> TRAP unless IP in [stub_page, stub_page+4096); everything else ALLOW.
static void install_filter(void) {
  uint32_t hi = (uint64_t)stub_page >> 32, lo = (uint32_t)stub_page;
  struct sock_filter f[] = {
      /*0*/ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      /*1*/ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      /*2*/ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      /*3*/ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      /*4*/ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fstat, 1, 0),
      /*5*/ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      /*6*/ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4),
      /*7*/ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, hi, 0, 4),
      /*8*/ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)),
      /*9*/ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, lo, 0, 2),
      /*10*/ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, lo + 4096, 1, 0),
      /*11*/ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      /*12*/ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
  };
  struct sock_fprog p = {sizeof f / sizeof f[0], f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) die("no_new_privs");
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p)) die("seccomp");
}

// ---- shared slot (MAP_SHARED memfd) ----
struct slot {
  _Atomic uint32_t req_seq; // guest -> supervisor (futex word)
  _Atomic uint32_t sup_sleeping;
  uint32_t stop;
  long nr;
  long args[6];
  _Alignas(128) _Atomic uint32_t resp_seq; // supervisor -> guest (futex word)
  _Atomic uint32_t guest_sleeping;
  long ret;
  struct stat st; // 144 bytes
} __attribute__((aligned(64)));

static struct slot *slot;
static int use_futex;
static int spin_limit = 2000;
static struct stat cached; // trap-local's cache (and the supervisor's)
static int cached_fd;
static uint32_t guest_seq;

static long futex(_Atomic uint32_t *w, int op, uint32_t v) {
  return syscall(SYS_futex, w, op, v, NULL, NULL, 0); // shared (non-PRIVATE): cross-process
}

static inline void cpu_relax(void) { __builtin_ia32_pause(); }

// wait_for waits until *w != old; spins, then (futex mode) sleeps announcing it in *sleeping.
static inline uint32_t wait_for(_Atomic uint32_t *w, uint32_t old, _Atomic uint32_t *sleeping,
                                uint32_t *stop) {
  uint32_t v;
  for (int i = 0;; i++) {
    v = atomic_load_explicit(w, memory_order_acquire);
    if (v != old) return v;
    if (stop && *(volatile uint32_t *)stop) return old;
    if (use_futex && i >= spin_limit) {
      atomic_store(sleeping, 1); // seq_cst: Dekker with the poster's store+load
      v = atomic_load(w);
      if (v == old) futex(w, FUTEX_WAIT, old);
      atomic_store_explicit(sleeping, 0, memory_order_relaxed);
      i = 0;
      continue;
    }
    cpu_relax();
  }
}

static inline void post(_Atomic uint32_t *w, uint32_t v, _Atomic uint32_t *sleeping) {
  atomic_store(w, v); // seq_cst
  if (use_futex && atomic_load(sleeping)) futex(w, FUTEX_WAKE, 1);
}

// ---- SIGSYS handlers ----
static void h_local(int sig, siginfo_t *si, void *uc_) {
  (void)sig;
  greg_t *g = ((ucontext_t *)uc_)->uc_mcontext.gregs;
  if (si->si_syscall == SYS_fstat && (int)g[REG_RDI] == cached_fd) {
    memcpy((void *)g[REG_RSI], &cached, sizeof cached);
    g[REG_RAX] = 0;
  } else {
    g[REG_RAX] = -ENOSYS;
  }
}

static void h_remote(int sig, siginfo_t *si, void *uc_) {
  (void)sig;
  int saved = errno;
  greg_t *g = ((ucontext_t *)uc_)->uc_mcontext.gregs;
  struct slot *s = slot;
  uint32_t seq = ++guest_seq;
  s->nr = si->si_syscall;
  s->args[0] = g[REG_RDI];
  s->args[1] = g[REG_RSI];
  s->args[2] = g[REG_RDX];
  s->args[3] = g[REG_R10];
  s->args[4] = g[REG_R8];
  s->args[5] = g[REG_R9];
  post(&s->req_seq, seq, &s->sup_sleeping);
  wait_for(&s->resp_seq, seq - 1, &s->guest_sleeping, NULL);
  long ret = s->ret;
  if (ret == 0 && si->si_syscall == SYS_fstat) memcpy((void *)g[REG_RSI], &s->st, sizeof s->st);
  g[REG_RAX] = ret;
  errno = saved;
}

// set_handler_masked installs h for SIGSYS with flags and sa_mask = {masked}
// (none when 0).
static void set_handler_masked(void (*h)(int, siginfo_t *, void *), int flags, int masked) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = h;
  sa.sa_flags = SA_SIGINFO | flags;
  sigemptyset(&sa.sa_mask);
  if (masked) sigaddset(&sa.sa_mask, masked);
  if (sigaction(SIGSYS, &sa, NULL)) die("sigaction");
}

static void set_handler(void (*h)(int, siginfo_t *, void *), int flags) { set_handler_masked(h, flags, 0); }

// ---- supervisor process ----
static void supervisor(void) {
  struct slot *s = slot;
  uint32_t seen = 0;
  for (;;) {
    uint32_t v = wait_for(&s->req_seq, seen, &s->sup_sleeping, &s->stop);
    if (s->stop) _exit(0);
    seen = v;
    long ret;
    if (s->nr == SYS_fstat && (int)s->args[0] == cached_fd) {
      memcpy(&s->st, &cached, sizeof cached);
      ret = 0;
    } else {
      ret = -ENOSYS;
    }
    s->ret = ret;
    post(&s->resp_seq, v, &s->guest_sleeping);
  }
}

static void pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set)) die("sched_setaffinity");
}

// ---- measuring loop ----
static long long dur_ns = 1000000000LL;

static void measure(const char *mode, const char *variant, int fd) {
  struct stat st;
  memset(&st, 0, sizeof st);
  long long n = 0, t0 = now_ns(), t;
  do {
    for (int i = 0; i < 16; i++)
      if (syscall(SYS_fstat, fd, &st)) die("fstat");
    n += 16;
    t = now_ns();
  } while (t - t0 < dur_ns);
  if (st.st_ino != cached.st_ino || st.st_size != cached.st_size || !S_ISREG(st.st_mode)) {
    fprintf(stderr, "bad stat result\n");
    exit(125);
  }
  double secs = (t - t0) / 1e9;
  printf("%s %s ops/s %.0f ns/op %.1f ops %lld\n", mode, variant, n / secs, (t - t0) / (double)n, n);
  fflush(stdout);
}

static int open_file(void) {
  char path[128];
  snprintf(path, sizeof path, "/dev/shm/sigsys-%d", (int)getpid());
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open");
  unlink(path);
  if (write(fd, "hello, sigsys\n", 14) != 14) die("write");
  if (fstat(fd, &cached)) die("fstat");
  cached_fd = fd;
  return fd;
}

// ---- pitfalls: each subtest runs in a child; report how it ended ----
static volatile int depth, maxdepth;
static void h_nested(int sig, siginfo_t *si, void *uc_) {
  (void)sig;
  (void)si;
  greg_t *g = ((ucontext_t *)uc_)->uc_mcontext.gregs;
  depth++;
  if (depth > maxdepth) maxdepth = depth;
  if (depth == 1) { // a trapped call from inside the handler
    struct stat st;
    syscall(SYS_fstat, cached_fd, &st);
  }
  memcpy((void *)g[REG_RSI], &cached, sizeof cached);
  g[REG_RAX] = 0;
  depth--;
}
static volatile int mask_has_usr1 = -1, mask_has_sys = -1;
static void h_maskcheck(int sig, siginfo_t *si, void *uc_) {
  (void)sig;
  (void)si;
  sigset_t cur;
  pthread_sigmask(SIG_BLOCK, NULL, &cur);
  mask_has_usr1 = sigismember(&cur, SIGUSR1);
  mask_has_sys = sigismember(&cur, SIGSYS);
  greg_t *g = ((ucontext_t *)uc_)->uc_mcontext.gregs;
  memcpy((void *)g[REG_RSI], &cached, sizeof cached);
  g[REG_RAX] = 0;
}
static void *blocker_thread(void *a) {
  (void)a;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGSYS);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  struct stat st;
  long r = syscall(SYS_fstat, cached_fd, &st);
  printf("    thread: fstat returned %ld (survived)\n", r);
  fflush(stdout);
  return NULL;
}

static void subtest(const char *name, int which) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    struct stat st;
    sigset_t set;
    struct sigaction sa;
    long r;
    install_filter();
    switch (which) {
    case 0: // no handler (SIG_DFL)
      break;
    case 1: // handler installed, SIGSYS blocked with sigprocmask
      set_handler(h_local, SA_NODEFER);
      sigemptyset(&set);
      sigaddset(&set, SIGSYS);
      sigprocmask(SIG_BLOCK, &set, NULL);
      break;
    case 2: // SIGSYS ignored
      signal(SIGSYS, SIG_IGN);
      break;
    case 3: // handler without SA_NODEFER, trapped call inside the handler
      set_handler(h_nested, 0);
      break;
    case 4: // handler with SA_NODEFER, trapped call inside the handler
      set_handler(h_nested, SA_NODEFER);
      break;
    case 5: // SA_NODEFER but sa_mask contains SIGSYS, trapped call inside the handler
      set_handler_masked(h_nested, SA_NODEFER, SIGSYS);
      break;
    case 6: // is sa_mask applied during a seccomp SIGSYS handler?
      set_handler_masked(h_maskcheck, SA_NODEFER, SIGUSR1);
      break;
    case 7: { // another thread blocks SIGSYS, main thread has it unblocked
      set_handler(h_local, SA_NODEFER);
      pthread_t t;
      pthread_create(&t, NULL, blocker_thread, NULL);
      pthread_join(t, NULL);
      break;
    }
    case 9: // execve keeps the filter but resets the handler to SIG_DFL
      set_handler(h_local, SA_NODEFER);
      setenv("SIGSYS_NS", "1000000", 1);
      execl("/proc/self/exe", "sigsys", "native", "after-exec", (char *)NULL);
      die("execl");
    case 8: // after a process-wide handler reset? check handler is intact after normal use
      set_handler(h_local, SA_NODEFER);
      break;
    }
    memset(&st, 0, sizeof st);
    r = syscall(SYS_fstat, cached_fd, &st);
    printf("    fstat returned %ld errno %d ino ok %d maxdepth %d", r, r < 0 ? errno : 0,
           st.st_ino == cached.st_ino, maxdepth);
    if (which == 6) printf(" in-handler mask: SIGUSR1 %d SIGSYS %d", mask_has_usr1, mask_has_sys);
    if (which == 8) {
      sigaction(SIGSYS, NULL, &sa);
      printf(" handler still installed %d", sa.sa_sigaction == h_local);
    }
    printf("\n");
    fflush(stdout);
    _exit(0);
  }
  int ws;
  waitpid(pid, &ws, 0);
  if (WIFEXITED(ws))
    printf("%-62s -> exited %d\n", name, WEXITSTATUS(ws));
  else
    printf("%-62s -> killed by signal %d (%s)%s\n", name, WTERMSIG(ws), strsignal(WTERMSIG(ws)),
           WCOREDUMP(ws) ? " core" : "");
}

static void pitfalls(void) {
  // Stub-page bypass sanity: a call from the stub page is not trapped.
  subtest("no handler (SIG_DFL), trapped fstat", 0);
  subtest("handler installed, SIGSYS blocked by sigprocmask", 1);
  subtest("SIGSYS set to SIG_IGN", 2);
  subtest("handler w/o SA_NODEFER, nested trapped call in handler", 3);
  subtest("handler with SA_NODEFER, nested trapped call in handler", 4);
  subtest("SA_NODEFER + sa_mask{SIGSYS}, nested trapped call", 5);
  subtest("sa_mask{SIGUSR1}: mask seen inside the handler", 6);
  subtest("other thread blocks SIGSYS and makes a trapped call", 7);
  subtest("normal trapped call, handler intact afterwards", 8);
  subtest("execve (filter kept, handler reset) then trapped fstat", 9);
  printf("AT_MINSIGSTKSZ (signal frame floor incl. xsave) = %lu bytes\n", getauxval(AT_MINSIGSTKSZ));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: sigsys native|trap-local|trap-spin V|trap-futex V|trap-traced|pitfalls\n");
    return 2;
  }
  const char *mode = argv[1], *variant = argc > 2 ? argv[2] : "-";
  if (getenv("SIGSYS_NS")) dur_ns = atoll(getenv("SIGSYS_NS"));
  if (getenv("SIGSYS_SPIN")) spin_limit = atoi(getenv("SIGSYS_SPIN"));
  setvbuf(stdout, NULL, _IOLBF, 0);
  make_stub();
  int fd = open_file();
  // The stub is not trapped even under the filter (checked in every trapped mode below).

  if (!strcmp(mode, "native")) {
    measure(mode, variant, fd);
    return 0;
  }
  if (!strcmp(mode, "pitfalls")) {
    pitfalls();
    return 0;
  }
  if (!strcmp(mode, "trap-local")) {
    set_handler(h_local, SA_NODEFER);
    install_filter();
    struct stat st;
    if (stub(SYS_fstat, fd, (long)&st, 0, 0, 0) != 0) die("stub fstat");
    measure(mode, variant, fd);
    return 0;
  }
  if (!strcmp(mode, "trap-traced")) {
    int p[2];
    if (pipe(p)) die("pipe");
    pid_t pid = fork();
    if (pid == 0) {
      char c;
      close(p[1]);
      if (read(p[0], &c, 1) != 0) die("read");
      set_handler(h_local, SA_NODEFER);
      install_filter();
      measure(mode, variant, fd);
      _exit(0);
    }
    close(p[0]);
    if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_EXITKILL)) die("PTRACE_SEIZE");
    close(p[1]); // release the child
    long stops = 0;
    int ws;
    for (;;) {
      if (waitpid(pid, &ws, __WALL) < 0) die("waitpid");
      if (WIFEXITED(ws) || WIFSIGNALED(ws)) break;
      if (WIFSTOPPED(ws)) {
        int sig = WSTOPSIG(ws);
        if (ws >> 16 == PTRACE_EVENT_STOP) sig = 0; // group-stop / event stop: don't inject
        stops++;
        ptrace(PTRACE_CONT, pid, 0, sig);
      }
    }
    fprintf(stderr, "trap-traced: %ld signal-delivery stops, child %s %d\n", stops,
            WIFEXITED(ws) ? "exited" : "killed", WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 125;
  }
  if (!strcmp(mode, "trap-spin") || !strcmp(mode, "trap-futex")) {
    use_futex = !strcmp(mode, "trap-futex");
    int gcpu = -1, scpu = -1;
    // variant may carry a suffix (e.g. pinned-spin0) that is only a label
    if (!strncmp(variant, "pinned", 6)) gcpu = scpu = 0;
    else if (!strncmp(variant, "float", 5)) gcpu = 0, scpu = 1;
    else if (strncmp(variant, "free", 4)) die("variant must be pinned|float|free[-label]");
    int mfd = memfd_create("sigsys-slot", 0);
    if (mfd < 0 || ftruncate(mfd, 4096)) die("memfd");
    slot = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (slot == MAP_FAILED) die("mmap slot");
    close(mfd);
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      pin(scpu);
      supervisor();
    }
    pin(gcpu);
    set_handler(h_remote, SA_NODEFER);
    install_filter();
    struct stat st;
    if (stub(SYS_fstat, fd, (long)&st, 0, 0, 0) != 0) die("stub fstat");
    measure(mode, variant, fd);
    slot->stop = 1;
    post(&slot->req_seq, ++guest_seq, &slot->sup_sleeping);
    if (use_futex) futex(&slot->req_seq, FUTEX_WAKE, 1);
    waitpid(pid, NULL, 0);
    return 0;
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
