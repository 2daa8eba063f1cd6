/* clone(2) with exit signal SIGCHLD is reported to a tracer as a fork
 * event whatever it shares. A child made with CLONE_FILES shares its
 * parent's descriptor table, one made with CLONE_FS its working directory
 * and umask; the sandbox gave both a copy of their own, as for fork. Each
 * child changes what it shares (closes and opens, chdir and umask), and
 * the parent checks that it sees the change: prints "ok" or what differs.
 * Usage: cloneshare DIR. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char a[PATH_MAX], b[PATH_MAX], sub[PATH_MAX];
static char stack[1 << 16];
static int fa;

/* Closes the parent's A and opens B: B lands at A's number. */
static int files_child(void *arg) {
	(void)arg;
	close(fa);
	return open(b, O_RDONLY) == fa ? 0 : 1;
}

static int fs_child(void *arg) {
	(void)arg;
	umask(077);
	return chdir(sub) == 0 ? 0 : 1;
}

static int run(int (*fn)(void *), int flags) {
	pid_t p = clone(fn, stack + sizeof stack, flags | SIGCHLD, NULL);
	int st;
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("child failed\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	snprintf(a, sizeof a, "%s/cs-a", argv[1]);
	snprintf(b, sizeof b, "%s/cs-b", argv[1]);
	snprintf(sub, sizeof sub, "%s/cs-sub", argv[1]);
	int bad = 0;
	struct stat sa, sb, st;
	fa = open(a, O_CREAT | O_RDWR | O_TRUNC, 0644);
	int fb = open(b, O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (fa < 0 || fb < 0 || fstat(fa, &sa) || fstat(fb, &sb) || close(fb))
		return 1;
	if (run(files_child, CLONE_FILES))
		return 1;
	/* The kernel's table has B at fa; the sentry's must say so too. */
	if (fstat(fa, &st) || st.st_ino != sb.st_ino) {
		printf("CLONE_FILES: fd %d is not the child's open of B\n", fa);
		bad = 1;
	}
	close(fa);

	if (mkdir(sub, 0755) || chdir(argv[1]) || run(fs_child, CLONE_FS))
		return 1;
	int fx = open("x", O_CREAT | O_WRONLY, 0666);
	char cwd[PATH_MAX], want[PATH_MAX + 8];
	snprintf(want, sizeof want, "%s/x", sub);
	if (fx < 0 || stat(want, &st) || (st.st_mode & 0777) != 0600) {
		printf("CLONE_FS: x not made in the child's directory with its umask\n");
		bad = 1;
	}
	if (!getcwd(cwd, sizeof cwd) || strcmp(cwd, sub) != 0) {
		printf("CLONE_FS: getcwd %s, want %s\n", cwd, sub);
		bad = 1;
	}
	unlink(want);
	rmdir(sub);
	unlink(a);
	unlink(b);
	if (!bad)
		printf("ok\n");
	return bad;
}
