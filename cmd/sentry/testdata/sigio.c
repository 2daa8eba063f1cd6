/* File calls under a storm of signals (issue #13): a 200 us SIGALRM
 * itimer interrupts large writes, O_EXCL creates, stats and closes on the
 * tmpfs. A tmpfs never makes such a call fail with EINTR and never applies
 * it twice: the bytes written must be the bytes reported, every create
 * reported done must exist once, every one reported failed must not exist.
 * Usage: sigio DIR restart|norestart. Prints "ok" or what went wrong. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static volatile long ticks;
static void tick(int s) { (void)s; ticks++; }

int main(int argc, char **argv) {
	if (argc != 3) { fprintf(stderr, "usage: sigio DIR restart|norestart\n"); return 2; }
	const char *dir = argv[1];
	struct sigaction sa = {0};
	sa.sa_handler = tick;
	if (strcmp(argv[2], "restart") == 0) sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 200}, {0, 200}};
	setitimer(ITIMER_REAL, &it, NULL);

	char path[256];
	int eintr = 0, bad = 0;
	/* Large writes. */
	snprintf(path, sizeof path, "%s/big", dir);
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0) { perror("open big"); return 1; }
	static char buf[1 << 20];
	memset(buf, 'x', sizeof buf);
	long long reported = 0;
	for (int i = 0; i < 200; i++) {
		ssize_t n = write(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR) eintr++;
		else if (n < 0) { perror("write"); return 1; }
		else reported += n;
	}
	struct stat st;
	fstat(fd, &st);
	if (st.st_size != reported) {
		printf("size %lld, reported %lld\n", (long long)st.st_size, reported);
		bad++;
	}
	close(fd);
	unlink(path);
	/* O_EXCL creates, stats, closes. */
	int made = 0;
	for (int i = 0; i < 2000; i++) {
		snprintf(path, sizeof path, "%s/c%d", dir, i);
		int c = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (c < 0) {
			if (errno == EINTR) eintr++;
			else { printf("create %d: %s\n", i, strerror(errno)); bad++; }
			if (access(path, F_OK) == 0) { printf("create %d failed but the file exists\n", i); bad++; }
			continue;
		}
		made++;
		if (fstat(c, &st) != 0) { if (errno == EINTR) eintr++; else bad++; }
		if (stat(path, &st) != 0) { if (errno == EINTR) eintr++; else bad++; }
		if (close(c) != 0) { if (errno == EINTR) eintr++; else bad++; }
	}
	for (int i = 0; i < 2000; i++) {
		snprintf(path, sizeof path, "%s/c%d", dir, i);
		if (unlink(path) == 0) made--;
	}
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	if (made != 0) { printf("%d creates reported and removed differ\n", made); bad++; }
	if (eintr) { printf("%d calls failed with EINTR\n", eintr); bad++; }
	if (ticks < 100) { printf("only %ld signals\n", ticks); bad++; }
	if (!bad) printf("ok\n");
	return bad != 0;
}
