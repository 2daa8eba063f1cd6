/* A guest with a SIGUSR1 handler, signalled by another guest process. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static void handler(int sig) { got = sig; }

int main(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid_t pid = fork();
	if (pid == 0) { kill(getppid(), SIGUSR1); _exit(0); }
	while (!got) sigsuspend(&old);
	int st;
	waitpid(pid, &st, 0);
	printf("got signal %d, child exited %d\n", got, WEXITSTATUS(st));
	return 0;
}
