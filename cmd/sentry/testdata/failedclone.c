/* A clone that fails (EINVAL: CLONE_SIGHAND without CLONE_VM) made the
 * sentry keep the table as it was at the clone's entry until the
 * thread's next clone: a file closed after it stayed open in the sentry,
 * and with it what Linux ends at the last close (here an flock another
 * process then waits for). With THREAD, the clone fails in a second
 * thread, which then sleeps: no next call of its own ends what it left.
 * Prints "ok" when the lock is free once the holder closed its file.
 * Usage: failedclone DIR [THREAD]. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int failed;

static void *fail_and_sleep(void *arg) {
	(void)arg;
	failed = syscall(SYS_clone, CLONE_SIGHAND, 0, 0, 0, 0) == -1 && errno == EINVAL ? 1 : -1;
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	char path[4096];
	snprintf(path, sizeof path, "%s/failedclone", argv[1]);
	int go[2];
	if (pipe(go) != 0)
		return 1;
	/* The checker exists before the failed clone: another fork after it
	 * would end the clone's record on its own. */
	pid_t p = fork();
	if (p == 0) {
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		int f = open(path, O_RDWR);
		_exit(f >= 0 && flock(f, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
	}
	/* Opened after the fork: the checker shares nothing of it. */
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (fd < 0 || flock(fd, LOCK_EX) != 0)
		return 1;
	if (argc > 2) {
		pthread_t th;
		pthread_create(&th, NULL, fail_and_sleep, NULL);
		while (!failed)
			usleep(1000);
	} else
		failed = syscall(SYS_clone, CLONE_SIGHAND, 0, 0, 0, 0) == -1 && errno == EINVAL ? 1 : -1;
	if (failed != 1) {
		printf("clone did not fail with EINVAL\n");
		return 1;
	}
	close(fd);
	if (write(go[1], "x", 1) != 1)
		return 1;
	int st;
	waitpid(p, &st, 0);
	unlink(path);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("the closed file's lock is still held\n");
		return 1;
	}
	printf("ok\n");
	return 0;
}
