/* 20,000 tmpfs files, each mapped shared and its descriptor closed, then
 * one more open: a mapping must hold nothing of the sentry's (issue #13:
 * one sentry descriptor per mapped file ran the sentry out of descriptors
 * and the guest's opens then failed with EMFILE). Prints "ok" and the
 * byte a mapping wrote, read back through read(2). */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define N 20000

static char *maps[N];

int main(int argc, char **argv) {
	if (argc != 2) return 2;
	char path[4096];
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof path, "%s/f%d", argv[1], i);
		int fd = open(path, O_CREAT | O_RDWR, 0644);
		if (fd < 0) { perror(path); return 1; }
		if (write(fd, "x", 1) != 1) { perror("write"); return 1; }
		maps[i] = mmap(NULL, 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (maps[i] == MAP_FAILED) { perror("mmap"); return 1; }
		close(fd);
	}
	snprintf(path, sizeof path, "%s/last", argv[1]);
	int fd = open(path, O_CREAT | O_RDWR, 0644);
	if (fd < 0) { perror(path); return 1; }
	maps[12345][0] = 'y';
	snprintf(path, sizeof path, "%s/f12345", argv[1]);
	int r = open(path, O_RDONLY);
	char c = 0;
	if (r < 0 || read(r, &c, 1) != 1) { perror("read back"); return 1; }
	printf("ok %c\n", c);
	return 0;
}
