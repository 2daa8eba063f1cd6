// installcall: a guest that makes the sentry's own install call
// (platform.SysInstallFD) itself, alone ("single": it must get ENOSYS, not
// hang) or while other threads open tmpfs files ("race": every guest
// install call gets ENOSYS, every open gets its own file).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SYS_INSTALL 0x5e47
#define OPENS 1500

static const char *dir;
static atomic_int done, bad;

static void *opener(void *arg) {
	long id = (long)arg;
	char path[256], want[64], got[64];
	for (int i = 0; i < OPENS; i++) {
		snprintf(path, sizeof path, "%s/ic.%ld.%d", dir, id, i % 50);
		int n = snprintf(want, sizeof want, "%ld %d", id, i);
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, want, n) != n || pread(fd, got, sizeof got, 0) != n || memcmp(got, want, n)) {
			fprintf(stderr, "open %s: fd %d: %s\n", path, fd, strerror(errno));
			atomic_fetch_add(&bad, 1);
		}
		if (fd >= 0)
			close(fd);
	}
	atomic_fetch_add(&done, 1);
	return NULL;
}

static void *installer(void *arg) {
	(void)arg;
	long calls = 0;
	while (atomic_load(&done) < 2) {
		long r = syscall(SYS_INSTALL, 3, 0, 0, 0, 0, 0);
		if (r != -1 || errno != ENOSYS) {
			fprintf(stderr, "install call: %ld (%s)\n", r, strerror(errno));
			atomic_fetch_add(&bad, 1);
		}
		calls++;
	}
	return calls ? NULL : (void *)1;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: installcall single|race DIR\n");
		return 2;
	}
	dir = argv[2];
	if (!strcmp(argv[1], "single")) {
		long r = syscall(SYS_INSTALL, 0, 0, 0, 0, 0, 0);
		printf("%ld %s\n", r, r == -1 ? strerrorname_np(errno) : "");
		return 0;
	}
	pthread_t t[3];
	pthread_create(&t[0], NULL, opener, (void *)0L);
	pthread_create(&t[1], NULL, opener, (void *)1L);
	pthread_create(&t[2], NULL, installer, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf(atomic_load(&bad) ? "bad %d\n" : "ok\n", atomic_load(&bad));
	return 0;
}
