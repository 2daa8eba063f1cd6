// duprace: threads race dup2, dup3, dup, fcntl(F_DUPFD) and close onto four
// shared numbers, with a tmpfs file and a pipe as sources. Each thread also moves
// a number of its own between its file and the pipe, and checks it at once:
// fstat (the sentry's answer for a virtual fd) must see the pipe exactly
// where the kernel has one (lseek, which runs on the host untrapped, fails
// with ESPIPE; F_GETFD, untrapped too, tells an open number), and the
// thread's own file (by inode) otherwise; so must the number an F_DUPFD of
// its file returns (on unotify the host picks it, and the sentry learns it
// at the next call). (/proc/self/fd would not do: the
// sentry answers readlink there for its own files.) At the end the shared numbers are checked the same way.
// Prints "mismatches N"; usage: duprace DIR.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <string.h>
#include <sys/stat.h>

static int pipefd[2];
static const char *dir;
static int bad;

// check compares what the kernel holds at fd with what fstat says there;
// want is the file expected when it is not the pipe (NULL: any file), by
// device and inode (a placeholder the sentry does not know shows its
// backing's, which the inode alone may not tell apart).
static void check(int fd, const struct stat *want, const char *when) {
	int kopen = fcntl(fd, F_GETFD) >= 0;
	int kpipe = kopen && lseek(fd, 0, SEEK_CUR) < 0 && errno == ESPIPE;
	struct stat st;
	int r = fstat(fd, &st);
	int spipe = r == 0 && S_ISFIFO(st.st_mode);
	int ok = kpipe == spipe && kopen == (r == 0) &&
		 (r != 0 || spipe || !want || (st.st_ino == want->st_ino && st.st_dev == want->st_dev));
	if (!ok) {
		__atomic_add_fetch(&bad, 1, __ATOMIC_SEQ_CST);
		fprintf(stderr, "%s fd %d: kernel open=%d pipe=%d, fstat r=%d mode=%o dev=%lu ino=%lu want %lu %lu\n",
			when, fd, kopen, kpipe, r, st.st_mode, (unsigned long)st.st_dev, (unsigned long)st.st_ino,
			want ? (unsigned long)want->st_dev : 0, want ? (unsigned long)want->st_ino : 0);
	}
}

static void *worker(void *arg) {
	long id = (long)arg;
	char p[256];
	snprintf(p, sizeof p, "%s/dr%ld", dir, id);
	struct stat own;
	for (int i = 0; i < 2000; i++) {
		int fd = open(p, O_CREAT | O_RDWR, 0644);
		if (i == 0)
			fstat(fd, &own);
		int shared = 50 + (i + id) % 4, mine = 60 + id;
		switch (i % 5) {
		case 0: dup2(fd, shared); break;
		case 1: dup2(pipefd[1], shared); break;
		case 2: dup3(fd, shared, O_CLOEXEC); break;
		case 3: close(shared); break;
		case 4: { int d = dup(fd); if (d >= 0) close(d); } break;
		}
		int e = fcntl(fd, i % 3 ? F_DUPFD : F_DUPFD_CLOEXEC, 70 + 4 * id);
		check(e, &own, "dupfd");
		close(e);
		if (i % 2)
			dup2(pipefd[1], mine);
		else
			dup3(fd, mine, O_CLOEXEC);
		check(mine, &own, "own");
		close(fd);
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 2)
		return 2;
	dir = argv[1];
	if (pipe(pipefd))
		return 2;
	pthread_t t[4];
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int fd = 50; fd < 54; fd++)
		check(fd, NULL, "shared");
	printf("mismatches %d\n", bad);
	return bad != 0;
}
