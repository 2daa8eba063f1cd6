/* Threads that open tmpfs files while other threads fork and exec: each
 * child must see exactly the descriptors the kernel copied for it, so its
 * fstat of an inherited descriptor names the file the parent opened, and
 * its exec of a tmpfs binary runs (issue #13: the sentry copied the
 * table at the clone event, not when the kernel did). Prints the number
 * of failures; 0 is right. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 8
#define ROUNDS 100

static const char *bin;
static int failures;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, int i) {
	pthread_mutex_lock(&mu);
	failures++;
	fprintf(stderr, "%s (round %d)\n", what, i);
	pthread_mutex_unlock(&mu);
}

static void *worker(void *arg) {
	long id = (long)arg;
	char path[64];
	for (int i = 0; i < ROUNDS; i++) {
		snprintf(path, sizeof path, "/tmp/f%ld-%d", id, i);
		int fd = open(path, O_CREAT | O_RDWR, 0644);
		if (fd < 0) { fail("open", i); continue; }
		struct stat want;
		fstat(fd, &want);
		pid_t pid;
		if (i % 2 == 0) {
			pid = fork();
			if (pid == 0) {
				/* The child's own copy of fd is the file. */
				struct stat got;
				if (fstat(fd, &got) != 0 || got.st_ino != want.st_ino || got.st_dev != want.st_dev)
					_exit(2);
				_exit(0);
			}
		} else {
			pid = vfork();
			if (pid == 0) {
				execl(bin, bin, (char *)NULL);
				_exit(127);
			}
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail(i % 2 == 0 ? "fork child saw another file" : "vfork+exec failed", i);
		close(fd);
		unlink(path);
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 2) { fprintf(stderr, "usage: forkrace BINARY\n"); return 2; }
	bin = argv[1];
	pthread_t th[THREADS];
	for (long i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
	printf("%d\n", failures);
	return 0;
}
