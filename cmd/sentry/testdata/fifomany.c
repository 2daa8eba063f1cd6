/* fifomany: more guest processes wait in FIFO opens at once than the
 * sentry gives threads to (maxFIFOThreads): n readers of n FIFOs, then n
 * writers of n FIFOs, then n/2 readers and n/2 writers of one FIFO. Each
 * process holds its wait for a while before its other end comes; every
 * byte must arrive, as natively. Usage: fifomany DIR N HOLDMS */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[512];
static int hold;

static void path(char *buf, const char *kind, int i) {
	snprintf(buf, 600, "%s/%s%d", dir, kind, i);
}

static void pause_ms(int ms) {
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* child: open p with flags and read or write one byte. */
static void child(const char *p, int flags, char c) {
	int fd = open(p, flags);
	if (fd < 0) { perror("child open"); _exit(2); }
	if (flags == O_WRONLY) {
		if (write(fd, &c, 1) != 1) _exit(3);
	} else {
		char got;
		if (read(fd, &got, 1) != 1) _exit(4);
		if (c && got != c) _exit(5);
	}
	_exit(0);
}

static int reap(const char *what) {
	int st, bad = 0;
	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
	printf("%s: %d failed\n", what, bad);
	return bad;
}

int main(int argc, char **argv) {
	if (argc != 4) { fprintf(stderr, "usage: fifomany DIR N HOLDMS\n"); return 2; }
	snprintf(dir, sizeof dir, "%s", argv[1]);
	int n = atoi(argv[2]);
	hold = atoi(argv[3]);
	char p[600];
	setvbuf(stdout, NULL, _IONBF, 0);
	int bad = 0;

	/* n readers wait; the parent writes to each. */
	for (int i = 0; i < n; i++) {
		path(p, "r", i);
		if (mkfifo(p, 0600)) { perror("mkfifo"); return 1; }
		if (fork() == 0) child(p, O_RDONLY, 'a' + i % 26);
	}
	pause_ms(hold);
	for (int i = 0; i < n; i++) {
		path(p, "r", i);
		int fd = open(p, O_WRONLY);
		char c = 'a' + i % 26;
		if (fd < 0 || write(fd, &c, 1) != 1) { perror("writer"); return 1; }
		close(fd);
	}
	bad += reap("readers");

	/* n writers wait; the parent reads from each. */
	for (int i = 0; i < n; i++) {
		path(p, "w", i);
		if (mkfifo(p, 0600)) { perror("mkfifo"); return 1; }
		if (fork() == 0) child(p, O_WRONLY, 'a' + i % 26);
	}
	pause_ms(hold);
	for (int i = 0; i < n; i++) {
		path(p, "w", i);
		int fd = open(p, O_RDONLY);
		char c;
		if (fd < 0 || read(fd, &c, 1) != 1 || c != 'a' + i % 26) { perror("reader"); return 1; }
		close(fd);
	}
	bad += reap("writers");

	/* n/2 readers of one FIFO wait; the parent's writer releases them
	 * and keeps them from an early end of file while n/2 writers come. */
	snprintf(p, sizeof p, "%s/one", dir);
	if (mkfifo(p, 0600)) { perror("mkfifo"); return 1; }
	for (int i = 0; i < n / 2; i++)
		if (fork() == 0) child(p, O_RDONLY, 0);
	pause_ms(hold);
	int keep = open(p, O_WRONLY);
	if (keep < 0) { perror("keep writer"); return 1; }
	for (int i = 0; i < n / 2; i++)
		if (fork() == 0) child(p, O_WRONLY, 'x');
	bad += reap("one fifo, readers first");
	close(keep);

	/* n/2 writers of one FIFO wait; the parent's reader, opened without
	 * blocking, releases them and takes their bytes. */
	snprintf(p, sizeof p, "%s/two", dir);
	if (mkfifo(p, 0600)) { perror("mkfifo"); return 1; }
	for (int i = 0; i < n / 2; i++)
		if (fork() == 0) child(p, O_WRONLY, 'y');
	pause_ms(hold);
	keep = open(p, O_RDONLY | O_NONBLOCK);
	if (keep < 0) { perror("keep reader"); return 1; }
	bad += reap("one fifo, writers first");
	char buf[4096];
	ssize_t got = read(keep, buf, sizeof buf);
	printf("bytes %zd%s\n", got, got > 0 && !memchr(buf, 'x', got) ? " all y" : "");
	close(keep);
	return bad != 0;
}
