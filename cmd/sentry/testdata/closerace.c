// closerace: in each of 3,000 rounds two threads race a close of number
// N (close, or close_range(N, N, 0)) against dup2(SRC, N), SRC a tmpfs
// file or a pipe by turns, N holding the file before. After both, what
// fstat says of N must be what the kernel holds there (F_GETFD and lseek,
// untrapped, ask the kernel): nothing, the pipe, or the file by device
// and inode. The sentry decides a close before the kernel runs it: a dup2
// landing in between was closed by the kernel's close and the table kept
// its entry; and a table that dropped every entry in close_range's range
// at its exit lost a placeholder a racing dup2 had put back, leaving the
// guest a descriptor of the store. Prints "mismatches N"; usage:
// closerace DIR close|close_range.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define N 50
#define ROUNDS 3000

static int file, pipefd[2], use_range;
static pthread_barrier_t start, done;

static void *closer(void *arg) {
	for (int i = 0; i < ROUNDS; i++) {
		pthread_barrier_wait(&start);
		if (use_range)
			syscall(SYS_close_range, N, N, 0);
		else
			close(N);
		pthread_barrier_wait(&done);
	}
	return 0;
}

static void *duper(void *arg) {
	for (int i = 0; i < ROUNDS; i++) {
		pthread_barrier_wait(&start);
		dup2(i % 2 ? file : pipefd[1], N);
		pthread_barrier_wait(&done);
	}
	return 0;
}

int main(int argc, char **argv) {
	char p[4096];
	if (argc != 3) {
		fprintf(stderr, "usage: closerace DIR close|close_range\n");
		return 2;
	}
	use_range = !strcmp(argv[2], "close_range");
	snprintf(p, sizeof p, "%s/closerace", argv[1]);
	struct stat fst;
	file = open(p, O_CREAT | O_RDWR, 0644);
	if (file < 0 || pipe(pipefd) || fstat(file, &fst)) {
		perror("setup");
		return 1;
	}
	pthread_barrier_init(&start, 0, 3);
	pthread_barrier_init(&done, 0, 3);
	pthread_t c, d;
	pthread_create(&c, 0, closer, 0);
	pthread_create(&d, 0, duper, 0);
	int bad = 0;
	for (int i = 0; i < ROUNDS; i++) {
		dup2(file, N);
		pthread_barrier_wait(&start);
		pthread_barrier_wait(&done);
		int kopen = fcntl(N, F_GETFD) >= 0;
		int kpipe = kopen && lseek(N, 0, SEEK_CUR) < 0 && errno == ESPIPE;
		struct stat st;
		int r = fstat(N, &st);
		int ok = kopen == (r == 0) &&
			 (!kopen || (kpipe ? S_ISFIFO(st.st_mode) : st.st_dev == fst.st_dev && st.st_ino == fst.st_ino));
		if (!ok && ++bad <= 5)
			fprintf(stderr, "round %d: kernel open=%d pipe=%d, fstat r=%d mode=%o dev=%lu ino=%lu\n", i, kopen, kpipe, r,
				st.st_mode, (unsigned long)st.st_dev, (unsigned long)st.st_ino);
	}
	pthread_join(c, 0);
	pthread_join(d, 0);
	printf("mismatches %d\n", bad);
	return 0;
}
