/* getcwd(2) and readlink(2) of /proc/self/cwd and /proc/self/fd/N around
 * Linux's limit: the kernel builds the path from the directory up into
 * one PATH_MAX buffer, its NUL (or " (deleted)" and NUL) included, and
 * fails with ENAMETOOLONG when it does not fit (getcwd before ERANGE for
 * a small buffer; readlink however large or small the caller's buffer).
 * A tree is made in DIR/deep whose paths have the lengths that matter
 * whatever DIR's length (4000: a deleted file at 4085 fits, at 4086 does
 * not; directories at 4095 and 4096), then DEPTH more levels of 100-byte
 * names; the raw system calls are used (glibc's getcwd works around the
 * kernel's ENAMETOOLONG). Prints one line per call, with the length and
 * whether the path is the one made, never the path itself, so that the
 * output is the same in any DIR. The tree is removed at the end.
 * Usage: deeppath DIR DEPTH. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BIG (1 << 20)

/* cwd is the path of the working directory, as made; names are the
 * levels below DIR/deep, for the removal. */
static char cwd[BIG];
static size_t cwdlen;
static char *names[1 << 16];
static int depth;
static char buf[BIG];

static void fail(const char *what) {
	printf("%s at %zu: %s\n", what, cwdlen, strerrorname_np(errno));
	exit(1);
}

static void down(const char *name) {
	if (mkdir(name, 0755) || chdir(name))
		fail("mkdir/chdir");
	names[depth++] = strdup(name);
	cwd[cwdlen++] = '/';
	strcpy(cwd + cwdlen, name);
	cwdlen += strlen(name);
}

/* up goes to the parent and removes the directory it leaves (unless
 * gone already). */
static void up(void) {
	char *n = names[--depth];
	if (chdir(".."))
		fail("chdir ..");
	cwdlen -= strlen(n) + 1;
	cwd[cwdlen] = 0;
	if (rmdir(n) && errno != ENOENT)
		fail("rmdir");
	free(n);
}

/* name is a string of n copies of c. */
static char *name(int n, char c) {
	static char s[256];
	memset(s, c, n);
	s[n] = 0;
	return s;
}

/* report prints a call's result: its errno, or the length of what it
 * gave and whether that is want (of wantlen bytes). */
static void report(const char *what, long r, const char *want, size_t wantlen) {
	if (r < 0)
		printf("%s at %zu: %s\n", what, cwdlen, strerrorname_np(errno));
	else if ((size_t)r == wantlen && memcmp(buf, want, wantlen) == 0)
		printf("%s at %zu: %ld, the path\n", what, cwdlen, r);
	else
		printf("%s at %zu: %ld, not the path\n", what, cwdlen, r);
}

static void getcwd_in(size_t size) {
	char what[64];
	snprintf(what, sizeof what, "getcwd(%zu)", size);
	/* getcwd's length counts the NUL. */
	report(what, syscall(SYS_getcwd, buf, size), cwd, cwdlen + 1);
}

static void readlink_in(const char *link, const char *label, size_t size, const char *want, size_t wantlen) {
	char what[128];
	snprintf(what, sizeof what, "readlink(%s, %zu)", label, size);
	if (wantlen > size)
		wantlen = size;
	report(what, syscall(SYS_readlink, link, buf, size), want, wantlen);
}

/* cwd_calls are getcwd and readlink of the working directory, and of a
 * descriptor of it, with a large buffer and a small one. */
static void cwd_calls(void) {
	getcwd_in(BIG);
	getcwd_in(cwdlen + 1);
	getcwd_in(cwdlen);
	getcwd_in(10);
	readlink_in("/proc/self/cwd", "/proc/self/cwd", BIG, cwd, cwdlen);
	readlink_in("/proc/self/cwd", "/proc/self/cwd", 100, cwd, cwdlen);
	int fd = open(".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		fail("open .");
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	readlink_in(link, "/proc/self/fd/N", BIG, cwd, cwdlen);
	close(fd);
}

/* file_calls open a file of n bytes' name in the working directory and
 * read its /proc/self/fd link, then again once it is unlinked. */
static void file_calls(int n) {
	static char want[BIG];
	char *f = name(n, 'f');
	int fd = open(f, O_CREAT | O_RDWR, 0644);
	if (fd < 0)
		fail("open file");
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	size_t len = snprintf(want, sizeof want, "%s/%s", cwd, f);
	printf("file at %zu:\n", len);
	readlink_in(link, "/proc/self/fd/N", BIG, want, len);
	if (unlink(f))
		fail("unlink");
	len = snprintf(want, sizeof want, "%s/%s (deleted)", cwd, name(n, 'f'));
	readlink_in(link, "/proc/self/fd/N", BIG, want, len);
	close(fd);
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3)
		return 2;
	int more = atoi(argv[2]);
	cwdlen = snprintf(cwd, sizeof cwd, "%s", argv[1]);
	if (chdir(argv[1]))
		fail("chdir DIR");
	/* To 1000 bytes, whatever DIR's length. */
	down("deep");
	while (cwdlen + 203 <= 1000)
		down(name(200, 'b'));
	if (cwdlen >= 999)
		fail("DIR too long");
	down(name(1000 - cwdlen - 1, 'b'));
	cwd_calls();

	/* An unlinked working directory: getcwd fails with ENOENT, its
	 * links say " (deleted)". */
	down("gone");
	if (rmdir("../gone"))
		fail("rmdir");
	getcwd_in(BIG);
	static char want[BIG];
	size_t len = snprintf(want, sizeof want, "%s (deleted)", cwd);
	readlink_in("/proc/self/cwd", "/proc/self/cwd", BIG, want, len);
	up();

	/* To 4000 bytes: 100-byte names, then one that pads. */
	while (cwdlen + 101 <= 3900)
		down(name(100, 'd'));
	if (cwdlen < 3799)
		fail("DIR too long");
	down(name(4000 - cwdlen - 1, 'p'));
	cwd_calls();
	/* A deleted file's link fits at 4085 bytes and not at 4086. */
	file_calls(84);
	file_calls(85);

	/* 4093, then 4095 (fits with its NUL) and 4096 (does not). */
	down(name(92, 'q'));
	down("a");
	cwd_calls();
	up();
	down("ab");
	cwd_calls();
	file_calls(1);

	/* Deeper. */
	for (int i = 0; i < more; i++) {
		if (depth == (int)(sizeof names / sizeof names[0]) || cwdlen + 101 >= sizeof cwd)
			fail("too deep");
		down(name(100, 'd'));
	}
	cwd_calls();

	/* Remove the tree, from the bottom. */
	while (depth > 0)
		up();
	printf("done\n");
	return 0;
}
