/* Threads busy with file calls while their process execs, one of them
 * exits alone, and a forked child of four threads is killed (SIGKILL) in
 * the middle of its calls; GENS generations, each the exec of the last.
 * On ptrace this hung the sandbox in a quarter of the runs (a leader's
 * stop starved behind its busy threads; the end waited for an orphan's
 * leader whose traced threads were unreaped zombies). Each worker uses a
 * directory of its own, so every call but those cut short by the exec or
 * the kill must succeed; one that fails otherwise ends the guest with
 * exit status 1. The last generation checks the files left and prints
 * "ok GENS". */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 4
#define GENS 12

static void fail(const char *what, const char *path) {
	fprintf(stderr, "%s %s: %s\n", what, path, strerror(errno));
	_exit(1);
}

static void *worker(void *arg) {
	long id = (long)arg;
	char dir[64], a[96], b[96], buf[4096];
	snprintf(dir, sizeof dir, "w%ld", id);
	for (int i = 0;; i++) {
		snprintf(a, sizeof a, "%s/a%d", dir, i % 16);
		snprintf(b, sizeof b, "%s/b%d", dir, i % 16);
		int fd = open(a, O_CREAT | O_RDWR | O_APPEND, 0644);
		if (fd < 0)
			fail("open", a);
		if (write(fd, "abc", 3) != 3)
			fail("write", a);
		int d = open(dir, O_RDONLY | O_DIRECTORY);
		if (d < 0)
			fail("open", dir);
		if (syscall(SYS_getdents64, d, buf, sizeof buf) < 0)
			fail("getdents64", dir);
		if (dup2(d, 100 + id) < 0)
			fail("dup2", dir);
		close(d);
		close(100 + id);
		close(fd);
		if (rename(a, b) != 0)
			fail("rename", a);
		struct stat st;
		if (stat(b, &st) != 0 || st.st_size % 3 != 0)
			fail("stat", b);
		if (unlink(b) != 0)
			fail("unlink", b);
		if (mkdir(a, 0755) != 0 || rmdir(a) != 0)
			fail("mkdir/rmdir", a);
		if (id == 3 && i > 100 && i % 97 == 0)
			syscall(SYS_exit, 0); /* this thread alone */
	}
	return NULL;
}

/* Files a killed worker left are "aN" (made, not yet renamed) or "bN"
 * (renamed), with a multiple of 3 bytes, or a directory "aN". */
static void sweep(const char *dir) {
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[512];
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		struct stat st;
		if (lstat(p, &st) != 0)
			fail("lstat", p);
		if (S_ISDIR(st.st_mode) ? rmdir(p) != 0 : (st.st_size % 3 != 0 || unlink(p) != 0))
			fail("sweep", p);
	}
	closedir(d);
}

int main(int argc, char **argv) {
	if (argc < 2 || chdir(argv[1]) != 0) {
		fprintf(stderr, "usage: execstorm DIR [GEN]\n");
		return 2;
	}
	int gen = argc > 2 ? atoi(argv[2]) : 0;
	for (long i = 0; i < WORKERS; i++) {
		char dir[64];
		snprintf(dir, sizeof dir, "w%ld", i);
		sweep(dir);
		if (mkdir(dir, 0755) != 0 && errno != EEXIST)
			fail("mkdir", dir);
	}
	if (gen >= GENS) {
		for (long i = 0; i < WORKERS; i++) {
			char dir[64];
			snprintf(dir, sizeof dir, "w%ld", i);
			if (rmdir(dir) != 0)
				fail("rmdir", dir);
			snprintf(dir, sizeof dir, "k/w%ld", i);
			sweep(dir);
			if (rmdir(dir) != 0 && errno != ENOENT)
				fail("rmdir", dir);
		}
		if (rmdir("k") != 0 && errno != ENOENT)
			fail("rmdir", "k");
		printf("ok %d\n", gen);
		return 0;
	}
	pid_t k = fork();
	if (k == 0) {
		/* The child's workers share the parent's directories' names
		 * in a directory of their own. */
		if (mkdir("k", 0755) != 0 && errno != EEXIST)
			fail("mkdir", "k");
		if (chdir("k") != 0)
			fail("chdir", "k");
		for (long i = 0; i < WORKERS; i++) {
			char dir[64];
			snprintf(dir, sizeof dir, "w%ld", i);
			sweep(dir);
			mkdir(dir, 0755);
		}
		pthread_t t;
		for (long i = 0; i < WORKERS - 1; i++)
			pthread_create(&t, NULL, worker, (void *)i);
		worker((void *)(long)(WORKERS - 1));
	}
	pthread_t t;
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&t, NULL, worker, (void *)i);
	usleep(20000 + 5000 * (gen % 4));
	kill(k, SIGKILL);
	waitpid(k, NULL, 0);
	char next[16];
	snprintf(next, sizeof next, "%d", gen + 1);
	execl("/proc/self/exe", argv[0], argv[1], next, (char *)NULL);
	fail("exec", argv[0]);
}
