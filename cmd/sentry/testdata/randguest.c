/* A guest that issues random trapped file syscalls with random arguments
 * on /tmp for a fixed time: bad fds, bad pointers, odd flags and lengths.
 * Paths stay under /tmp/r, so nothing outside the sandbox's tmpfs is
 * named. It prints how many calls it made and exits 0. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static char buf[65536];
static char longname[5000];

static const char *paths[] = {
	"/tmp/r/a", "/tmp/r/b", "/tmp/r/b/c", "/tmp/r/d/", "/tmp/r/l", "/tmp/r/../r/a",
	"/tmp/r", "/tmp/r/.", "/tmp/r/b/..", "", "a", "b/c", "../r/a",
};

static uintptr_t path(void) {
	switch (next() % 16) {
	case 0: return 0;
	case 1: return 8;
	case 2: return (uintptr_t)longname;
	case 3: return (uintptr_t)longname + 4000; /* 999-byte name */
	}
	return (uintptr_t)paths[next() % (sizeof paths / sizeof *paths)];
}
static long fd(void) {
	switch (next() % 8) {
	case 0: return -1;
	case 1: return AT_FDCWD;
	case 2: return 1000000;
	}
	return 3 + next() % 12;
}
static uintptr_t ptr(void) {
	switch (next() % 6) {
	case 0: return 0;
	case 1: return 8;
	case 2: return (uintptr_t)-4096;
	}
	return (uintptr_t)buf + next() % 1024;
}
static long flags(void) {
	static const long common[] = {O_RDONLY, O_WRONLY | O_CREAT, O_RDWR | O_CREAT | O_TRUNC, O_DIRECTORY,
		O_PATH, O_CREAT | O_EXCL | O_WRONLY, O_APPEND | O_WRONLY, O_NOFOLLOW, AT_EMPTY_PATH,
		AT_SYMLINK_NOFOLLOW, AT_REMOVEDIR, 0};
	if (next() % 4 == 0) return (long)(int32_t)next();
	return common[next() % (sizeof common / sizeof *common)];
}
static long len(void) { return next() % 4 == 0 ? (long)next() : (long)(next() % 8192); }

int main(int argc, char **argv) {
	int seconds = argc > 1 ? atoi(argv[1]) : 5;
	rng = argc > 2 ? strtoull(argv[2], 0, 0) : 88172645463325252ull;
	// Random fcntls place dnotify watches (F_NOTIFY) and pick their
	// signal (F_SETSIG), which then arrive as on Linux: a native run
	// would die of them too. The guest ignores every signal it can.
	for (int sig = 1; sig < 65; sig++)
		signal(sig, SIG_IGN);
	memset(longname, 'n', sizeof longname - 1);
	memcpy(longname, "/tmp/r/", 7);
	mkdir("/tmp/r", 0777);
	chdir("/tmp/r");
	time_t end = time(NULL) + seconds;
	long calls = 0;
	while (time(NULL) < end) {
		for (int i = 0; i < 200; i++, calls++) {
			switch (next() % 26) {
			case 0: syscall(SYS_openat, fd(), path(), flags(), 0644); break;
			case 1: { long f = fd(); if (f > 2) syscall(SYS_close, f); } break;
			case 2: syscall(SYS_read, fd(), ptr(), len()); break;
			case 3: syscall(SYS_write, fd(), ptr(), len()); break;
			case 4: syscall(SYS_pread64, fd(), ptr(), len(), len()); break;
			case 5: syscall(SYS_pwrite64, fd(), ptr(), len(), len()); break;
			case 6: syscall(SYS_fstat, fd(), ptr()); break;
			case 7: syscall(SYS_newfstatat, fd(), path(), ptr(), flags()); break;
			case 8: syscall(SYS_statx, fd(), path(), flags(), next(), ptr()); break;
			case 9: syscall(SYS_lseek, fd(), len(), next() % 6); break;
			case 10: syscall(SYS_ftruncate, fd(), len()); break;
			case 11: { long f = fd(); if (f > 2) syscall(SYS_dup2, fd(), f); } break;
			case 12: syscall(SYS_dup, fd()); break;
			case 13: syscall(SYS_fcntl, fd(), next() % 1040, len()); break;
			case 14: syscall(SYS_unlinkat, fd(), path(), flags() & AT_REMOVEDIR); break;
			case 15: syscall(SYS_mkdirat, fd(), path(), 0755); break;
			case 16: syscall(SYS_renameat2, fd(), path(), fd(), path(), next() % 3); break;
			case 17: syscall(SYS_linkat, fd(), path(), fd(), path(), flags()); break;
			case 18: syscall(SYS_symlinkat, path(), fd(), path()); break;
			case 19: syscall(SYS_readlinkat, fd(), path(), ptr(), len()); break;
			case 20: syscall(SYS_getdents64, fd(), ptr(), len()); break;
			case 21: syscall(SYS_fchmodat, fd(), path(), next() & 07777); break;
			case 22: syscall(SYS_utimensat, fd(), path(), ptr(), flags()); break;
			case 23: syscall(SYS_faccessat2, fd(), path(), next() % 8, flags()); break;
			case 24: syscall(SYS_truncate, path(), len()); break;
			case 25: { long lo = 3 + next() % 12; syscall(SYS_close_range, lo, lo + next() % 4, next() % 8); } break;
			}
		}
	}
	printf("calls %ld\n", calls > 0);
	return 0;
}
