// pathrace: one thread keeps moving number S between a host directory and
// a directory of DIR (dup2) while another makes, then removes, a directory
// through S's magic link, mkdir("/proc/self/fd/S/xI") and
// rmdir("/proc/self/fd/S/xI"), and checks where each mkdir landed: in the
// host directory or in DIR's, whichever S held. A sentry that let the
// kernel follow the link again after looking at S itself made some, when
// S had become DIR's directory meanwhile, in the sandbox's store (the
// directory's backing), where neither name shows them.
// HOW says how the mkdir reaches S: "link" (the default) as above,
// "dirfd" as mkdirat(S, "xI"), "fchdir" as fchdir(S) then mkdir("xI"),
// "chdir" as chdir("/proc/self/fd/S") then mkdir("xI") (a kernel that
// looks at S again, after the sentry looked, resolves in the store too). Prints "mismatches N" (the directories made go to
// stderr); usage: pathrace DIR HOSTDIR [HOW].
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define S 50
#define ROUNDS 3000

static int hostDir, dirDir, stop;

static void *mover(void *arg) {
	for (int i = 0; !__atomic_load_n(&stop, __ATOMIC_SEQ_CST); i++)
		dup2(i % 2 ? dirDir : hostDir, S);
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: pathrace DIR HOSTDIR [link|dirfd|fchdir|chdir]\n");
		return 2;
	}
	const char *how = argc > 3 ? argv[3] : "link";
	char sub[2048];
	snprintf(sub, sizeof sub, "%s/pathrace", argv[1]);
	mkdir(sub, 0755);
	hostDir = open(argv[2], O_RDONLY | O_DIRECTORY);
	dirDir = open(sub, O_RDONLY | O_DIRECTORY);
	if (hostDir < 0 || dirDir < 0) {
		perror("setup");
		return 1;
	}
	pthread_t m;
	pthread_create(&m, 0, mover, 0);
	int made = 0, bad = 0;
	for (int i = 0; i < ROUNDS; i++) {
		char p[256], hp[4096], dp[4096];
		struct stat st;
		int r;
		if (strcmp(how, "dirfd") == 0) {
			snprintf(p, sizeof p, "x%d", i);
			r = mkdirat(S, p, 0755);
		} else if (strcmp(how, "fchdir") == 0 || strcmp(how, "chdir") == 0) {
			char link[64];
			snprintf(link, sizeof link, "/proc/self/fd/%d", S);
			snprintf(p, sizeof p, "x%d", i);
			if (chdir("/") != 0)
				r = -1;
			else if (how[0] == 'f')
				r = fchdir(S);
			else
				r = chdir(link);
			if (r == 0)
				r = mkdir(p, 0755);
		} else {
			snprintf(p, sizeof p, "/proc/self/fd/%d/x%d", S, i);
			r = mkdir(p, 0755);
		}
		if (r != 0)
			continue;
		made++;
		snprintf(hp, sizeof hp, "%s/x%d", argv[2], i);
		snprintf(dp, sizeof dp, "%s/x%d", sub, i);
		int inHost = stat(hp, &st) == 0, inDir = stat(dp, &st) == 0;
		if (inHost == inDir)
			bad++;
		rmdir(inHost ? hp : dp);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(m, 0);
	fprintf(stderr, "made %d\n", made);
	printf("mismatches %d\n", bad);
	return 0;
}
