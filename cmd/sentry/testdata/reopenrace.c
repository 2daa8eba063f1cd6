// reopenrace: one thread keeps moving number S between a tmpfs file, a
// host file and a pipe (dup2) while another reopens it by its magic link,
// open("/proc/self/fd/S"), and checks what it got: the tmpfs file as fstat
// of the original shows it (device and inode), the host file, or a pipe.
// A sentry that let the kernel follow the link after looking at S itself
// gave, when S had become the tmpfs file meanwhile, a fresh open of its
// placeholder: a descriptor of the store, the store's device and inode.
// Prints "mismatches N" (the opens made go to stderr); usage: reopenrace DIR.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define S 50

static int file, host, pipefd[2], stop;

static void *mover(void *arg) {
	int from[3] = {file, host, pipefd[0]};
	for (int i = 0; !__atomic_load_n(&stop, __ATOMIC_SEQ_CST); i++)
		dup2(from[i % 3], S);
	return 0;
}

int main(int argc, char **argv) {
	char p[4096];
	snprintf(p, sizeof p, "%s/reopenrace", argv[1]);
	struct stat fst, hst;
	file = open(p, O_CREAT | O_RDWR, 0644);
	host = open("/proc/version", O_RDONLY); // any host file with a path
	if (file < 0 || host < 0 || pipe(pipefd) || fstat(file, &fst) || fstat(host, &hst)) {
		perror("setup");
		return 1;
	}
	pthread_t m;
	pthread_create(&m, 0, mover, 0);
	int opened = 0, bad = 0;
	snprintf(p, sizeof p, "/proc/self/fd/%d", S);
	for (int i = 0; i < 5000; i++) {
		int d = open(p, O_RDONLY | O_NONBLOCK);
		if (d < 0)
			continue; // S between files, or a store file refused
		opened++;
		struct stat st;
		int ok = fstat(d, &st) == 0 &&
			 (S_ISFIFO(st.st_mode) || (st.st_dev == fst.st_dev && st.st_ino == fst.st_ino) ||
			  (st.st_dev == hst.st_dev && st.st_ino == hst.st_ino));
		if (!ok && ++bad <= 5)
			fprintf(stderr, "fd %d: mode=%o dev=%lu ino=%lu\n", d, st.st_mode, (unsigned long)st.st_dev,
				(unsigned long)st.st_ino);
		close(d);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(m, 0);
	fprintf(stderr, "opened %d\n", opened);
	printf("mismatches %d\n", bad);
	return 0;
}
