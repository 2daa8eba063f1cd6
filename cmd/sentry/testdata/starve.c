/* A guest whose threads keep the tracer busy must not keep its oldest
 * thread from being served. Busy threads call fstat on a tmpfs file in a
 * loop (every call a stop on ptrace); meanwhile the main thread makes a
 * few hundred calls of its own, forks and reaps a child, creates threads
 * and execs itself once. Each of those is a stop of the main thread, the
 * oldest the tracer follows: wait4 reports stopped threads in the
 * tracer's list order, newest first, so a tracer that served one stop per
 * wait met a busy thread stopped again at every wait and never served the
 * main thread (thrx, a red-team probe, hung for minutes on ptrace). Prints,
 * for each image, how many busy calls completed while one of the main
 * thread's fstat calls waited (median and max; natively about 1, served
 * fairly a few times BUSY, starved thousands), then "done N" with the
 * number of main-thread calls, after the busy threads were told to stop.
 * With "linger" it prints "ready" once the busy threads run and stays
 * busy until killed. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUSY 6
#define CALLS 300

static atomic_int stop;
static atomic_long served;
static int fd;

static void *busy(void *arg) {
	struct stat st;
	while (!atomic_load(&stop)) {
		fstat(fd, &st);
		atomic_fetch_add(&served, 1);
	}
	return NULL;
}

static int cmp(const void *a, const void *b) {
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

static void *idle(void *arg) {
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: starve DIR [again|linger]\n");
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/starve.%d", argv[1], argc);
	fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	pthread_t t[BUSY];
	for (int i = 0; i < BUSY; i++)
		pthread_create(&t[i], NULL, busy, NULL);
	/* Wait until every busy thread runs. */
	while (atomic_load(&served) < 100 * BUSY)
		;
	if (argc > 2 && strcmp(argv[2], "linger") == 0) {
		/* Stay busy until killed: the sandbox's first process ends
		 * meanwhile, and the sentry must end this one with it. */
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	int n = 0;
	struct stat st;
	static long waited[CALLS];
	for (int i = 0; i < CALLS; i++, n++) {
		long before = atomic_load(&served);
		if (fstat(fd, &st) != 0) {
			perror("fstat");
			return 1;
		}
		waited[i] = atomic_load(&served) - before;
	}
	qsort(waited, CALLS, sizeof waited[0], cmp);
	printf("busy calls during one of main's: median %ld, max %ld\n", waited[CALLS / 2], waited[CALLS - 1]);
	for (int i = 0; i < 20; i++, n++) {
		pthread_t x;
		pthread_create(&x, NULL, idle, NULL);
		pthread_join(x, NULL);
	}
	for (int i = 0; i < 5; i++, n++) {
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		waitpid(c, NULL, 0);
	}
	if (argc == 2) {
		/* exec while the busy threads are stopped and running: the
		 * new image runs the same rounds once more, then ends. */
		close(fd);
		unlink(path);
		fflush(stdout);
		execl("/proc/self/exe", argv[0], argv[1], "again", (char *)NULL);
		perror("exec");
		return 1;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < BUSY; i++)
		pthread_join(t[i], NULL);
	close(fd);
	unlink(path);
	printf("done %d\n", n);
	return 0;
}
