/* Heavy and hostile guests, one per mode (argv[1]), working in argv[2]. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;

/* threads: 256 threads each open/write/close/unlink their own files. */
static void *worker(void *arg) {
	long id = (long)arg;
	char p[PATH_MAX], buf[64];
	for (int i = 0; i < 20; i++) {
		snprintf(p, sizeof p, "%s/t%ld-%d", dir, id, i);
		int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0600);
		if (fd < 0) { perror("open"); exit(1); }
		int n = snprintf(buf, sizeof buf, "thread %ld round %d\n", id, i);
		if (write(fd, buf, n) != n) { perror("write"); exit(1); }
		struct stat st;
		if (fstat(fd, &st) != 0 || st.st_size != n) { fprintf(stderr, "fstat size\n"); exit(1); }
		if (close(fd) != 0) { perror("close"); exit(1); }
		if (unlink(p) != 0) { perror("unlink"); exit(1); }
	}
	return NULL;
}

static int threads(void) {
	pthread_t th[256];
	for (long i = 0; i < 256; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)i) != 0) { perror("pthread_create"); return 1; }
	for (int i = 0; i < 256; i++) pthread_join(th[i], NULL);
	printf("threads ok\n");
	return 0;
}

/* manyfiles: 100,000 files in one directory, listed, then removed. */
static int manyfiles(void) {
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/many", dir);
	if (mkdir(p, 0755) != 0) { perror("mkdir"); return 1; }
	for (int i = 0; i < 100000; i++) {
		snprintf(p, sizeof p, "%s/many/f%06d", dir, i);
		int fd = open(p, O_CREAT | O_WRONLY, 0644);
		if (fd < 0) { perror("open"); return 1; }
		close(fd);
	}
	snprintf(p, sizeof p, "%s/many", dir);
	struct stat st;
	stat(p, &st);
	printf("size %lld nlink %ld\n", (long long)st.st_size, (long)st.st_nlink);
	for (int i = 0; i < 100000; i++) {
		snprintf(p, sizeof p, "%s/many/f%06d", dir, i);
		if (unlink(p) != 0) { perror("unlink"); return 1; }
	}
	snprintf(p, sizeof p, "%s/many", dir);
	if (rmdir(p) != 0) { perror("rmdir"); return 1; }
	printf("manyfiles ok\n");
	return 0;
}

/* deep: a tree as deep as PATH_MAX allows, by absolute paths, until
 * ENAMETOOLONG; then removed. */
static int deep(void) {
	char p[PATH_MAX + 16];
	int n = snprintf(p, sizeof p, "%s", dir), depth = 0;
	for (;;) {
		if (n + 11 >= (int)sizeof p) break;
		n += snprintf(p + n, sizeof p - n, "/ddddddddd");
		if (mkdir(p, 0755) != 0) {
			printf("stops with %s at PATH_MAX: %s\n", strerrorname_np(errno), n >= PATH_MAX ? "yes" : "no");
			p[n - 10] = 0;
			n -= 10;
			break;
		}
		depth++;
	}
	while (depth-- > 0) {
		if (rmdir(p) != 0) { perror("rmdir"); return 1; }
		n -= 10;
		p[n] = 0;
	}
	printf("deep ok\n");
	return 0;
}

/* loops: symlink loops and chains give ELOOP. */
static int loops(void) {
	char a[PATH_MAX], b[PATH_MAX];
	snprintf(a, sizeof a, "%s/la", dir);
	snprintf(b, sizeof b, "%s/lb", dir);
	symlink(b, a);
	symlink(a, b);
	int fd = open(a, O_RDONLY);
	printf("loop open %d %s\n", fd, strerrorname_np(errno));
	struct stat st;
	printf("loop stat %d %s\n", stat(a, &st), strerrorname_np(errno));
	printf("loop lstat %d\n", lstat(a, &st));
	unlink(a);
	unlink(b);
	printf("loops ok\n");
	return 0;
}

/* race: a thread rewrites the path buffer while others open it. */
static char racebuf[PATH_MAX];
static volatile int stop;
static void *flipper(void *arg) {
	(void)arg;
	char x[PATH_MAX], y[PATH_MAX];
	snprintf(x, sizeof x, "%s/race-a", dir);
	memset(y, 'z', 300);
	y[300] = 0;
	while (!stop) {
		strcpy(racebuf, x);
		strcpy(racebuf, y);
	}
	return NULL;
}
static int race(void) {
	char x[PATH_MAX];
	snprintf(x, sizeof x, "%s/race-a", dir);
	close(open(x, O_CREAT | O_WRONLY, 0644));
	strcpy(racebuf, x);
	pthread_t th;
	pthread_create(&th, NULL, flipper, NULL);
	int ok = 0, bad = 0;
	for (int i = 0; i < 20000; i++) {
		int fd = open(racebuf, O_RDONLY);
		if (fd >= 0) { ok++; close(fd); } else if (errno == ENAMETOOLONG || errno == ENOENT) bad++;
		else { perror("race open"); return 1; }
	}
	stop = 1;
	pthread_join(th, NULL);
	unlink(x);
	printf("race ok (%s)\n", ok + bad == 20000 ? "all answered" : "lost answers");
	return 0;
}

/* killed: children SIGKILLed while they loop on served calls. */
static int killed(void) {
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/k", dir);
	for (int round = 0; round < 20; round++) {
		pid_t pid = fork();
		if (pid == 0) {
			for (;;) {
				int fd = open(p, O_CREAT | O_RDWR, 0644);
				write(fd, "x", 1);
				close(fd);
			}
		}
		usleep(2000 + round * 500);
		kill(pid, SIGKILL);
		int st;
		waitpid(pid, &st, 0);
		if (!WIFSIGNALED(st)) { fprintf(stderr, "child not killed\n"); return 1; }
	}
	unlink(p);
	printf("killed ok\n");
	return 0;
}

/* forkstorm: fork until RLIMIT_NPROC stops it (EAGAIN); every child
 * waits for the parent's signal through a pipe, then all are reaped. */
static int forkstorm(void) {
	int p[2];
	if (pipe(p) != 0) { perror("pipe"); return 1; }
	int n = 0, err = 0;
	for (;;) {
		pid_t pid = fork();
		if (pid == 0) {
			char c;
			close(p[1]);
			read(p[0], &c, 1);
			_exit(0);
		}
		if (pid < 0) { err = errno; break; }
		if (++n > 10000) break;
	}
	close(p[1]);
	int reaped = 0;
	while (wait(NULL) > 0) reaped++;
	printf("forkstorm stopped by %s, all reaped: %s\n", strerrorname_np(err), reaped == n ? "yes" : "no");
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 3) return 2;
	dir = argv[2];
	if (!strcmp(argv[1], "threads")) return threads();
	if (!strcmp(argv[1], "manyfiles")) return manyfiles();
	if (!strcmp(argv[1], "deep")) return deep();
	if (!strcmp(argv[1], "loops")) return loops();
	if (!strcmp(argv[1], "race")) return race();
	if (!strcmp(argv[1], "killed")) return killed();
	if (!strcmp(argv[1], "forkstorm")) return forkstorm();
	return 2;
}
