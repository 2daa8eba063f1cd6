/* Exec of a file of the sandbox's tmpfs while signals come every 50 us
 * or so (SIGWINCH from the parent, a handler without SA_RESTART; its
 * default action, after the exec, is to ignore it). The sentry runs such a file
 * in two calls of the guest's (an install call, then execveat of the
 * descriptor it installed): a signal that withdrew the first made exec
 * fail with EINTR, which Linux's exec never returns; one delivered
 * between the two wrote its frame over execveat's path below the stack
 * (ENOTDIR), or, with a handler that jumps away (siglongjmp), left the
 * installed descriptor behind. Each of ROUNDS children execs DIR/ok (a
 * copy of this program, which exits 0) and DIR/bad (not an image: ENOEXEC,
 * under the jumping handler). Prints the failures of each kind (bad: an
 * errno other than ENOEXEC; killed: a child of the jumping handler killed
 * by a signal) and how many descriptors the children had left:
 * "ok 0 bad 0 killed 0 left 0".
 * Usage: execsignal DIR ROUNDS. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static sigjmp_buf env;
static volatile int jumping;

static void on_signal(int sig) {
	(void)sig;
	if (jumping)
		siglongjmp(env, 1);
}

static void handle(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal; /* no SA_RESTART */
	sigaction(SIGWINCH, &sa, NULL);
}

/* Signals child p until it exits; its wait status. */
static int pester(pid_t p) {
	int st;
	while (waitpid(p, &st, WNOHANG) == 0) {
		kill(p, SIGWINCH);
		usleep(50);
	}
	return st;
}

static int open_fds(void) {
	int n = 0;
	for (int fd = 3; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

int main(int argc, char **argv) {
	if (argc == 2 && strcmp(argv[1], "ran") == 0)
		return 0;
	if (argc < 3)
		return 2;
	char ok[4096], bad[4096];
	snprintf(ok, sizeof ok, "%s/execsignal-ok", argv[1]);
	snprintf(bad, sizeof bad, "%s/execsignal-bad", argv[1]);
	/* A copy of this program, by sendfile. */
	int in = open("/proc/self/exe", O_RDONLY), out = open(ok, O_CREAT | O_WRONLY | O_TRUNC, 0755);
	struct stat st;
	if (in < 0 || out < 0 || fstat(in, &st) || sendfile(out, in, NULL, st.st_size) != st.st_size)
		return 1;
	close(in);
	close(out);
	out = open(bad, O_CREAT | O_WRONLY | O_TRUNC, 0755);
	if (write(out, "junkjunk", 8) != 8)
		return 1;
	close(out);
	int rounds = atoi(argv[2]), okfail = 0, badfail = 0, killed = 0, left = 0;
	for (int r = 0; r < rounds; r++) {
		pid_t p = fork();
		if (p == 0) {
			handle();
			char *av[] = {ok, "ran", NULL}, *ev[] = {NULL};
			execve(ok, av, ev);
			_exit(100 + errno);
		}
		int st = pester(p);
		okfail += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
		p = fork();
		if (p == 0) {
			int before = open_fds();
			handle();
			jumping = 1;
			for (int i = 0; i < 10; i++) {
				if (sigsetjmp(env, 1) == 0) {
					char *av[] = {bad, NULL}, *ev[] = {NULL};
					execve(bad, av, ev);
					if (errno != ENOEXEC)
						_exit(100 + errno);
				}
			}
			signal(SIGWINCH, SIG_IGN);
			_exit(open_fds() - before);
		}
		st = pester(p);
		if (!WIFEXITED(st))
			killed++;
		else if (WEXITSTATUS(st) >= 100)
			badfail++;
		else
			left += WEXITSTATUS(st);
	}
	unlink(ok);
	unlink(bad);
	printf("ok %d bad %d killed %d left %d\n", okfail, badfail, killed, left);
	return 0;
}
