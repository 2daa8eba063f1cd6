// sigblock: blocking file calls interrupted by a handled signal (issue #13
// items 5 and 6), in DIR (argv[1]). A ticker process signals the caller
// every 20 ms while it is blocked: without SA_RESTART the call fails with
// EINTR, with SA_RESTART it is restarted (the same call, with its own
// arguments) and completes when the ticker lets it (releases the lock,
// opens the FIFO's other end). Prints one line per case.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int handled;
static void onsig(int s) { (void)s; handled++; }

static void handler(int restart) {
	struct sigaction sa = {0};
	sa.sa_handler = onsig;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigaction(SIGUSR1, &sa, NULL);
}

static const char *res(long r) {
	static char buf[32];
	if (r >= 0)
		return "ok";
	snprintf(buf, sizeof buf, "%s", strerrorname_np(errno));
	return buf;
}

// ticker signals parent every 20 ms, n times (forever if n < 0), then
// runs then() and exits.
static pid_t ticker(pid_t parent, int n, void (*then)(void)) {
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; n < 0 || i < n; i++) {
			usleep(20000);
			kill(parent, SIGUSR1);
		}
		if (then)
			then();
		_exit(0);
	}
	return pid;
}

static char lockPath[4096], fifoPath[4096];
static pid_t holder;

static void releaseLock(void) { kill(holder, SIGKILL); }

static void openWriter(void) {
	int fd = open(fifoPath, O_WRONLY);
	if (write(fd, "x", 1) != 1)
		_exit(1);
	close(fd);
}

// holdLock starts a process that holds an exclusive flock on lockPath
// until killed.
static void holdLock(void) {
	int p[2];
	if (pipe(p) < 0)
		exit(1);
	holder = fork();
	if (holder == 0) {
		int fd = open(lockPath, O_RDWR);
		flock(fd, LOCK_EX);
		if (write(p[1], "l", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c;
	if (read(p[0], &c, 1) != 1)
		exit(1);
	close(p[0]);
	close(p[1]);
}

static void flockCase(int restart) {
	holdLock();
	handler(restart);
	handled = 0;
	int fd = open(lockPath, O_RDWR);
	pid_t t = ticker(getpid(), restart ? 10 : -1, restart ? releaseLock : NULL);
	long r = flock(fd, LOCK_EX);
	int e = errno;
	kill(t, SIGKILL);
	waitpid(t, NULL, 0);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	errno = e;
	printf("flock-%s %s handled=%s\n", restart ? "restart" : "norestart", res(r), handled > 0 ? "yes" : "no");
	close(fd);
}

static void fifoCase(int restart) {
	handler(restart);
	handled = 0;
	pid_t t = ticker(getpid(), restart ? 10 : -1, restart ? openWriter : NULL);
	// The legacy open(2): a stopping platform rewrites it, and its
	// restart must run open again, with open's arguments.
	long fd = syscall(SYS_open, fifoPath, O_RDONLY);
	int e = errno;
	char c = 0;
	if (fd >= 0 && read(fd, &c, 1) != 1)
		c = '?';
	kill(t, SIGKILL);
	waitpid(t, NULL, 0);
	errno = e;
	printf("fifo-open-%s %s read=%c handled=%s\n", restart ? "restart" : "norestart", res(fd), c ? c : '-',
	       handled > 0 ? "yes" : "no");
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv) {
	if (argc != 2)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(lockPath, sizeof lockPath, "%s/lock", argv[1]);
	snprintf(fifoPath, sizeof fifoPath, "%s/fifo", argv[1]);
	close(open(lockPath, O_CREAT | O_RDWR, 0644));
	if (mkfifo(fifoPath, 0644) < 0)
		return 1;
	flockCase(0);
	flockCase(1);
	fifoCase(0);
	fifoCase(1);
	return 0;
}
