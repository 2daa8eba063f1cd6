// sigreach PID: tries every way a guest has to signal process PID (another
// sandbox's sentry) and its own sentry (its parent), and prints one line
// per try: "name: 0" or "name: ERRNO-NAME". With no PID it only makes the
// tries that must work (its own processes and threads). SIGKILL is the
// signal where a call names one: a try that works kills its target. A
// descriptor's owner may be anyone (Linux checks when it sends); what a
// sentry gets that way is checked by the signal F_SETSIG names, and a
// SIGIO is then sent to it for real ("sigio sent").
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef F_SETOWN_EX
#define F_SETOWN_EX 15
#define F_OWNER_TID 0
#define F_OWNER_PID 1
#define F_OWNER_PGRP 2
struct f_owner_ex { int type; pid_t pid; };
#endif

static void report(const char *name, long r) {
	printf("%s: %s\n", name, r < 0 ? strerrorname_np(errno) : "0");
	fflush(stdout);
}

static int sock(void) {
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		perror("socketpair");
		exit(1);
	}
	return sv[0];
}

static volatile int sigios;
static void onSIGIO(int s) { (void)s; sigios++; }

// sigio makes pid the owner of a socket with signal sig and makes the
// socket ready: the kernel sends sig to pid.
static void sigio(const char *who, pid_t pid, int sig, const char *signame) {
	char name[64];
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		perror("socketpair");
		exit(1);
	}
	snprintf(name, sizeof name, "%s setsig %s", who, signame);
	long r = fcntl(sv[0], F_SETSIG, sig);
	report(name, r);
	if (r < 0) {
		close(sv[0]);
		close(sv[1]);
		return;
	}
	fcntl(sv[0], F_SETOWN, pid);
	fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_ASYNC);
	snprintf(name, sizeof name, "%s sigio sent %s", who, signame);
	report(name, write(sv[1], "x", 1) == 1 ? 0 : -1);
	usleep(2000);
	close(sv[0]);
	close(sv[1]);
}

// sigios_to tries every signal as pid's SIGIO, and has each one the
// sandbox lets F_SETSIG name sent.
static void sigios_to(const char *who, pid_t pid) {
	char signame[8];
	for (int sig = 0; sig <= 64; sig++) {
		snprintf(signame, sizeof signame, "%d", sig);
		sigio(who, pid, sig, signame);
	}
}

static void owners(const char *who, pid_t pid, pid_t tid, pid_t pgid) {
	char name[64];
	int s = sock();
	snprintf(name, sizeof name, "%s F_SETOWN", who);
	report(name, fcntl(s, F_SETOWN, pid));
	snprintf(name, sizeof name, "%s F_SETOWN group", who);
	report(name, fcntl(s, F_SETOWN, -pgid));
	struct f_owner_ex ex = {F_OWNER_PID, pid};
	snprintf(name, sizeof name, "%s F_SETOWN_EX pid", who);
	report(name, fcntl(s, F_SETOWN_EX, &ex));
	ex = (struct f_owner_ex){F_OWNER_TID, tid};
	snprintf(name, sizeof name, "%s F_SETOWN_EX tid", who);
	report(name, fcntl(s, F_SETOWN_EX, &ex));
	ex = (struct f_owner_ex){F_OWNER_PGRP, pgid};
	snprintf(name, sizeof name, "%s F_SETOWN_EX group", who);
	report(name, fcntl(s, F_SETOWN_EX, &ex));
	int v = pid;
	snprintf(name, sizeof name, "%s FIOSETOWN", who);
	report(name, ioctl(s, 0x8901, &v));
	v = -pgid;
	snprintf(name, sizeof name, "%s SIOCSPGRP group", who);
	report(name, ioctl(s, 0x8902, &v));
	close(s);
}

// signals tries the calls that send SIGKILL to pid (and its thread tid).
static void signals(const char *who, pid_t pid, pid_t tid) {
	char name[64];
	snprintf(name, sizeof name, "%s kill", who);
	report(name, kill(pid, SIGKILL));
	snprintf(name, sizeof name, "%s tkill", who);
	report(name, syscall(SYS_tkill, tid, SIGKILL));
	snprintf(name, sizeof name, "%s tgkill", who);
	report(name, syscall(SYS_tgkill, pid, tid, SIGKILL));
	siginfo_t si = {0};
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	snprintf(name, sizeof name, "%s rt_sigqueueinfo", who);
	report(name, syscall(SYS_rt_sigqueueinfo, pid, SIGKILL, &si));
	snprintf(name, sizeof name, "%s rt_tgsigqueueinfo", who);
	report(name, syscall(SYS_rt_tgsigqueueinfo, pid, tid, SIGKILL, &si));
	int pfd = syscall(SYS_pidfd_open, pid, 0);
	snprintf(name, sizeof name, "%s pidfd_send_signal", who);
	report(name, pfd < 0 ? pfd : syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0));
	char path[64];
	snprintf(path, sizeof path, "/proc/%d", pid);
	int dfd = open(path, O_DIRECTORY | O_RDONLY);
	snprintf(name, sizeof name, "%s pidfd_send_signal /proc", who);
	report(name, dfd < 0 ? dfd : syscall(SYS_pidfd_send_signal, dfd, SIGKILL, NULL, 0));
	struct rlimit rl = {0, 0};
	snprintf(name, sizeof name, "%s prlimit", who);
	report(name, prlimit(pid, RLIMIT_NOFILE, &rl, NULL));
}

// starve tries the calls that would starve pid (and its thread tid, and
// its process group pgid): the scheduling a root guest may change for a
// process whose effective uid is 0 (set_one_prio_perm, check_same_owner)
// if the target's permitted capabilities are a subset of its own
// (cap_safe_nice). A sentry's hold CAP_SYS_ADMIN, which the guest's lack.
static void starve(const char *who, pid_t pid, pid_t tid, pid_t pgid) {
	char name[64];
	snprintf(name, sizeof name, "%s setpriority", who);
	report(name, setpriority(PRIO_PROCESS, pid, 19));
	snprintf(name, sizeof name, "%s setpriority thread", who);
	report(name, setpriority(PRIO_PROCESS, tid, 19));
	snprintf(name, sizeof name, "%s setpriority group", who);
	report(name, setpriority(PRIO_PGRP, pgid, 19));
	struct sched_param sp = {0};
	snprintf(name, sizeof name, "%s sched_setscheduler", who);
	report(name, sched_setscheduler(tid, SCHED_IDLE, &sp));
	snprintf(name, sizeof name, "%s sched_setparam", who);
	report(name, sched_setparam(tid, &sp));
	unsigned int attr[14] = {56, SCHED_IDLE}; // struct sched_attr: size, policy
	snprintf(name, sizeof name, "%s sched_setattr", who);
	report(name, syscall(SYS_sched_setattr, tid, attr, 0));
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	snprintf(name, sizeof name, "%s sched_setaffinity", who);
	report(name, sched_setaffinity(tid, sizeof set, &set));
	snprintf(name, sizeof name, "%s ioprio_set", who);
	report(name, syscall(SYS_ioprio_set, 1, tid, 3 << 13)); // IOPRIO_WHO_PROCESS, IOPRIO_CLASS_IDLE
	snprintf(name, sizeof name, "%s ioprio_set group", who);
	report(name, syscall(SYS_ioprio_set, 2, pgid, 3 << 13));
}

// lastThread is a thread of pid other than its leader, if it has one.
static pid_t lastThread(pid_t pid) {
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", pid);
	DIR *d = opendir(path);
	pid_t tid = pid;
	for (struct dirent *e; d && (e = readdir(d));)
		if (atoi(e->d_name) > 0)
			tid = atoi(e->d_name);
	if (d)
		closedir(d);
	return tid;
}

static void onUSR1(int s) { (void)s; }

int main(int argc, char **argv) {
	// What must work: its own process, thread and group as owners, a
	// signal to its own child and to its own process group (which holds
	// its sentry: the kernel skips the sentry, and the call succeeds).
	owners("self", getpid(), gettid(), getpgrp());
	report("self setpriority", setpriority(PRIO_PROCESS, 0, 1));
	report("self setpriority thread", setpriority(PRIO_PROCESS, gettid(), 1));
	signal(SIGIO, onSIGIO);
	signal(SIGRTMIN, onSIGIO);
	sigio("self", getpid(), 0, "0");
	sigio("self", getpid(), SIGRTMIN, "34");
	printf("self sigios received: %d\n", sigios);
	signal(SIGUSR1, onUSR1);
	report("self kill group", kill(0, SIGUSR1));
	pid_t child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	report("child kill", kill(child, SIGKILL));
	int st;
	waitpid(child, &st, 0);
	printf("child killed: %d\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	if (argc < 2)
		return 0;
	pid_t other = atoi(argv[1]);
	pid_t parent = getppid();
	owners("other", other, lastThread(other), getpgid(other));
	owners("own", parent, lastThread(parent), getpgid(parent));
	sigios_to("other", other);
	sigios_to("own", parent);
	signals("other", other, lastThread(other));
	signals("own", parent, lastThread(parent));
	starve("other", other, lastThread(other), getpgid(other));
	starve("own", parent, lastThread(parent), getpgid(parent));
	return 0;
}
