// dupsource: one thread keeps moving shared number S between a tmpfs
// file, a tmpfs directory and a pipe (dup2); three others copy FROM S
// with dup, fcntl(F_DUPFD), dup2, dup3 and pidfd_getfd, and check each
// copy at once: the kernel's pipe where fstat says pipe (lseek, untrapped,
// asks the kernel), and otherwise the file or the directory by device and
// inode as fstat of the originals shows them. A sentry that followed the
// copy by what S held when it looked, not by what the kernel copied,
// gives a placeholder it does not know (the store's device and inode) or
// a virtual fd over the kernel's pipe. Prints "mismatches N"; usage:
// dupsource DIR.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define S 50

static int pipefd[2], file, dir, pidfd, stop, bad;
static struct stat fst, dst;

static void check(int fd, const char *how) {
	if (fd < 0)
		return; // S was closed or the table full: nothing copied
	int kpipe = lseek(fd, 0, SEEK_CUR) < 0 && errno == ESPIPE;
	struct stat st;
	int r = fstat(fd, &st);
	int spipe = r == 0 && S_ISFIFO(st.st_mode);
	int known = (st.st_dev == fst.st_dev && st.st_ino == fst.st_ino) ||
		    (st.st_dev == dst.st_dev && st.st_ino == dst.st_ino);
	if (r != 0 || kpipe != spipe || (!spipe && !known)) {
		if (__atomic_add_fetch(&bad, 1, __ATOMIC_SEQ_CST) <= 5)
			fprintf(stderr, "%s fd %d: kernel pipe=%d, fstat r=%d mode=%o dev=%lu ino=%lu\n", how, fd, kpipe, r,
				st.st_mode, (unsigned long)st.st_dev, (unsigned long)st.st_ino);
	}
}

static void *mover(void *arg) {
	int from[3] = {file, dir, pipefd[1]};
	for (int i = 0; !__atomic_load_n(&stop, __ATOMIC_SEQ_CST); i++)
		dup2(from[i % 3], S);
	return 0;
}

static void *copier(void *arg) {
	long id = (long)arg;
	for (int i = 0; i < 2500; i++) {
		int d = -1;
		switch (i % 5) {
		case 0: d = dup(S); check(d, "dup"); break;
		case 1: d = fcntl(S, F_DUPFD, 100 + 10 * id); check(d, "F_DUPFD"); break;
		case 2: d = dup2(S, 90 + id); check(d, "dup2"); break;
		case 3: d = dup3(S, 95 + id, O_CLOEXEC); check(d, "dup3"); break;
		case 4: d = syscall(SYS_pidfd_getfd, pidfd, S, 0); check(d, "pidfd_getfd"); break;
		}
		if (d >= 0)
			close(d);
	}
	return 0;
}

int main(int argc, char **argv) {
	char p[4096];
	snprintf(p, sizeof p, "%s/dupsource-file", argv[1]);
	file = open(p, O_CREAT | O_RDWR, 0644);
	snprintf(p, sizeof p, "%s/dupsource-dir", argv[1]);
	mkdir(p, 0755);
	dir = open(p, O_RDONLY | O_DIRECTORY);
	pidfd = syscall(SYS_pidfd_open, getpid(), 0);
	if (file < 0 || dir < 0 || pidfd < 0 || pipe(pipefd) || fstat(file, &fst) || fstat(dir, &dst)) {
		perror("setup");
		return 1;
	}
	pthread_t m, c[3];
	pthread_create(&m, 0, mover, 0);
	for (long i = 0; i < 3; i++)
		pthread_create(&c[i], 0, copier, (void *)i);
	for (int i = 0; i < 3; i++)
		pthread_join(c[i], 0);
	__atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(m, 0);
	printf("mismatches %d\n", bad);
	return 0;
}
