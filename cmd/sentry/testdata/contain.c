// contain: a hostile guest's ways around the sandbox's tmpfs (issue #12),
// one subcommand each. Every line it prints is "name result" where result
// is "ok", a return value or an errno name, so that the test compares
// lines. U is a name unique to the test run: the host side checks that no
// host file of that name appeared.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/landlock.h>
#include <linux/loop.h>
#include <linux/mount.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/quota.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/fanotify.h>
#include <unistd.h>

static const char *U;

static const char *ename(int e) {
	static char buf[32];
	switch (e) {
#define E(x) case x: return #x;
	E(EPERM) E(ENOENT) E(ESRCH) E(EINTR) E(EIO) E(ENXIO) E(E2BIG) E(EBADF)
	E(ECHILD) E(EAGAIN) E(ENOMEM) E(EACCES) E(EFAULT) E(ENOTBLK) E(EBUSY)
	E(EEXIST) E(EXDEV) E(ENODEV) E(ENOTDIR) E(EISDIR) E(EINVAL) E(ENFILE)
	E(EMFILE) E(ENOTTY) E(ETXTBSY) E(EFBIG) E(ENOSPC) E(ESPIPE) E(EROFS)
	E(ENAMETOOLONG) E(ENOSYS) E(ENOTEMPTY) E(ELOOP) E(EOPNOTSUPP) E(EBADFD)
	E(ECONNREFUSED) E(ENOTSOCK) E(EOVERFLOW) E(ESTALE) E(EDESTADDRREQ)
	E(ENOBUFS) E(EADDRINUSE) E(ENOTCONN) E(EPROTOTYPE)
#undef E
	}
	snprintf(buf, sizeof buf, "errno%d", e);
	return buf;
}

// say prints name and the result of a call that returns -1 on error.
static long say(const char *name, long r) {
	if (r < 0)
		printf("%s %s\n", name, ename(errno));
	else
		printf("%s ok\n", name);
	fflush(stdout);
	return r;
}

static char *cat(const char *a, const char *b) {
	char *s = malloc(strlen(a) + strlen(b) + 1);
	strcpy(s, a);
	strcat(s, b);
	return s;
}

// tmp is "/tmp/" U suffix.
static char *tmp(const char *suffix) { return cat(cat("/tmp/", U), suffix); }

// content prints what the sandbox's file path holds.
static void content(const char *name, const char *path) {
	char buf[64] = {0};
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		printf("%s %s\n", name, ename(errno));
		return;
	}
	int n = read(fd, buf, sizeof buf - 1);
	close(fd);
	printf("%s \"%.*s\"\n", name, n < 0 ? 0 : n, buf);
	fflush(stdout);
}

// paths: calls that name a file by path, on the guest's /tmp by an absolute
// path and by a relative one from a working directory there. The host
// directory the sandbox started in (the kernel's working directory, which
// stays there after chdir into /tmp) holds U and sub, so that a call the
// sentry let through with the guest's relative path would succeed there.
static int paths(void) {
	mkdir("/tmp/sub", 0755);
	int fd = open(tmp(""), O_CREAT | O_RDWR, 0644);
	if (fd < 0 || chdir("/tmp") < 0)
		return 1;
	say("mount-rel", mount("none", "sub", "tmpfs", 0, NULL));
	say("mount-abs", mount("none", "/tmp/sub", "tmpfs", 0, NULL));
	say("mount-bind-src", mount(U, "/var", NULL, MS_BIND, NULL));
	char *ovl = cat(cat("lowerdir=/tmp/", U), ",upperdir=/var/tmp/u,workdir=/var/tmp/w");
	say("mount-overlay", mount("overlay", "/mnt", "overlay", 0, ovl));
	say("umount-rel", umount2("sub", 0));
	say("pivot_root", syscall(SYS_pivot_root, "sub", "sub"));
	say("chroot-rel", chroot("sub"));
	// Names the host directory does not have: acct or swapon of a host
	// file would change the whole host.
	char *none = cat(U, "-none");
	say("acct", acct(none));
	say("swapon", swapon(none, 0));
	say("swapoff", swapoff(none));
	say("uselib", syscall(SYS_uselib, U));
	say("quotactl", quotactl(QCMD(Q_SYNC, 0), U, 0, NULL));
	// A watch by the relative name is on the sandbox's file, whose write
	// through fd it then reports, not on the host directory's.
	int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	say("inotify_add_watch", inotify_add_watch(in, U, IN_MODIFY));
	char ev[256];
	say("inotify-event", write(fd, "x", 1) == 1 ? read(in, ev, sizeof ev) : -1);
	int fan = fanotify_init(FAN_CLASS_NOTIF, O_RDONLY);
	if (fan >= 0)
		say("fanotify_mark", fanotify_mark(fan, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, U));
	else
		printf("fanotify_mark EOPNOTSUPP\n");
	say("fanotify_mark-fd", fan >= 0 ? fanotify_mark(fan, FAN_MARK_ADD, FAN_OPEN, fd, NULL) : (errno = EOPNOTSUPP, -1));
	struct {
		struct file_handle h;
		char b[128];
	} fh = {.h = {.handle_bytes = 128}};
	int mnt;
	say("name_to_handle_at", syscall(SYS_name_to_handle_at, AT_FDCWD, U, &fh, &mnt, 0));
	fh.h.handle_bytes = 8;
	say("open_by_handle_at-cwd", syscall(SYS_open_by_handle_at, AT_FDCWD, &fh, O_RDONLY));
	say("open_by_handle_at-fd", syscall(SYS_open_by_handle_at, fd, &fh, O_RDONLY));
	say("open_tree", syscall(SYS_open_tree, AT_FDCWD, U, 0));
	say("open_tree-fd", syscall(SYS_open_tree, fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE));
	say("move_mount", syscall(SYS_move_mount, AT_FDCWD, "sub", AT_FDCWD, "/mnt", 0));
	say("fspick", syscall(SYS_fspick, AT_FDCWD, "sub", 0));
	struct mount_attr ma = {0};
	say("mount_setattr", syscall(SYS_mount_setattr, AT_FDCWD, "sub", 0, &ma, sizeof ma));
	int fs = syscall(SYS_fsopen, "ext4", 0);
	say("fsconfig-source", fs < 0 ? fs : syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", U, 0));
	say("fsconfig-path", fs < 0 ? fs : syscall(SYS_fsconfig, fs, FSCONFIG_SET_PATH, "source", U, AT_FDCWD));
	say("fsconfig-fd", fs < 0 ? fs : syscall(SYS_fsconfig, fs, FSCONFIG_SET_FD, "source", NULL, fd));
	char attr[64] = {0};
	say("file_getattr", syscall(468, AT_FDCWD, U, attr, 24, 0));
	say("quotactl_fd", syscall(SYS_quotactl_fd, fd, QCMD(Q_SYNC, 0), 0, NULL));
	say("cachestat", syscall(451, fd, attr, attr + 16, 0));
	int rs;
	struct landlock_ruleset_attr ra = {.handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE};
	rs = syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
	struct landlock_path_beneath_attr pb = {.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE, .parent_fd = fd};
	say("landlock_add_rule", rs < 0 ? rs : syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0));
	union {
		struct {
			uint64_t pathname;
			uint32_t bpf_fd, file_flags;
			int32_t path_fd;
		} obj;
		char pad[128];
	} ba = {0};
	char *bp = tmp("");
	ba.obj.pathname = (uintptr_t)bp;
	say("bpf-obj-get", syscall(SYS_bpf, 7 /* BPF_OBJ_GET */, &ba, sizeof ba));
	return 0;
}

// uring: io_uring_setup, and if it works, an IORING_OP_OPENAT of /tmp/U
// with O_CREAT; Linux AIO's io_setup.
static int uring(void) {
	struct io_uring_params p = {0};
	int ring = syscall(SYS_io_uring_setup, 4, &p);
	say("io_uring_setup", ring);
	errno = 0;
	say("io_uring_enter", syscall(SYS_io_uring_enter, ring < 0 ? 100 : ring, 0, 0, 0, NULL, 0));
	unsigned long ctx = 0;
	say("io_setup", syscall(SYS_io_setup, 4, &ctx));
	if (ring < 0)
		return 0;
	size_t sqlen = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cqlen = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sqlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
	char *cq = mmap(NULL, cqlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
	struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
		return 1;
	unsigned tail = *(unsigned *)(sq + p.sq_off.tail);
	unsigned idx = tail & *(unsigned *)(sq + p.sq_off.ring_mask);
	struct io_uring_sqe *e = &sqes[idx];
	memset(e, 0, sizeof *e);
	e->opcode = IORING_OP_OPENAT;
	e->fd = AT_FDCWD;
	e->addr = (uintptr_t)tmp("");
	e->open_flags = O_CREAT | O_WRONLY;
	e->len = 0644;
	((unsigned *)(sq + p.sq_off.array))[idx] = idx;
	__atomic_store_n((unsigned *)(sq + p.sq_off.tail), tail + 1, __ATOMIC_RELEASE);
	syscall(SYS_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
	unsigned head = *(unsigned *)(cq + p.cq_off.head);
	struct io_uring_cqe *c = (struct io_uring_cqe *)(cq + p.cq_off.cqes) + (head & *(unsigned *)(cq + p.cq_off.ring_mask));
	printf("uring-openat %d\n", c->res);
	return 0;
}

// notifyListener answers every notification of the guest's own listener
// with CONTINUE: the call runs as if no filter were there.
static void *notifyListener(void *arg) {
	int l = *(volatile int *)arg;
	while (l < 0)
		l = *(volatile int *)arg;
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	for (;;) {
		memset(&req, 0, sizeof req);
		if (ioctl(l, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
			continue;
		memset(&resp, 0, sizeof resp);
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		ioctl(l, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	return NULL;
}

// listener: the guest installs its own filter that reports openat to its
// own listener, which lets every call continue; then opens /tmp/U.
static int listener(void) {
	static volatile int l = -1;
	pthread_t th;
	// Before the filter: this thread is not covered by it.
	pthread_create(&th, NULL, notifyListener, (void *)&l);
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
	int r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	say("seccomp-listener", r);
	if (r >= 0)
		l = r;
	int fd = openat(AT_FDCWD, tmp(""), O_CREAT | O_WRONLY, 0644);
	say("openat", fd);
	if (fd >= 0)
		write(fd, "guest", 5);
	content("sandbox-file", tmp(""));
	fflush(stdout);
	_exit(0);
}

// untraced: a child made with CLONE_UNTRACED opens /tmp/U; clone3 is
// refused.
static int untraced(void) {
	struct {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	} ca = {.flags = CLONE_UNTRACED, .exit_signal = SIGCHLD};
	long r3 = syscall(SYS_clone3, &ca, sizeof ca);
	if (r3 == 0)
		_exit(0);
	say("clone3", r3);
	if (r3 > 0)
		waitpid(r3, NULL, 0);
	long pid = syscall(SYS_clone, CLONE_UNTRACED | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		int fd = open(tmp(""), O_CREAT | O_WRONLY, 0644);
		if (fd < 0)
			_exit(errno);
		write(fd, "child", 5);
		_exit(0);
	}
	say("clone", pid);
	int st;
	waitpid(pid, &st, 0);
	printf("child-exit %s\n", WIFEXITED(st) ? (WEXITSTATUS(st) ? ename(WEXITSTATUS(st)) : "ok") : "killed");
	content("sandbox-file", tmp(""));
	return 0;
}

static pthread_barrier_t bar;
static int sharedFD;

// sameFile prints whether descriptor fd is the file at path to fstat (the
// sentry's inode, not a host object standing in for it).
static void sameFile(const char *name, int fd, const char *path) {
	struct stat a, b;
	if (fstat(fd, &a) < 0 || stat(path, &b) < 0) {
		printf("%s %s\n", name, ename(errno));
		return;
	}
	printf("%s %s\n", name, a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_mode == b.st_mode ? "yes" : "no");
}

static void *writer(void *arg) {
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	say("thread-write", write(sharedFD, "data", 4));
	sameFile("thread-fstat-same", sharedFD, tmp(""));
	return NULL;
}

// unshareFiles: two threads share a table; one unshares it and closes the
// file; the other's write must still reach the file.
static int unshareFiles(void) {
	sharedFD = open(tmp(""), O_CREAT | O_RDWR | O_TRUNC, 0644);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t th;
	pthread_create(&th, NULL, writer, NULL);
	pthread_barrier_wait(&bar);
	say("unshare-files", unshare(CLONE_FILES));
	say("close", close(sharedFD));
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	content("file", tmp(""));
	return 0;
}

static const char *hostDir;

static void *creator(void *arg) {
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	say("thread-creat", open(cat(U, "-x"), O_CREAT | O_WRONLY, 0644));
	return NULL;
}

// unshareFS: two threads share their working directory, /tmp; one
// unshares it and moves to a host directory; the other's relative create
// must still land in /tmp.
static int unshareFS(void) {
	if (chdir("/tmp") < 0)
		return 1;
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t th;
	pthread_create(&th, NULL, creator, NULL);
	pthread_barrier_wait(&bar);
	say("unshare-fs", unshare(CLONE_FS));
	say("chdir", chdir(hostDir));
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	struct stat st;
	say("in-sandbox-tmp", stat(tmp("-x"), &st));
	return 0;
}

static void writeFile(const char *path, const char *s) {
	int fd = open(path, O_WRONLY);
	if (fd >= 0) {
		write(fd, s, strlen(s));
		close(fd);
	}
}

// mountns: a mount namespace of the guest's own (with a user namespace
// when not root) where a mount on a host directory holds a symlink to
// /tmp: the sentry would resolve the path in its own namespace, the kernel
// in the guest's. Joining a mount namespace by setns is refused too.
static int mountns(void) {
	say("setns-mnt", setns(open("/proc/self/ns/mnt", O_RDONLY), 0));
	uid_t uid = getuid(), gid = getgid();
	int flags = CLONE_NEWNS | (uid ? CLONE_NEWUSER : 0);
	if (say("unshare-newns", unshare(flags)) < 0)
		return 0;
	if (uid) {
		char m[64];
		writeFile("/proc/self/setgroups", "deny");
		snprintf(m, sizeof m, "0 %d 1", uid);
		writeFile("/proc/self/uid_map", m);
		snprintf(m, sizeof m, "0 %d 1", gid);
		writeFile("/proc/self/gid_map", m);
	}
	mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
	if (say("mount", mount("none", hostDir, "tmpfs", 0, NULL)) < 0)
		return 0;
	say("symlink", symlink("/tmp", cat(hostDir, "/l")));
	say("open-via-link", open(cat(cat(hostDir, "/l/"), U), O_CREAT | O_WRONLY, 0644));
	return 0;
}

// covers: remove or change the cover over /tmp, the sandbox's directory,
// behind which the host's /tmp lies: unmount it (both ways), make it
// writable, and put another tmpfs over it. Then a file in /tmp: where it
// lands tells whether the host's directory came back.
static int covers(void) {
	say("umount", umount2("/tmp", 0));
	say("umount-detach", umount2("/tmp", MNT_DETACH));
	say("remount-rw", mount(NULL, "/tmp", NULL, MS_REMOUNT | MS_BIND, NULL));
	say("mount-over", mount("none", "/tmp", "tmpfs", 0, NULL));
	say("create", open(cat("/tmp/", U), O_CREAT | O_WRONLY, 0644));
	return 0;
}

// sentryproc: the sentry's own /proc/PID (the probe's parent: it runs
// as the first guest process), whose threads pass every ptrace check on
// it: its memory and descriptors, by its own path (the guest's call) and
// by paths the sentry resolves or opens itself (through /tmp, through a
// symlink in /tmp, through a descriptor's magic link).
static int sentryproc(void) {
	char p[128];
	pid_t s = getppid();
	snprintf(p, sizeof p, "/proc/%d/mem", s);
	say("mem", open(p, O_RDWR));
	snprintf(p, sizeof p, "/tmp/../proc/%d/mem", s);
	say("mem-via-tmp", open(p, O_RDWR));
	snprintf(p, sizeof p, "/proc/%d/mem", s);
	symlink(p, tmp("-memlink"));
	say("mem-via-symlink", open(tmp("-memlink"), O_RDWR));
	snprintf(p, sizeof p, "/tmp/../proc/%d/task/%d/mem", s, s);
	say("task-mem-via-tmp", open(p, O_RDWR));
	snprintf(p, sizeof p, "/tmp/../proc/%d/root/", s);
	say("root-via-tmp", open(p, O_RDONLY | O_DIRECTORY));
	int direct = 0, viaTmp = 0;
	for (int n = 0; n < 64; n++) {
		snprintf(p, sizeof p, "/proc/%d/fd/%d", s, n);
		int fd = open(p, O_RDONLY | O_NONBLOCK);
		if (fd >= 0) {
			direct++;
			close(fd);
		}
		snprintf(p, sizeof p, "/tmp/../proc/%d/fd/%d", s, n);
		fd = open(p, O_RDONLY | O_NONBLOCK);
		if (fd >= 0) {
			viaTmp++;
			close(fd);
		}
	}
	printf("fds-direct %d\nfds-via-tmp %d\n", direct, viaTmp);
	return 0;
}

// loopIoctl opens the loop device, makes one request and detaches what
// it attached (the last close of an auto-clearing device detaches it).
static long loopIoctl(const char *name, const char *dev, unsigned long req, void *arg) {
	int lfd = open(dev, O_RDWR | O_CLOEXEC);
	if (lfd < 0) {
		printf("open-loop %s\n", ename(errno));
		return -1;
	}
	long r = say(name, ioctl(lfd, req, arg));
	if (r == 0)
		ioctl(lfd, LOOP_CLR_FD, 0);
	close(lfd);
	return r;
}

// loop: the guest hands a host loop device (argv) a virtual fd. Whatever
// the guest attached it detaches at once, so the test never has to touch
// a device it did not attach; a device another process took meanwhile
// fails the guest's ioctl with EBUSY and is left alone.
static int loop(const char *dev, const char *backing) {
	int fd = open(tmp(""), O_CREAT | O_RDWR | O_TRUNC, 0644);
	ftruncate(fd, 1 << 20);
	loopIoctl("LOOP_SET_FD", dev, LOOP_SET_FD, (void *)(long)fd);
	struct loop_config lc = {.fd = fd};
	loopIoctl("LOOP_CONFIGURE", dev, LOOP_CONFIGURE, &lc);
	// LOOP_CHANGE_FD needs a read-only device of the same size (the
	// placeholder must have the file's size to be taken: mapping the
	// file gave a shadow placeholder its data).
	mmap(NULL, 1 << 20, PROT_READ, MAP_SHARED, fd, 0);
	int bfd = open(backing, O_RDONLY);
	int lfd = open(dev, O_RDWR | O_CLOEXEC);
	if (say("LOOP_SET_FD-host", ioctl(lfd, LOOP_SET_FD, bfd)) == 0) {
		say("LOOP_CHANGE_FD", ioctl(lfd, LOOP_CHANGE_FD, fd));
		ioctl(lfd, LOOP_CLR_FD, 0);
	}
	close(lfd);
	return 0;
}

// clone: reflinks from a virtual fd into a host file (argv, on a host
// tmpfs, as the placeholder's shadow is).
static int reflink(const char *host) {
	int fd = open(tmp(""), O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "data", 4);
	int hfd = open(host, O_RDWR);
	say("FICLONE", ioctl(hfd, FICLONE, fd));
	struct file_clone_range r = {.src_fd = fd, .src_length = 4};
	say("FICLONERANGE", ioctl(hfd, FICLONERANGE, &r));
	return 0;
}

// scm: a virtual fd sent over a socket; datagrams sent by sendmsg and
// sendmmsg to a socket bound in /tmp and to a path only the host has.
static int scm(void) {
	int sv[2];
	socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	int fd = open(tmp(""), O_CREAT | O_RDWR | O_TRUNC, 0644);
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = "x", .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (say("sendmsg-rights", sendmsg(sv[0], &m, 0)) >= 0) {
		char rb[CMSG_SPACE(sizeof(int))];
		char d;
		struct iovec riov = {.iov_base = &d, .iov_len = 1};
		struct msghdr rm = {.msg_iov = &riov, .msg_iovlen = 1, .msg_control = rb, .msg_controllen = sizeof rb};
		recvmsg(sv[1], &rm, 0);
		int got;
		memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&rm)), sizeof got);
		say("write-received", write(got, "data", 4));
		content("file", tmp(""));
	}

	int srv = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "/tmp/%s.s", U);
	say("bind", bind(srv, (void *)&a, sizeof a));
	int cl = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct msghdr to = {.msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &iov, .msg_iovlen = 1};
	say("sendmsg-sandbox", sendmsg(cl, &to, 0));
	struct mmsghdr mm[2] = {{.msg_hdr = to}, {.msg_hdr = to}};
	int sent = 0;
	for (int i = 0; i < 3 && sent < 2; i++) {
		int n = sendmmsg(cl, mm + sent, 2 - sent, 0);
		if (n <= 0)
			break;
		sent += n;
	}
	printf("sendmmsg-sandbox %d\n", sent);
	char d[4];
	int got = 0;
	while (recv(srv, d, sizeof d, MSG_DONTWAIT) > 0)
		got++;
	printf("received %d\n", got);

	struct sockaddr_un h = {.sun_family = AF_UNIX};
	snprintf(h.sun_path, sizeof h.sun_path, "/tmp/%s.host", U);
	struct msghdr toh = {.msg_name = &h, .msg_namelen = sizeof h, .msg_iov = &iov, .msg_iovlen = 1};
	say("sendmsg-host-only", sendmsg(cl, &toh, 0));
	struct mmsghdr mh = {.msg_hdr = toh};
	say("sendmmsg-host-only", sendmmsg(cl, &mh, 1, 0));
	return 0;
}

// secret: paths the sentry cannot read (memfd_secret memory) but the host
// can: bind, connect, and chroot (root) to /tmp.
static int secret(void) {
	int sfd = syscall(SYS_memfd_secret, 0);
	if (sfd < 0) {
		printf("memfd_secret %s\n", ename(errno));
		return 0;
	}
	ftruncate(sfd, 4096);
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
	if (p == MAP_FAILED)
		return 1;
	struct sockaddr_un *a = (void *)p;
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof a->sun_path, "/tmp/%s.s", U);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	say("bind-secret", bind(s, (void *)a, sizeof *a));
	say("connect-secret", connect(socket(AF_UNIX, SOCK_STREAM, 0), (void *)a, sizeof *a));
	strcpy(p + 512, "/tmp");
	if (say("chroot-secret", chroot(p + 512)) == 0)
		say("open-after-chroot", open(cat("/", U), O_CREAT | O_WRONLY, 0644));
	strcpy(p + 1024, "sub");
	mkdir("/tmp/sub", 0755);
	chdir("/tmp");
	say("mount-secret", mount("none", p + 1024, "tmpfs", 0, NULL));
	return 0;
}

// pidfd: a virtual fd of a child taken with pidfd_getfd, written to.
static int pidfd(void) {
	int pfd[2];
	pipe(pfd);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(tmp(""), O_CREAT | O_RDWR | O_TRUNC, 0644);
		write(pfd[1], &fd, sizeof fd);
		pause();
		_exit(0);
	}
	int fd;
	read(pfd[0], &fd, sizeof fd);
	int p = syscall(SYS_pidfd_open, pid, 0);
	int got = syscall(SYS_pidfd_getfd, p, fd, 0);
	say("pidfd_getfd", got);
	say("write", write(got, "got", 3));
	sameFile("fstat-same", got, tmp(""));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	content("file", tmp(""));
	return 0;
}

// fcntlhigh: fcntl's cmd is an unsigned int. Only the commands the sentry
// follows are trapped, so a duplicating command with the register's upper
// half set must still be seen as the kernel reads it: otherwise the copy
// is a placeholder the sentry does not know (its fstat showed the host's
// backing) and the file is unseen through it.
static int fcntlhigh(void) {
	int fd = open(tmp(""), O_CREAT | O_RDWR | O_TRUNC, 0644);
	long d = say("dupfd", syscall(SYS_fcntl, fd, (1UL << 32) | F_DUPFD, 20));
	long c = say("dupfd-cloexec", syscall(SYS_fcntl, fd, (1UL << 32) | F_DUPFD_CLOEXEC, 30));
	say("getfd-cloexec", syscall(SYS_fcntl, c, (1UL << 32) | F_GETFD) == FD_CLOEXEC ? 0 : -1);
	close(fd);
	say("write", write(d, "high", 4));
	sameFile("dupfd-same", d, tmp(""));
	sameFile("cloexec-same", c, tmp(""));
	content("file", tmp(""));
	return 0;
}

// ioctlhigh: ioctl's request is an unsigned int. A notified ioctl stops
// for a dedupe (the sentry copies its argument for the host, which only a
// stop can carry), so a dedupe with the register's upper half set must
// stop too, as the kernel reads the request: notified, the handler has no
// stack to copy to (EFAULT), and a rewrite would be refused (ENOSYS). A host source (in /var/tmp, whose
// file system dedupes nothing) and the sandbox's file as destination: the
// host's EOPNOTSUPP, the status untouched, as natively.
static int ioctlhigh(void) {
	char *src = cat(cat("/var/tmp/", U), "-dedupe");
	int s = open(src, O_CREAT | O_RDWR | O_TRUNC, 0644);
	int d = open(tmp(""), O_CREAT | O_RDWR | O_TRUNC, 0644);
	unlink(src);
	if (s < 0 || d < 0 || write(s, "same", 4) != 4 || write(d, "same", 4) != 4)
		return 2;
	for (int high = 0; high < 2; high++) {
		struct {
			struct file_dedupe_range r;
			struct file_dedupe_range_info info;
		} a = {0};
		a.r.src_length = 4;
		a.r.dest_count = 1;
		a.info.dest_fd = d;
		say(high ? "dedupe-high" : "dedupe", syscall(SYS_ioctl, s, (high ? 1UL << 32 : 0) | FIDEDUPERANGE, &a));
		printf("%s %s\n", high ? "dedupe-high-status" : "dedupe-status",
		       a.info.status < 0 ? ename(-a.info.status) : "same");
	}
	return 0;
}

// race (item 4): a second thread flips a path between a host decoy,
// "/var/tmp/U-race", and "/////tmp/U-race" (the first four bytes, one
// aligned store) while this thread creates, touches, makes directories,
// renames and removes by it. The sentry judges the decoy a host path and lets the
// kernel run the call, which reads the guest's memory again: the race
// can win. What the kernel then resolves is the guest's own mount
// namespace, where /tmp is the empty read-only cover: never the host's
// /tmp. Prints how many calls failed with EROFS (won races that met the
// cover) only to stderr, since the count is the scheduler's.
static volatile int raceStop;
static char racePath[256] __attribute__((aligned(8)));

static void *flipper(void *arg) {
	uint32_t decoy, target;
	memcpy(&decoy, "/var", 4);
	memcpy(&target, "////", 4);
	while (!raceStop) {
		__atomic_store_n((uint32_t *)racePath, target, __ATOMIC_RELAXED);
		__atomic_store_n((uint32_t *)racePath, decoy, __ATOMIC_RELAXED);
	}
	return arg;
}

static int race(void) {
	snprintf(racePath, sizeof racePath, "/var/tmp/%s-race", U);
	char to[256];
	snprintf(to, sizeof to, "/var/tmp/%s-race2", U);
	pthread_t th;
	pthread_create(&th, NULL, flipper, NULL);
	int erofs = 0;
	for (int i = 0; i < 2000; i++) {
		int fd = open(racePath, O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
		else if (errno == EROFS)
			erofs++;
		if (utimensat(AT_FDCWD, racePath, NULL, 0) < 0 && errno == EROFS)
			erofs++;
		if (unlink(racePath) < 0 && errno == EROFS)
			erofs++;
		if (mkdir(racePath, 0755) < 0 && errno == EROFS)
			erofs++;
		if (rmdir(racePath) < 0 && errno == EROFS)
			erofs++;
		if (mknod(racePath, S_IFREG | 0644, 0) < 0 && errno == EROFS)
			erofs++;
		if (rename(racePath, to) < 0 && errno == EROFS)
			erofs++;
		unlink(to);
		unlink(racePath);
	}
	raceStop = 1;
	pthread_join(th, NULL);
	fprintf(stderr, "race: %d calls met the cover\n", erofs);
	printf("race-done ok\n");
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: contain CMD U [ARG...]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	U = argv[2];
	const char *cmd = argv[1];
	if (!strcmp(cmd, "paths"))
		return paths();
	if (!strcmp(cmd, "uring"))
		return uring();
	if (!strcmp(cmd, "listener"))
		return listener();
	if (!strcmp(cmd, "untraced"))
		return untraced();
	if (!strcmp(cmd, "unshare-files"))
		return unshareFiles();
	if (!strcmp(cmd, "unshare-fs") && argc > 3) {
		hostDir = argv[3];
		return unshareFS();
	}
	if (!strcmp(cmd, "mountns") && argc > 3) {
		hostDir = argv[3];
		return mountns();
	}
	if (!strcmp(cmd, "covers"))
		return covers();
	if (!strcmp(cmd, "sentryproc"))
		return sentryproc();
	if (!strcmp(cmd, "loop") && argc > 4)
		return loop(argv[3], argv[4]);
	if (!strcmp(cmd, "reflink") && argc > 3)
		return reflink(argv[3]);
	if (!strcmp(cmd, "scm"))
		return scm();
	if (!strcmp(cmd, "secret"))
		return secret();
	if (!strcmp(cmd, "pidfd"))
		return pidfd();
	if (!strcmp(cmd, "fcntlhigh"))
		return fcntlhigh();
	if (!strcmp(cmd, "ioctlhigh"))
		return ioctlhigh();
	if (!strcmp(cmd, "race"))
		return race();
	fprintf(stderr, "contain: unknown command %s\n", cmd);
	return 2;
}
