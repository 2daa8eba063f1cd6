/* Soak: processes and threads doing open/write/read/rename/unlink/dup/
 * fork/exec on the tmpfs under random signals, each remembering what it
 * wrote and checking it byte for byte (issue #13). Usage:
 *   soak DIR SECONDS SEED
 * DIR must hold an executable "true" (for exec). Prints "ok FILES BYTES"
 * (what is left in DIR) or what went wrong, and exits non-zero on any
 * error. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROCS 4
#define THREADS 4
#define SLOTS 16

static const char *dir;
static time_t deadline;
static volatile sig_atomic_t ticks;

static void tick(int s) { (void)s; ticks++; }

/* A file's content is a function of its generation, so a reader knows
 * what it must see. */
static uint8_t byte_at(uint32_t gen, size_t i) { return (uint8_t)(gen * 2654435761u + i * 40503u) ^ (uint8_t)(i >> 8); }

struct slot {
	int live;
	uint32_t gen;
	size_t len;
	char name[256];
};

struct worker {
	int proc, id;
	unsigned seed;
	struct slot slots[SLOTS];
	long files, bytes, errors;
};

/* waitpid is interruptible (no SA_RESTART in half the processes): EINTR
 * there is Linux's, not the tmpfs's. */
static pid_t waitfor(pid_t pid, int *status) {
	pid_t r;
	do r = waitpid(pid, status, 0);
	while (r < 0 && errno == EINTR);
	return r;
}

static void complain(struct worker *w, const char *what, const char *name, int err) {
	fprintf(stderr, "proc %d thread %d: %s %s: %s\n", w->proc, w->id, what, name, strerror(err));
	w->errors++;
}

/* Writes are in pieces of random size, as real programs make them; EINTR
 * is never right on a tmpfs. */
static int write_all(struct worker *w, int fd, uint32_t gen, size_t len) {
	static __thread uint8_t buf[1 << 16];
	size_t off = 0;
	while (off < len) {
		size_t n = 1 + rand_r(&w->seed) % sizeof buf;
		if (n > len - off) n = len - off;
		for (size_t i = 0; i < n; i++) buf[i] = byte_at(gen, off + i);
		ssize_t r = write(fd, buf, n);
		if (r < 0) return -errno;
		off += r;
	}
	return 0;
}

static int check(struct worker *w, struct slot *s) {
	int fd = open(s->name, O_RDONLY);
	if (fd < 0) { complain(w, "open to check", s->name, errno); return -1; }
	struct stat st;
	if (fstat(fd, &st) != 0 || (size_t)st.st_size != s->len) {
		fprintf(stderr, "proc %d thread %d: %s: size %lld, wrote %zu\n", w->proc, w->id, s->name, (long long)st.st_size, s->len);
		w->errors++;
		close(fd);
		return -1;
	}
	static __thread uint8_t buf[1 << 16];
	size_t off = 0;
	while (off < s->len) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r <= 0) { complain(w, "read", s->name, r < 0 ? errno : EIO); close(fd); return -1; }
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != byte_at(s->gen, off + i)) {
				fprintf(stderr, "proc %d thread %d: %s: byte %zu differs\n", w->proc, w->id, s->name, off + i);
				w->errors++;
				close(fd);
				return -1;
			}
		off += r;
	}
	close(fd);
	return 0;
}

static void *run(void *arg) {
	struct worker *w = arg;
	char path[256], bin[256];
	snprintf(bin, sizeof bin, "%s/true", dir);
	uint32_t gen = (uint32_t)(w->proc * 1000 + w->id) << 16;
	while (time(NULL) < deadline && !w->errors) {
		struct slot *s = &w->slots[rand_r(&w->seed) % SLOTS];
		switch (rand_r(&w->seed) % 8) {
		case 0: case 1: { /* (re)write a file */
			if (!s->live) {
				snprintf(s->name, sizeof s->name, "%s/p%d-t%d-%u", dir, w->proc, w->id, gen);
			}
			int fd = open(s->name, O_CREAT | O_TRUNC | O_WRONLY, 0644);
			if (fd < 0) { complain(w, "open", s->name, errno); break; }
			s->gen = ++gen;
			s->len = rand_r(&w->seed) % 200000;
			int e = write_all(w, fd, s->gen, s->len);
			if (e) complain(w, "write", s->name, -e);
			if (close(fd) != 0) complain(w, "close", s->name, errno);
			s->live = 1;
			break;
		}
		case 2: /* read it back */
			if (s->live) check(w, s);
			break;
		case 3: /* rename */
			if (s->live) {
				snprintf(path, sizeof path, "%s/p%d-t%d-r%u", dir, w->proc, w->id, ++gen);
				if (rename(s->name, path) != 0) complain(w, "rename", s->name, errno);
				else strcpy(s->name, path);
			}
			break;
		case 4: /* unlink */
			if (s->live) {
				if (unlink(s->name) != 0) complain(w, "unlink", s->name, errno);
				s->live = 0;
			}
			break;
		case 5: /* dup and check through the copy */
			if (s->live) {
				int fd = open(s->name, O_RDONLY);
				if (fd < 0) { complain(w, "open", s->name, errno); break; }
				int d = dup(fd);
				struct stat a, b;
				if (d < 0 || fstat(fd, &a) || fstat(d, &b) || a.st_ino != b.st_ino || (size_t)b.st_size != s->len)
					complain(w, "dup", s->name, d < 0 ? errno : EIO);
				close(fd);
				if (d >= 0) close(d);
			}
			break;
		case 6: { /* fork: the child checks the file through an inherited descriptor */
			if (!s->live) break;
			int fd = open(s->name, O_RDONLY);
			if (fd < 0) { complain(w, "open", s->name, errno); break; }
			pid_t pid = fork();
			if (pid == 0) {
				struct stat st;
				_exit(fstat(fd, &st) == 0 && (size_t)st.st_size == s->len ? 0 : 3);
			}
			int status;
			if (pid < 0 || waitfor(pid, &status) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
				complain(w, "fork child", s->name, pid < 0 ? errno : EIO);
			close(fd);
			break;
		}
		case 7: { /* vfork + exec of a tmpfs binary */
			pid_t pid = vfork();
			if (pid == 0) {
				execl(bin, bin, (char *)NULL);
				_exit(127);
			}
			int status;
			if (pid < 0 || waitfor(pid, &status) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
				complain(w, "exec", bin, pid < 0 ? errno : EIO);
			break;
		}
		}
	}
	for (int i = 0; i < SLOTS; i++)
		if (w->slots[i].live && check(w, &w->slots[i]) == 0) {
			w->files++;
			w->bytes += w->slots[i].len;
		}
	return NULL;
}

static int proc(int n, unsigned seed) {
	/* Each process its own signal storm: a random itimer, with or
	 * without SA_RESTART. */
	struct sigaction sa = {0};
	sa.sa_handler = tick;
	sa.sa_flags = n % 2 ? SA_RESTART : 0;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 100 + seed % 900}, {0, 100 + seed % 900}};
	setitimer(ITIMER_REAL, &it, NULL);
	pthread_t th[THREADS];
	struct worker ws[THREADS];
	memset(ws, 0, sizeof ws);
	for (int i = 0; i < THREADS; i++) {
		ws[i].proc = n;
		ws[i].id = i;
		ws[i].seed = seed * 31 + i;
		pthread_create(&th[i], NULL, run, &ws[i]);
	}
	long files = 0, bytes = 0, errors = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		files += ws[i].files;
		bytes += ws[i].bytes;
		errors += ws[i].errors;
	}
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	printf("%ld %ld %ld\n", files, bytes, errors);
	fflush(stdout);
	return errors ? 1 : 0;
}

int main(int argc, char **argv) {
	if (argc != 4) { fprintf(stderr, "usage: soak DIR SECONDS SEED\n"); return 2; }
	dir = argv[1];
	deadline = time(NULL) + atoi(argv[2]);
	unsigned seed = strtoul(argv[3], NULL, 0);
	int pfd[2];
	if (pipe(pfd) != 0) { perror("pipe"); return 1; }
	pid_t pids[PROCS];
	for (int i = 0; i < PROCS; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			dup2(pfd[1], 1);
			close(pfd[0]);
			_exit(proc(i, seed + i));
		}
	}
	close(pfd[1]);
	long files = 0, bytes = 0, errors = 0;
	FILE *in = fdopen(pfd[0], "r");
	long f, b, e;
	while (fscanf(in, "%ld %ld %ld", &f, &b, &e) == 3) {
		files += f;
		bytes += b;
		errors += e;
	}
	int bad = 0;
	for (int i = 0; i < PROCS; i++) {
		int status;
		if (waitfor(pids[i], &status) != pids[i] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) bad++;
	}
	if (bad || errors) {
		printf("failed: %d processes, %ld errors\n", bad, errors);
		return 1;
	}
	printf("ok %ld %ld\n", files, bytes);
	return 0;
}
