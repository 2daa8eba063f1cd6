// workload.c: the will-it-scale-style loops of "sentry bench".
//
// Usage: workload NAME DIR DURATION_NS TASKS
//
// Each of TASKS copies (processes, like will-it-scale's -t) gets its own file
// in DIR, then runs NAME's loop for DURATION_NS. The program prints
// "ops N ns M": the iterations done by all copies and the longest copy's
// measured loop time. Setup and teardown are outside the measured time, so a
// sandbox's start-up cost does not leak into the rate.
//
// Every call's result is checked and any failure exits non-zero with a
// message: a benchmark of a call that fails measures the error path.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FILE_SIZE 4096
// HOST_FILE is the host file of the host-path workloads (what the sandbox
// passes through, after resolving the path as the kernel would).
#define HOST_FILE "/usr/include/stdio.h"
// The clock is read once per BATCH iterations: clock_gettime is cheap (vDSO)
// but not free next to an untrapped getppid, and a batch overshoots the
// deadline by microseconds at worst.
#define BATCH 16

static const char *workload;

static void die(const char *fmt, ...) {
	int e = errno;
	va_list ap;
	fprintf(stderr, "workload %s: ", workload);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (e)
		fprintf(stderr, ": %s", strerror(e));
	fputc('\n', stderr);
	exit(1);
}

static long long now_ns(void) {
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		die("clock_gettime");
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct result {
	long long ops, ns;
};

static char pattern[FILE_SIZE];

// LOOP runs body in batches until the deadline and stores the count and the
// time taken in *res.
#define LOOP(body)                                            \
	do {                                                      \
		long long start_ = now_ns(), end_ = start_ + dur, t_; \
		long long ops_ = 0;                                   \
		for (;;) {                                            \
			for (int i_ = 0; i_ < BATCH; i_++) {              \
				body;                                         \
			}                                                 \
			ops_ += BATCH;                                    \
			if ((t_ = now_ns()) >= end_)                      \
				break;                                        \
		}                                                     \
		res->ops = ops_;                                      \
		res->ns = t_ - start_;                                \
	} while (0)

// setup creates task n's file, filled with the pattern, and returns an fd
// open on it.
static int setup(const char *dir, int n, char *path, size_t pathlen) {
	if ((size_t)snprintf(path, pathlen, "%s/%s.%d", dir, workload, n) >= pathlen) {
		errno = ENAMETOOLONG;
		die("path");
	}
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("create %s", path);
	ssize_t w = pwrite(fd, pattern, FILE_SIZE, 0);
	if (w != FILE_SIZE) {
		if (w >= 0)
			errno = 0;
		die("pwrite %s: %zd bytes", path, w);
	}
	return fd;
}

// check_stat verifies what a stat loop saw last, so a loop of calls that
// "succeed" with garbage would not pass.
static void check_stat(const struct stat *st) {
	errno = 0;
	if (!S_ISREG(st->st_mode) || st->st_size != FILE_SIZE)
		die("stat: mode %o size %lld, want a regular file of %d bytes",
		    st->st_mode, (long long)st->st_size, FILE_SIZE);
}

// task runs one copy of the loop.
static void task(const char *dir, int n, void (*wait_start)(void), long long dur,
		 struct result *res) {
	char path[4096];
	int fd = setup(dir, n, path, sizeof path);
	struct stat st;
	static char buf[FILE_SIZE];
	ssize_t r;

	char link[256] = "";
	if (!strcmp(workload, "open1")) {
		if (close(fd))
			die("close");
		fd = -1;
	} else if (!strcmp(workload, "hostlinkstat")) {
		snprintf(link, sizeof link, "/dev/shm/sentry-bench-link-%d-%d", (int)getpid(), n);
		unlink(link);
		if (symlink(HOST_FILE, link))
			die("symlink %s", link);
	}
	wait_start();
	if (!strcmp(workload, "open1")) {
		LOOP({
			int f = open(path, O_RDWR);
			if (f < 0)
				die("open %s", path);
			if (close(f))
				die("close");
		});
	} else if (!strcmp(workload, "fstat")) {
		LOOP({
			if (syscall(SYS_fstat, fd, &st))
				die("fstat");
		});
		check_stat(&st);
	} else if (!strcmp(workload, "fstatat_empty")) {
		LOOP({
			if (syscall(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH))
				die("newfstatat(fd, \"\", AT_EMPTY_PATH)");
		});
		check_stat(&st);
	} else if (!strcmp(workload, "stat")) {
		LOOP({
			if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0))
				die("newfstatat %s", path);
		});
		check_stat(&st);
	} else if (!strcmp(workload, "read4k")) {
		LOOP({
			if ((r = pread(fd, buf, FILE_SIZE, 0)) != FILE_SIZE) {
				if (r >= 0)
					errno = 0;
				die("pread: %zd bytes", r);
			}
		});
		errno = 0;
		if (memcmp(buf, pattern, FILE_SIZE))
			die("pread: data differs from what was written");
	} else if (!strcmp(workload, "write4k")) {
		LOOP({
			if ((r = pwrite(fd, pattern, FILE_SIZE, 0)) != FILE_SIZE) {
				if (r >= 0)
					errno = 0;
				die("pwrite: %zd bytes", r);
			}
		});
	} else if (!strcmp(workload, "getppid")) {
		LOOP({
			if (syscall(SYS_getppid) < 0)
				die("getppid");
		});
	} else if (!strcmp(workload, "hoststat") || !strcmp(workload, "hostlinkstat")) {
		const char *p = link[0] ? link : HOST_FILE;
		LOOP({
			if (syscall(SYS_newfstatat, AT_FDCWD, p, &st, 0))
				die("newfstatat %s", p);
		});
		errno = 0;
		if (!S_ISREG(st.st_mode))
			die("stat %s: mode %o, want a regular file", p, st.st_mode);
	} else if (!strcmp(workload, "hostopen1")) {
		LOOP({
			int f = open(HOST_FILE, O_RDONLY);
			if (f < 0)
				die("open %s", HOST_FILE);
			if (close(f))
				die("close");
		});
	}
	if (link[0] && unlink(link))
		die("unlink %s", link);
	if (fd >= 0 && close(fd))
		die("close");
	if (unlink(path))
		die("unlink %s", path);
}

static const char *const workloads[] = {
	"open1", "fstat", "fstatat_empty", "stat", "read4k", "write4k", "getppid",
	"hoststat", "hostopen1", "hostlinkstat",
};

static void no_wait(void) {}

static int go_pipe[2], ready_pipe[2];

// barrier tells the parent this task is set up and blocks until the parent
// starts all tasks at once (it closes the go pipe).
static void barrier(void) {
	char c = 0;
	if (write(ready_pipe[1], &c, 1) != 1)
		die("write ready pipe");
	if (read(go_pipe[0], &c, 1) != 0)
		die("read go pipe");
}

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: %s NAME DIR DURATION_NS TASKS\n", argv[0]);
		return 2;
	}
	workload = argv[1];
	int known = 0;
	for (size_t i = 0; i < sizeof workloads / sizeof *workloads; i++)
		known |= !strcmp(workload, workloads[i]);
	errno = 0;
	if (!known)
		die("unknown workload");
	const char *dir = argv[2];
	long long dur = atoll(argv[3]);
	int tasks = atoi(argv[4]);
	errno = 0;
	if (dur <= 0 || tasks <= 0)
		die("bad duration %s or tasks %s", argv[3], argv[4]);
	for (int i = 0; i < FILE_SIZE; i++)
		pattern[i] = (char)(i * 7 + 1);
	if (mkdir(dir, 0755) && errno != EEXIST)
		die("mkdir %s", dir);

	if (tasks == 1) {
		// No fork for one task: the common case measures exactly the loop.
		struct result res;
		task(dir, 0, no_wait, dur, &res);
		printf("ops %lld ns %lld\n", res.ops, res.ns);
		return 0;
	}

	struct result *res = mmap(NULL, tasks * sizeof *res, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		die("mmap");
	if (pipe(go_pipe) || pipe(ready_pipe))
		die("pipe");
	pid_t *pids = calloc(tasks, sizeof *pids);
	if (!pids)
		die("calloc");
	for (int i = 0; i < tasks; i++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			close(go_pipe[1]);
			close(ready_pipe[0]);
			task(dir, i, barrier, dur, &res[i]);
			fflush(stderr);
			_exit(0);
		}
		pids[i] = pid;
	}
	close(go_pipe[0]);
	close(ready_pipe[1]);
	for (int i = 0; i < tasks; i++) {
		char c;
		ssize_t r = read(ready_pipe[0], &c, 1);
		if (r != 1) {
			// A task died during setup; its own message says why.
			if (r == 0)
				errno = 0;
			die("a task failed before starting");
		}
	}
	close(go_pipe[1]);
	int failed = 0;
	for (int i = 0; i < tasks; i++) {
		int status;
		if (waitpid(pids[i], &status, 0) < 0)
			die("waitpid");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed = 1;
	}
	if (failed) {
		errno = 0;
		die("a task failed");
	}
	long long ops = 0, ns = 0;
	for (int i = 0; i < tasks; i++) {
		ops += res[i].ops;
		if (res[i].ns > ns)
			ns = res[i].ns;
	}
	printf("ops %lld ns %lld\n", ops, ns);
	return 0;
}
