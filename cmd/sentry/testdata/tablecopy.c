/* Copies of a shared descriptor table the kernel makes inside a call,
 * while other threads open and close: unshare(CLONE_FILES) by a thread,
 * and exec by a process that shares its parent's table
 * (clone(CLONE_FILES)): the kernel copies the table at some moment of the
 * call, and the sentry's table for the task must be that copy (the
 * sentry copied its own at the call's exit instead: entries closed
 * meanwhile were kept, files opened meanwhile were placeholders of the
 * store it did not know). After each copy every descriptor is checked:
 * whether the kernel holds it (fcntl F_GETFD and pread, untrapped) against
 * fstat, which the sentry serves. Prints "unshare N exec N": the
 * mismatches of each. Usage: tablecopy DIR ROUNDS, or tablecopy check DIR
 * (the exec'd checker: exits with its mismatches). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NFILES 8
#define MAXFD 64

static char paths[NFILES][4096];
static ino_t inos[NFILES];
static dev_t dev;
static volatile int stop;

static void name(const char *dir) {
	for (int i = 0; i < NFILES; i++)
		snprintf(paths[i], sizeof paths[i], "%s/tc%d", dir, i);
}

/* Mismatches between the kernel's table and the sentry's answers, fds 3
 * and up; the file's first byte is its index. */
static int check(void) {
	int bad = 0;
	for (int fd = 3; fd < MAXFD; fd++) {
		struct stat st;
		int kernel = fcntl(fd, F_GETFD) >= 0, served = fstat(fd, &st) == 0;
		unsigned char b;
		if (!kernel) {
			bad += served;
			continue;
		}
		if (pread(fd, &b, 1, 0) != 1 || b >= NFILES)
			continue; /* not one of ours (an inherited descriptor) */
		bad += !served || st.st_ino != inos[b] || st.st_dev != dev;
	}
	return bad;
}

static void *opener(void *arg) {
	unsigned seed = (unsigned)(long)arg;
	int mine[8], n = 0;
	while (!stop) {
		/* Not close-on-exec: an exec's copy keeps them. */
		int fd = open(paths[rand_r(&seed) % NFILES], O_RDONLY);
		if (fd < 0)
			continue;
		mine[n++] = fd;
		if (n == 8) {
			for (int j = 0; j < 4; j++)
				close(mine[j]);
			memmove(mine, mine + 4, 4 * sizeof mine[0]);
			n = 4;
		}
	}
	for (int j = 0; j < n; j++)
		close(mine[j]);
	return NULL;
}

static long unshare_bad;
static char initial[MAXFD];

static void *unsharer(void *arg) {
	for (volatile long s = 0; s < (long)arg; s++)
		;
	if (syscall(SYS_unshare, CLONE_FILES) != 0)
		return NULL;
	unshare_bad += check();
	/* The copies this thread's table holds now, its own. */
	for (int fd = 3; fd < MAXFD; fd++)
		if (!initial[fd])
			close(fd);
	return NULL;
}

static char *self, *dirarg;
static char stack[1 << 16];

static int execer(void *arg) {
	for (volatile long s = 0; s < (long)arg; s++)
		;
	char *av[] = {self, "check", dirarg, NULL};
	execv("/proc/self/exe", av);
	return 100;
}

static void stat_files(void) {
	for (int i = 0; i < NFILES; i++) {
		struct stat st;
		if (stat(paths[i], &st) == 0) {
			inos[i] = st.st_ino;
			dev = st.st_dev;
		}
	}
}

int main(int argc, char **argv) {
	if (argc == 3 && strcmp(argv[1], "check") == 0) {
		name(argv[2]);
		stat_files();
		return check();
	}
	if (argc < 3)
		return 2;
	self = argv[0], dirarg = argv[1];
	for (int fd = 3; fd < MAXFD; fd++)
		initial[fd] = fcntl(fd, F_GETFD) >= 0;
	int rounds = atoi(argv[2]);
	name(argv[1]);
	for (int i = 0; i < NFILES; i++) {
		int fd = open(paths[i], O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0644);
		unsigned char b = i;
		if (fd < 0 || write(fd, &b, 1) != 1)
			return 1;
		close(fd);
	}
	stat_files();
	pthread_t o[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&o[i], NULL, opener, (void *)(i + 1));
	long exec_bad = 0;
	for (int r = 0; r < rounds; r++) {
		pthread_t u;
		pthread_create(&u, NULL, unsharer, (void *)(long)(r * 37 % 5000));
		pthread_join(u, NULL);
		pid_t p = clone(execer, stack + sizeof stack, CLONE_FILES | SIGCHLD, (void *)(long)(r * 7919 % 50000));
		int st;
		if (p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st))
			exec_bad += WEXITSTATUS(st);
	}
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(o[i], NULL);
	for (int i = 0; i < NFILES; i++)
		unlink(paths[i]);
	printf("unshare %ld exec %ld\n", unshare_bad, exec_bad);
	return 0;
}
