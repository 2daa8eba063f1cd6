/* Processes killed while they fork: each round a process forks in a loop
 * until another kills it (SIGKILL) after a random moment. A child the
 * kernel made before the kill runs on Linux whether or not its parent
 * lived to see fork return; in the sandbox one whose parent died before
 * its clone event named it was left stopped for good. Each child appends
 * a byte through a descriptor of a file in DIR it inherited (a sentry
 * file in the sandbox: its table must be right) and counts itself; the
 * parent counts the forks it saw return. Prints the children that ran,
 * the forks seen, the file's size and how many processes of ours are
 * left stopped; natively ran >= seen, size == ran and stopped 0. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct counts {
	atomic_long ran, seen;
};

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: forkkill DIR ROUNDS\n");
		return 2;
	}
	int rounds = atoi(argv[2]);
	char path[4096];
	snprintf(path, sizeof path, "%s/forkkill.log", argv[1]);
	int log = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0600);
	if (log < 0) {
		perror(path);
		return 1;
	}
	struct counts *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	srand(getpid());
	for (int r = 0; r < rounds; r++) {
		pid_t p = fork();
		if (p == 0) {
			for (;;) {
				pid_t k = fork();
				if (k == 0) {
					if (write(log, "x", 1) == 1)
						atomic_fetch_add(&c->ran, 1);
					_exit(0);
				}
				if (k > 0)
					atomic_fetch_add(&c->seen, 1);
			}
		}
		usleep(rand() % 3000);
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
	/* The orphans are the sandbox's (or init's) to reap; wait until
	 * none of ours is left running. */
	int stopped = 0;
	for (int tries = 0; tries < 200; tries++) {
		int running = 0;
		stopped = 0;
		DIR *d = opendir("/proc");
		struct dirent *e;
		while ((e = readdir(d))) {
			char stat[300], buf[512];
			snprintf(stat, sizeof stat, "/proc/%s/stat", e->d_name);
			FILE *f = fopen(stat, "r");
			if (!f)
				continue;
			if (fgets(buf, sizeof buf, f) && strstr(buf, "(forkkill)") && atoi(e->d_name) != getpid()) {
				char *s = strrchr(buf, ')');
				if (s[2] == 't' || s[2] == 'T')
					stopped++;
				else if (s[2] != 'Z' && s[2] != 'X')
					running++;
			}
			fclose(f);
		}
		closedir(d);
		if (running == 0)
			break;
		usleep(10000);
	}
	struct stat st;
	fstat(log, &st);
	printf("ran %ld seen %ld size %lld stopped %d\n", atomic_load(&c->ran), atomic_load(&c->seen), (long long)st.st_size, stopped);
	return 0;
}
