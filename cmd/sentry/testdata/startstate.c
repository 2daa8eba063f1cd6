// startstate prints what a process inherits from whoever started it and
// that a supervisor's own settings could leak into: scheduling policy and
// nice value, timer slack, blocked and ignored signals. With no argument
// it prints its own, then forks and execs itself as "child" to print the
// child's (inherited across fork and exec from a guest, not the sentry).
// "startstate wrap IGNORED BLOCKED PROG ARG..." ignores and blocks the
// signals named by the two hex masks (bit N-1 for signal N) and execs
// PROG: the caller whose state the program (or the sandbox) inherits.
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *who) {
	sigset_t blocked;
	sigprocmask(SIG_BLOCK, NULL, &blocked);
	unsigned long long mask = 0;
	for (int s = 1; s < 64; s++)
		if (sigismember(&blocked, s))
			mask |= 1ULL << (s - 1);
	char ign[64] = "?";
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "SigIgn:", 7))
			sscanf(line + 7, "%63s", ign);
	if (f)
		fclose(f);
	printf("%s policy=%d nice=%d timerslack=%d blocked=%llx ignored=%s\n", who, sched_getscheduler(0),
	       getpriority(PRIO_PROCESS, 0), prctl(PR_GET_TIMERSLACK), mask, ign);
	fflush(stdout);
}

int main(int argc, char **argv) {
	if (argc > 4 && !strcmp(argv[1], "wrap")) {
		unsigned long long ign = strtoull(argv[2], NULL, 16), blk = strtoull(argv[3], NULL, 16);
		sigset_t set;
		sigemptyset(&set);
		for (int s = 1; s < 64; s++) {
			if (ign & (1ULL << (s - 1)))
				signal(s, SIG_IGN);
			if (blk & (1ULL << (s - 1)))
				sigaddset(&set, s);
		}
		sigprocmask(SIG_BLOCK, &set, NULL);
		execv(argv[4], argv + 4);
		perror("exec");
		return 127;
	}
	if (argc > 1) {
		show(argv[1]);
		return 0;
	}
	show("first");
	pid_t pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		perror("exec");
		_exit(127);
	}
	int ws;
	waitpid(pid, &ws, 0);
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
}
