// filtercost: what any seccomp filter costs an untrapped call, in C: the
// yardstick for issue #16's "untrapped getppid >= 0.95x native"
// (docs/ARCHITECTURE.md, "Where the time goes", has the numbers).
// build: gcc -O2 -o filtercost filtercost.c
// usage: filtercost none|allow|argload
//   none:    no filter
//   allow:   a one-instruction SECCOMP_RET_ALLOW filter, which the kernel's
//            action cache (seccomp_cache_prepare, Linux 5.11) answers from
//            its bitmap without running it: the cost of the entry path alone
//   argload: a filter that loads an argument before allowing, which the
//            cache cannot decide, so it runs on every call
// It loops getppid, 5 rounds of 20M calls, and prints the best round as
// "MODE ns/call X M/s Y". Run it under `sentry run` with "none" to see the
// sandbox's own filter.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static int load(struct sock_filter *f, unsigned short n) {
	struct sock_fprog p = {n, f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p)) {
		perror("seccomp");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "none";
	if (!strcmp(mode, "allow")) {
		struct sock_filter f[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
		if (load(f, 1))
			return 1;
	} else if (!strcmp(mode, "argload")) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		if (load(f, 2))
			return 1;
	} else if (strcmp(mode, "none")) {
		fprintf(stderr, "usage: filtercost none|allow|argload\n");
		return 2;
	}
	const long n = 20000000;
	double best = 1e9;
	for (int r = 0; r < 5; r++) {
		double t = now();
		for (long i = 0; i < n; i++)
			syscall(SYS_getppid);
		t = now() - t;
		if (t < best)
			best = t;
	}
	printf("%s ns/call %.1f M/s %.2f\n", mode, best / n * 1e9, n / best / 1e6);
	return 0;
}
