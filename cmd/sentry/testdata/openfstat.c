/* 10,000 open+close of a /tmp file and 10,000 glibc fstat() calls on it
 * (glibc issues newfstatat(fd, "", buf, AT_EMPTY_PATH)), printing what the
 * guest saw so two runs can be compared. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
	const char *path = argc > 1 ? argv[1] : "/tmp/openfstat";
	int n = 10000;
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0640);
	if (fd < 0) { perror("create"); return 1; }
	if (write(fd, "0123456789", 10) != 10) { perror("write"); return 1; }
	close(fd);
	long fdsum = 0;
	for (int i = 0; i < n; i++) {
		int f = open(path, O_RDONLY);
		if (f < 0) { perror("open"); return 1; }
		fdsum += f;
		if (close(f) != 0) { perror("close"); return 1; }
	}
	fd = open(path, O_RDONLY);
	long long sizes = 0, modes = 0;
	for (int i = 0; i < n; i++) {
		struct stat st;
		if (fstat(fd, &st) != 0) { perror("fstat"); return 1; }
		sizes += st.st_size;
		modes += st.st_mode;
	}
	close(fd);
	printf("fdsum=%ld sizes=%lld modes=%lld\n", fdsum, sizes, modes);
	return 0;
}
