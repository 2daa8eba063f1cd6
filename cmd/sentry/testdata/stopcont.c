/* A guest that stops and continues its own child with SIGSTOP/SIGCONT. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
	pid_t pid = fork();
	if (pid == 0) { for (;;) pause(); }
	int st;
	kill(pid, SIGSTOP);
	if (waitpid(pid, &st, WUNTRACED) != pid) { perror("waitpid stop"); return 1; }
	printf("stopped=%d sig=%d\n", WIFSTOPPED(st), WSTOPSIG(st));
	kill(pid, SIGCONT);
	if (waitpid(pid, &st, WCONTINUED) != pid) { perror("waitpid cont"); return 1; }
	printf("continued=%d\n", WIFCONTINUED(st));
	kill(pid, SIGTERM);
	if (waitpid(pid, &st, 0) != pid) { perror("waitpid term"); return 1; }
	printf("signaled=%d sig=%d\n", WIFSIGNALED(st), WTERMSIG(st));
	return 0;
}
