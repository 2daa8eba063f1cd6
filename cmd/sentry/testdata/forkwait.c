/* A glibc program that forks children and waits for them. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
	for (int i = 0; i < 5; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) { perror("fork"); return 1; }
		if (pid == 0) { printf("child %d\n", i); exit(i + 10); }
		int st;
		if (waitpid(pid, &st, 0) != pid) { perror("waitpid"); return 1; }
		printf("child %d exited %d\n", i, WEXITSTATUS(st));
	}
	return 0;
}
