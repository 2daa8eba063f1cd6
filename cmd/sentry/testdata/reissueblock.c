/* A guest whose own seccomp filter fails the calls the sentry reissues
 * for it (it outranks the sentry's trap, so no stop comes). The sentry
 * runs a file of its tmpfs by installing a descriptor of it and having
 * the guest issue execveat(fd, "", ..., AT_EMPTY_PATH), and closes that
 * descriptor again with a reissued close_range if the exec fails. With
 * those failed by the guest's filter: the descriptor left behind must not
 * be readable (it let a caller who may only execute a file read it), and
 * every descriptor left must be one the sentry knows (a file of the
 * tmpfs, not of the store behind it); the guest's own next execveat must
 * run as its own call (it ran on the host unserved, as the sentry's).
 * Natively the filter changes nothing here: execve runs the file and the
 * program prints "ok"; in the sandbox the exec fails (the filter fails
 * the sentry's execveat: a known difference) and it prints each call's
 * errno first. Usage: reissueblock DIR. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Fails every close_range with EPERM, and with execs, execveat whose
 * flags (args[4]) are AT_EMPTY_PATH. */
static void filter(int execs) {
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, execs ? SYS_execveat : ~0u, 0, 2),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[4])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AT_EMPTY_PATH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog p = {sizeof f / sizeof f[0], f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p)) {
		perror("seccomp");
		exit(1);
	}
}

/* Every descriptor above 2 must be unreadable as an ELF image and on the
 * device of dir (the tmpfs), or not the executable at all. */
static int check_fds(const char *dir, const char *what) {
	struct stat d, st;
	int bad = 0;
	if (stat(dir, &d))
		return 1;
	for (int fd = 3; fd < 256; fd++) {
		if (fstat(fd, &st))
			continue;
		char b[4];
		if (S_ISREG(st.st_mode) && pread(fd, b, 4, 0) == 4 && memcmp(b, "\177ELF", 4) == 0) {
			printf("%s: fd %d reads the executable\n", what, fd);
			bad = 1;
		}
		if (S_ISREG(st.st_mode) && st.st_dev != d.st_dev && st.st_nlink == 1 && st.st_size < 64) {
			printf("%s: fd %d is a file of another device (dev %lx)\n", what, fd, (unsigned long)st.st_dev);
			bad = 1;
		}
	}
	return bad;
}

int main(int argc, char **argv) {
	if (argc == 2 && strcmp(argv[1], "ran") == 0)
		return 42;
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 2)
		return 2;
	char exe[4096], bad[4096];
	snprintf(exe, sizeof exe, "%s/rb-exe", argv[1]);
	snprintf(bad, sizeof bad, "%s/rb-bad", argv[1]);
	/* A copy of this program, execute-only. */
	int in = open("/proc/self/exe", O_RDONLY), out = open(exe, O_CREAT | O_WRONLY | O_TRUNC, 0700);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, n) != n)
			return 1;
	close(in);
	close(out);
	chmod(exe, 0111);
	out = open(bad, O_CREAT | O_WRONLY | O_TRUNC, 0755);
	if (write(out, "\177ELFjunkjunkjunk", 16) != 16)
		return 1;
	close(out);

	int status = 0;
	pid_t p = fork();
	if (p == 0) {
		filter(1);
		char *av[] = {exe, "ran", NULL}, *ev[] = {NULL};
		execve(exe, av, ev);
		/* Here only in the sandbox, where the exec goes through
		 * execveat(AT_EMPTY_PATH), which the filter fails. */
		printf("execve: %s\n", strerrorname_np(errno));
		if (check_fds(argv[1], "exec-only"))
			_exit(1);
		/* The guest's own execveat of the file is served as its own
		 * (and fails the same way); run unserved, as the reissue it
		 * was taken for, the host found /tmp's cover: ENOENT. */
		syscall(SYS_execveat, AT_FDCWD, exe, av, ev, 0);
		printf("own execveat: %s\n", strerrorname_np(errno));
		_exit(3);
	}
	if (waitpid(p, &status, 0) != p || !WIFEXITED(status) || (WEXITSTATUS(status) != 42 && WEXITSTATUS(status) != 3)) {
		printf("exec-only: child status %x, want exit 42 (ran) or 3\n", status);
		return 1;
	}
	p = fork();
	if (p == 0) {
		/* The exec fails (ENOEXEC), and the close of its descriptor. */
		filter(0);
		char *av[] = {bad, NULL}, *ev[] = {NULL};
		execve(bad, av, ev);
		/* ENOEXEC natively; in the sandbox the errno of the close
		 * the filter failed (the guest returns from it). */
		if (errno != ENOEXEC)
			printf("bad image: %s\n", strerrorname_np(errno));
		_exit(check_fds(argv[1], "bad image"));
	}
	if (waitpid(p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 1;
	unlink(exe);
	unlink(bad);
	printf("ok\n");
	return 0;
}
