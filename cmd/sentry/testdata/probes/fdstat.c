// fdstat is a differential probe: it runs a list of cases on files inside
// DIR (which it creates) and prints one line per case, "name: fields". Run
// natively on a kernel tmpfs and in the sandbox on the sentry's tmpfs, the
// two outputs must be identical, so nothing that legitimately differs
// between the two is printed raw: descriptor numbers are relative to the
// lowest free one at start, and st_dev, st_ino, the times and stx_mnt_id
// only appear as relations (equal to the dev of DIR, to the ino of the file
// opened before, mtime moved, ...).
//
// Usage: fdstat DIR
//        fdstat exec-child DIR FD...   (internal: the far side of an exec)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// KO_LARGEFILE is the kernel's O_LARGEFILE (glibc's is 0 on 64-bit).
#define KO_LARGEFILE 0100000

static const char *dir;
static int base;               // the lowest free descriptor at start
static struct stat dirst;      // DIR
static struct stat rootst;     // "/"
// BAD is an unmapped address; volatile keeps gcc from reasoning about it.
static void *volatile bad_ptr = (void *)1;
#define BAD (bad_ptr)

// ---- output: one write(2) per line, no stdio (forks and execs stay clean).

static char lb[16384];
static int ll;

static void add(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	ll += vsnprintf(lb + ll, sizeof lb - ll, fmt, ap);
	va_end(ap);
	if (ll >= (int)sizeof lb - 1)
		ll = sizeof lb - 2;
}

static void begin(const char *name) {
	ll = 0;
	add("%s:", name);
}

static void end(void) {
	lb[ll++] = '\n';
	if (write(1, lb, ll) != ll)
		_exit(99);
}

static const char *en(int e) {
	if (e == 0)
		return "OK";
	const char *s = strerrorname_np(e);
	return s ? s : "E?";
}

// r and e hold the last call's result and errno.
static long r;
static int e;
#define T(expr) ((void)(errno = 0, r = (long)(expr), e = r < 0 ? errno : 0))

static void ret(void) { add(" ret=%ld err=%s", r, en(e)); }

// retfd prints a descriptor result relative to base.
static void retfd(void) {
	if (r < 0)
		add(" ret=%ld err=%s", r, en(e));
	else
		add(" fd=base+%ld", r - base);
}

// simple prints a case that is a bare call.
#define SIMPLE(name, expr) \
	do { \
		T(expr); \
		begin(name); \
		ret(); \
		end(); \
	} while (0)

#define SIMPLEFD(name, expr) \
	do { \
		T(expr); \
		begin(name); \
		retfd(); \
		end(); \
	} while (0)

static const char *yesno(int b) { return b ? "yes" : "no"; }

static int tseq(struct timespec a, struct timespec b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }
static int tsgt(struct timespec a, struct timespec b) {
	return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

// addst prints a stat buffer; ref (may be NULL) is the file the ino is
// compared with.
static void addst(const struct stat *st, const struct stat *ref) {
	add(" mode=0%o nlink=%lu size=%ld blocks=%ld blksize=%ld uid=%u gid=%u rdev=%lu",
	    st->st_mode, (unsigned long)st->st_nlink, (long)st->st_size, (long)st->st_blocks,
	    (long)st->st_blksize, st->st_uid, st->st_gid, (unsigned long)st->st_rdev);
	add(" devIsDir=%s devNotRoot=%s", yesno(st->st_dev == dirst.st_dev), yesno(st->st_dev != rootst.st_dev));
	if (ref)
		add(" sameIno=%s", yesno(st->st_ino == ref->st_ino && st->st_dev == ref->st_dev));
}

// addamc prints whether atime, mtime and ctime are equal: only for files
// nothing touched since their creation (a write in the same clock tick
// may or may not move them).
static void addamc(const struct stat *st) {
	add(" amcEqual=%s", yesno(tseq(st->st_atim, st->st_mtim) && tseq(st->st_mtim, st->st_ctim)));
}

// stcase prints a stat result: ret, and the fields when it worked.
static void stcase(const char *name, const struct stat *st, const struct stat *ref) {
	begin(name);
	ret();
	if (r == 0)
		addst(st, ref);
	end();
}

// freshcase is stcase for a file nothing touched since its creation.
static void freshcase(const char *name, const struct stat *st, const struct stat *ref) {
	begin(name);
	ret();
	if (r == 0) {
		addst(st, ref);
		addamc(st);
	}
	end();
}

static long sc_fstat(int fd, void *st) { return syscall(SYS_fstat, fd, st); }
static long sc_fstatat(int dfd, const char *p, void *st, int fl) { return syscall(SYS_newfstatat, dfd, p, st, fl); }
static long sc_statx(int dfd, const char *p, int fl, unsigned mask, void *stx) {
	return syscall(SYS_statx, dfd, p, fl, mask, stx);
}

static struct timespec stxts(struct statx_timestamp t) { return (struct timespec){t.tv_sec, t.tv_nsec}; }

static void addstx(const struct statx *x, const struct stat *ref) {
	add(" mask=0x%x attr=0x%llx attrmask=0x%llx mode=0%o nlink=%u size=%llu blocks=%llu blksize=%u uid=%u gid=%u",
	    x->stx_mask, (unsigned long long)x->stx_attributes, (unsigned long long)x->stx_attributes_mask,
	    x->stx_mode, x->stx_nlink, (unsigned long long)x->stx_size, (unsigned long long)x->stx_blocks,
	    x->stx_blksize, x->stx_uid, x->stx_gid);
	add(" rdev=%u:%u devIsDir=%s", x->stx_rdev_major, x->stx_rdev_minor,
	    yesno(makedev(x->stx_dev_major, x->stx_dev_minor) == dirst.st_dev));
	if (ref)
		add(" sameIno=%s", yesno(x->stx_ino == ref->st_ino));
	add(" btimeSet=%s mtimeSet=%s ctimeSet=%s atimeSet=%s", yesno(x->stx_btime.tv_sec != 0),
	    yesno(x->stx_mtime.tv_sec != 0), yesno(x->stx_ctime.tv_sec != 0), yesno(x->stx_atime.tv_sec != 0));
	add(" mntIdSet=%s", yesno(x->stx_mnt_id != 0));
}

static void stxcase(const char *name, const struct statx *x, const struct stat *ref) {
	begin(name);
	ret();
	if (r == 0)
		addstx(x, ref);
	end();
}

// p joins DIR and name; a few results can be live at once.
static char *p(const char *name) {
	static char bufs[8][PATH_MAX + 64];
	static int n;
	char *b = bufs[n++ % 8];
	snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
	return b;
}

// mkfile creates name with content and returns nothing; failures show up
// in the cases that use it.
static void mkfile(const char *name, const char *content) {
	int fd = open(p(name), O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0)
		return;
	if (content && write(fd, content, strlen(content)) < 0) {
	}
	close(fd);
}

static void pause_ms(int ms) {
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

// fdflags prints F_GETFD of fd.
static void addgetfd(const char *label, int fd) {
	T(fcntl(fd, F_GETFD));
	add(" %s=%ld/%s", label, r, en(e));
}

// ---- cases

static void case_lowest_fd(void) {
	int a = open(p("low1"), O_CREAT | O_RDWR, 0644);
	int b = open(p("low2"), O_CREAT | O_RDWR, 0644);
	int c = open(p("low3"), O_CREAT | O_RDWR, 0644);
	begin("fd.lowest.three");
	add(" a=base+%d b=base+%d c=base+%d", a - base, b - base, c - base);
	end();
	SIMPLE("fd.lowest.close_middle", close(b));
	int d = open(p("low4"), O_CREAT | O_RDWR, 0644);
	begin("fd.lowest.reopen");
	add(" d=base+%d reusesB=%s", d - base, yesno(d == b));
	end();
	close(a);
	SIMPLEFD("fd.lowest.after_close_first", open(p("low1"), O_RDONLY));
	int f = r;
	close(c);
	close(d);
	close(f);
	SIMPLEFD("fd.lowest.all_closed", open(p("low2"), O_RDONLY));
	close(r);
}

static void case_emfile(void) {
	struct rlimit old, lim;
	getrlimit(RLIMIT_NOFILE, &old);
	lim = old;
	lim.rlim_cur = base + 3;
	SIMPLE("emfile.setrlimit", setrlimit(RLIMIT_NOFILE, &lim));
	int fds[3];
	begin("emfile.fill");
	for (int i = 0; i < 3; i++) {
		char n[32];
		snprintf(n, sizeof n, "emfile%d", i);
		T(fds[i] = open(p(n), O_CREAT | O_RDWR, 0644));
		retfd();
	}
	end();
	SIMPLEFD("emfile.open_creat", open(p("emfile_new"), O_CREAT | O_RDWR, 0644));
	struct stat st;
	T(stat(p("emfile_new"), &st));
	stcase("emfile.creat_left_nothing", &st, NULL);
	SIMPLEFD("emfile.open_existing", open(p("emfile0"), O_RDONLY));
	SIMPLEFD("emfile.creat_excl", open(p("emfile_excl"), O_CREAT | O_EXCL | O_RDWR, 0644));
	T(stat(p("emfile_excl"), &st));
	stcase("emfile.excl_left_nothing", &st, NULL);
	SIMPLEFD("emfile.dup", dup(fds[0]));
	SIMPLEFD("emfile.dupfd_at_limit", fcntl(fds[0], F_DUPFD, base + 3));
	SIMPLEFD("emfile.dup2_at_limit", dup2(fds[0], base + 3));
	SIMPLE("emfile.close_one", close(fds[1]));
	SIMPLEFD("emfile.open_after_close", open(p("emfile_new"), O_CREAT | O_RDWR, 0644));
	fds[1] = r;
	SIMPLE("emfile.restore", setrlimit(RLIMIT_NOFILE, &old));
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}

// exec_child is the far side of the exec: argv = exec-child DIR FD...
static int exec_child(int argc, char **argv) {
	dir = argv[2];
	stat(dir, &dirst);
	stat("/", &rootst);
	// base is not known here: descriptor numbers are passed relative.
	base = atoi(argv[3]);
	for (int i = 4; i < argc; i++) {
		int fd = atoi(argv[i]);
		char name[64];
		snprintf(name, sizeof name, "cloexec.child.fd%d", i - 4);
		begin(name);
		addgetfd("getfd", fd);
		struct stat st;
		T(sc_fstat(fd, &st));
		ret();
		if (r == 0)
			addst(&st, NULL);
		T(lseek(fd, 0, SEEK_CUR));
		add(" pos=%ld/%s", r, en(e));
		end();
	}
	return 0;
}

static void case_cloexec(char *self) {
	int a = open(p("cloexec_a"), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
	int b = open(p("cloexec_b"), O_CREAT | O_RDWR, 0644);
	if (write(a, "12345", 5) < 0 || write(b, "1234567", 7) < 0) {
	}
	int c = dup(a);                                     // dup clears FD_CLOEXEC
	int d = open(p("cloexec_b"), O_RDONLY);             // marked by F_SETFD below
	int f = fcntl(b, F_DUPFD_CLOEXEC, 0);               // a cloexec dup of b
	int g = open(p("cloexec_b"), O_RDONLY | O_CLOEXEC); // cleared by FIONCLEX
	int h = open(p("cloexec_a"), O_RDONLY);             // marked by FIOCLEX
	SIMPLE("cloexec.setfd", fcntl(d, F_SETFD, FD_CLOEXEC));
	SIMPLE("cloexec.fionclex", ioctl(g, FIONCLEX));
	SIMPLE("cloexec.fioclex", ioctl(h, FIOCLEX));
	begin("cloexec.parent");
	addgetfd("a", a);
	addgetfd("b", b);
	addgetfd("dupA", c);
	addgetfd("setfdD", d);
	addgetfd("dupfdCloexecB", f);
	addgetfd("fionclexB", g);
	addgetfd("fioclexA", h);
	end();
	pid_t pid = fork();
	if (pid == 0) {
		char fds[7][16], sbase[16];
		int list[7] = {a, b, c, d, f, g, h};
		for (int i = 0; i < 7; i++)
			snprintf(fds[i], sizeof fds[i], "%d", list[i]);
		snprintf(sbase, sizeof sbase, "%d", base);
		execl(self, self, "exec-child", dir, sbase, fds[0], fds[1], fds[2], fds[3], fds[4], fds[5], fds[6],
		      (char *)NULL);
		_exit(127);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	begin("cloexec.child_status");
	add(" exited=%s code=%d", yesno(WIFEXITED(status)), WEXITSTATUS(status));
	end();
	begin("cloexec.parent_after");
	addgetfd("a", a);
	addgetfd("b", b);
	end();
	close(a);
	close(b);
	close(c);
	close(d);
	close(f);
	close(g);
	close(h);
}

static void case_offsets(void) {
	char buf[64];
	int fd = open(p("offsets"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	SIMPLE("offsets.write", write(fd, "0123456789", 10));
	int d = dup(fd);
	SIMPLE("offsets.dup.cur_after_write", lseek(d, 0, SEEK_CUR));
	SIMPLE("offsets.dup.seek_orig", lseek(fd, 3, SEEK_SET));
	SIMPLE("offsets.dup.cur_on_dup", lseek(d, 0, SEEK_CUR));
	SIMPLE("offsets.dup.read_dup", read(d, buf, 2));
	SIMPLE("offsets.dup.cur_on_orig", lseek(fd, 0, SEEK_CUR));
	SIMPLE("offsets.dup.pread_keeps", pread(fd, buf, 4, 1));
	SIMPLE("offsets.dup.cur_after_pread", lseek(d, 0, SEEK_CUR));
	SIMPLE("offsets.dup.setfl_append", fcntl(fd, F_SETFL, O_APPEND));
	begin("offsets.dup.getfl_shared");
	add(" orig=0x%x dup=0x%x", fcntl(fd, F_GETFL) & ~KO_LARGEFILE, fcntl(d, F_GETFL) & ~KO_LARGEFILE);
	end();
	fcntl(fd, F_SETFL, 0);
	lseek(fd, 0, SEEK_SET);
	pid_t pid = fork();
	if (pid == 0) {
		ssize_t n = read(fd, buf, 4);
		close(fd);
		_exit(n == 4 ? 0 : 1);
	}
	int status;
	waitpid(pid, &status, 0);
	begin("offsets.fork.child");
	add(" code=%d", WEXITSTATUS(status));
	end();
	SIMPLE("offsets.fork.parent_cur", lseek(fd, 0, SEEK_CUR));
	SIMPLE("offsets.fork.parent_dup_cur", lseek(d, 0, SEEK_CUR));
	pid = fork();
	if (pid == 0) {
		// The child writes at the shared offset and seeks.
		ssize_t n = write(d, "ab", 2);
		lseek(d, 1, SEEK_END);
		_exit(n == 2 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	SIMPLE("offsets.fork.after_child_seek_end", lseek(fd, 0, SEEK_CUR));
	memset(buf, 0, sizeof buf);
	T(pread(fd, buf, sizeof buf - 1, 0));
	begin("offsets.fork.content");
	ret();
	add(" data=%s", buf);
	end();
	close(fd);
	SIMPLE("offsets.dup.survives_close", lseek(d, 0, SEEK_CUR));
	close(d);
}

static void case_close(void) {
	int fd = open(p("closeme"), O_CREAT | O_RDWR, 0644);
	SIMPLE("close.first", close(fd));
	SIMPLE("close.twice", close(fd));
	SIMPLE("close.minus_one", close(-1));
	SIMPLE("close.never_opened", close(base + 200));
	SIMPLE("close.huge", close(1 << 20));
	SIMPLE("close.read_closed", read(fd, &fd, 1));
	SIMPLE("close.write_closed", write(fd, "x", 1));
	SIMPLEFD("close.reuse", open(p("closeme"), O_RDONLY));
	close(r);
}

static void case_close_range(void) {
	int a = open(p("cr0"), O_CREAT | O_RDWR, 0644);
	int b = open(p("cr1"), O_CREAT | O_RDWR, 0644);
	int c = open(p("cr2"), O_CREAT | O_RDWR, 0644);
	begin("close_range.setup");
	add(" a=base+%d b=base+%d c=base+%d", a - base, b - base, c - base);
	end();
	SIMPLE("close_range.middle", syscall(SYS_close_range, b, b, 0));
	begin("close_range.middle.getfd");
	addgetfd("a", a);
	addgetfd("b", b);
	addgetfd("c", c);
	end();
	SIMPLEFD("close_range.middle.reopen", open(p("cr1"), O_RDWR));
	SIMPLE("close_range.cloexec", syscall(SYS_close_range, a, c, CLOSE_RANGE_CLOEXEC));
	begin("close_range.cloexec.getfd");
	addgetfd("a", a);
	addgetfd("b", b);
	addgetfd("c", c);
	addgetfd("stdout", 1);
	end();
	struct stat st;
	T(sc_fstat(a, &st));
	stcase("close_range.cloexec.fstat_still_open", &st, NULL);
	SIMPLE("close_range.first_gt_last", syscall(SYS_close_range, c, a, 0));
	SIMPLE("close_range.bad_flags", syscall(SYS_close_range, a, c, 0x80));
	SIMPLE("close_range.bad_flags_high", syscall(SYS_close_range, a, c, 1u << 31));
	begin("close_range.einval_kept");
	addgetfd("a", a);
	addgetfd("c", c);
	end();
	SIMPLE("close_range.unshare", syscall(SYS_close_range, c + 10, c + 20, CLOSE_RANGE_UNSHARE));
	SIMPLE("close_range.beyond_table", syscall(SYS_close_range, base + 500, base + 600, 0));
	SIMPLE("close_range.to_max", syscall(SYS_close_range, b, ~0U, 0));
	begin("close_range.to_max.getfd");
	addgetfd("a", a);
	addgetfd("b", b);
	addgetfd("c", c);
	addgetfd("stdout", 1);
	end();
	SIMPLEFD("close_range.to_max.reopen", open(p("cr2"), O_RDWR));
	close(r);
	SIMPLE("close_range.cloexec_to_max", syscall(SYS_close_range, a, ~0U, CLOSE_RANGE_CLOEXEC));
	begin("close_range.cloexec_to_max.getfd");
	addgetfd("a", a);
	end();
	close(a);
}

static void case_fstatat(void) {
	struct stat st, ref, dref;
	mkfile("sa", "abc");
	int fd = open(p("sa"), O_RDWR);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	sc_fstat(fd, &ref);
	sc_fstat(dfd, &dref);
	T(sc_fstat(fd, &st));
	stcase("fstat.file", &st, &ref);
	T(sc_fstat(dfd, &st));
	stcase("fstat.dir", &st, &dirst);
	T(fstat(fd, &st));
	stcase("fstat.glibc", &st, &ref);
	T(sc_fstatat(fd, "", &st, AT_EMPTY_PATH));
	stcase("fstatat.empty_file", &st, &ref);
	T(sc_fstatat(dfd, "", &st, AT_EMPTY_PATH));
	stcase("fstatat.empty_dirfd", &st, &dirst);
	T(sc_fstatat(dfd, "sa", &st, AT_EMPTY_PATH));
	stcase("fstatat.rel_with_empty_flag", &st, &ref);
	T(sc_fstatat(dfd, "sa", &st, 0));
	stcase("fstatat.rel", &st, &ref);
	T(sc_fstatat(dfd, "sa", &st, AT_SYMLINK_NOFOLLOW));
	stcase("fstatat.rel_nofollow", &st, &ref);
	T(sc_fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
	stcase("fstatat.empty_nofollow", &st, &ref);
	T(sc_fstatat(dfd, ".", &st, 0));
	stcase("fstatat.dot", &st, &dirst);
	T(sc_fstatat(AT_FDCWD, p("sa"), &st, 0));
	stcase("fstatat.abs", &st, &ref);
	T(sc_fstatat(fd, p("sa"), &st, 0));
	stcase("fstatat.abs_ignores_filefd", &st, &ref);
	T(sc_fstatat(9999, p("sa"), &st, 0));
	stcase("fstatat.abs_ignores_badfd", &st, &ref);

	struct stat cwd;
	stat(".", &cwd);
	T(sc_fstatat(AT_FDCWD, "", &st, AT_EMPTY_PATH));
	begin("fstatat.cwd_empty");
	ret();
	if (r == 0)
		add(" isdir=%s sameInoAsDot=%s devIsDir=%s", yesno(S_ISDIR(st.st_mode)),
		    yesno(st.st_ino == cwd.st_ino && st.st_dev == cwd.st_dev), yesno(st.st_dev == dirst.st_dev));
	end();
	T(sc_fstatat(AT_FDCWD, "", &st, 0));
	stcase("fstatat.cwd_empty_noflag", &st, NULL);

	T(sc_fstatat(fd, "", &st, 0));
	stcase("fstatat.empty_noflag", &st, NULL);
	T(sc_fstatat(9999, "", &st, 0));
	stcase("fstatat.empty_noflag_badfd", &st, NULL);
	T(sc_fstatat(-5, "", &st, 0));
	stcase("fstatat.empty_noflag_negfd", &st, NULL);
	T(sc_fstatat(fd, "x", &st, 0));
	stcase("fstatat.filefd_rel", &st, NULL);
	T(sc_fstatat(fd, "x", &st, AT_EMPTY_PATH));
	stcase("fstatat.filefd_rel_emptyflag", &st, NULL);
	T(sc_fstatat(9999, "", &st, AT_EMPTY_PATH));
	stcase("fstatat.badfd_empty", &st, NULL);
	T(sc_fstatat(-5, "", &st, AT_EMPTY_PATH));
	stcase("fstatat.negfd_empty", &st, NULL);
	T(sc_fstatat(9999, "sa", &st, 0));
	stcase("fstatat.badfd_rel", &st, NULL);
	int closed = dup(fd);
	close(closed);
	T(sc_fstatat(closed, "", &st, AT_EMPTY_PATH));
	stcase("fstatat.closedfd_empty", &st, NULL);
	T(sc_fstatat(closed, "sa", &st, 0));
	stcase("fstatat.closedfd_rel", &st, NULL);

	memset(&st, 0, sizeof st);
	T(sc_fstatat(fd, NULL, &st, AT_EMPTY_PATH));
	stcase("fstatat.null_empty", &st, &ref);
	T(sc_fstatat(dfd, NULL, &st, AT_EMPTY_PATH));
	stcase("fstatat.null_empty_dirfd", &st, &dirst);
	T(sc_fstatat(fd, NULL, &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
	stcase("fstatat.null_empty_nofollow", &st, &ref);
	T(sc_fstatat(fd, NULL, &st, 0));
	stcase("fstatat.null_noflag", &st, NULL);
	T(sc_fstatat(9999, NULL, &st, AT_EMPTY_PATH));
	stcase("fstatat.null_badfd", &st, NULL);
	T(sc_fstatat(AT_FDCWD, NULL, &st, AT_EMPTY_PATH));
	begin("fstatat.null_cwd");
	ret();
	if (r == 0)
		add(" isdir=%s sameInoAsDot=%s", yesno(S_ISDIR(st.st_mode)), yesno(st.st_ino == cwd.st_ino));
	end();

	T(sc_fstatat(fd, "", BAD, AT_EMPTY_PATH));
	stcase("fstatat.badbuf_empty", &st, NULL);
	T(sc_fstatat(dfd, "sa", BAD, 0));
	stcase("fstatat.badbuf_rel", &st, NULL);
	T(sc_fstatat(AT_FDCWD, p("sa"), BAD, 0));
	stcase("fstatat.badbuf_abs", &st, NULL);
	T(sc_fstat(fd, BAD));
	stcase("fstat.badbuf", &st, NULL);
	T(sc_fstatat(dfd, BAD, &st, 0));
	stcase("fstatat.badpath", &st, NULL);
	T(sc_fstatat(fd, BAD, &st, AT_EMPTY_PATH));
	stcase("fstatat.badpath_emptyflag", &st, NULL);
	T(sc_fstatat(9999, BAD, &st, AT_EMPTY_PATH));
	stcase("fstatat.badpath_badfd", &st, NULL);

	T(sc_fstatat(fd, "", &st, AT_EMPTY_PATH | 0x10000));
	stcase("fstatat.unknown_flag_empty", &st, &ref);
	T(sc_fstatat(dfd, "sa", &st, 0x10000));
	stcase("fstatat.unknown_flag_rel", &st, &ref);
	T(sc_fstatat(dfd, "sa", &st, AT_STATX_FORCE_SYNC));
	stcase("fstatat.statx_sync_flag", &st, &ref);
	T(sc_fstatat(dfd, "sa", &st, AT_NO_AUTOMOUNT));
	stcase("fstatat.no_automount", &st, &ref);

	T(sc_fstatat(dfd, "sa/", &st, 0));
	stcase("fstatat.file_slash", &st, NULL);
	T(sc_fstatat(dfd, "sa/child", &st, 0));
	stcase("fstatat.file_child", &st, NULL);
	T(sc_fstatat(dfd, "sa/.", &st, 0));
	stcase("fstatat.file_dot", &st, NULL);
	T(sc_fstatat(dfd, "nonexistent/../sa", &st, 0));
	stcase("fstatat.nonexistent_dotdot", &st, NULL);
	T(sc_fstatat(dfd, "sa/../sa", &st, 0));
	stcase("fstatat.file_dotdot", &st, NULL);
	T(sc_fstatat(dfd, "missing", &st, 0));
	stcase("fstatat.missing", &st, NULL);
	T(sc_fstatat(dfd, "./sa", &st, 0));
	stcase("fstatat.dot_slash", &st, &ref);
	T(sc_fstatat(dfd, "..", &st, 0));
	begin("fstatat.dotdot");
	ret();
	if (r == 0)
		add(" isdir=%s", yesno(S_ISDIR(st.st_mode)));
	end();
	T(stat("", &st));
	stcase("stat.empty", &st, NULL);
	T(stat(p("sa"), &st));
	stcase("stat.file", &st, &ref);
	T(lstat(p("sa"), &st));
	stcase("lstat.file", &st, &ref);
	T(stat(p("sa/"), &st));
	stcase("stat.file_slash", &st, NULL);
	T(lstat(p("sa/"), &st));
	stcase("lstat.file_slash", &st, NULL);
	T(stat(BAD, &st));
	stcase("stat.badpath", &st, NULL);
	T(stat(p("sa"), BAD));
	stcase("stat.badbuf", &st, NULL);
	close(fd);
	close(dfd);
}

static void case_opath(void) {
	struct stat st, ref;
	mkfile("op", "opath!");
	stat(p("op"), &ref);
	T(open(p("op"), O_PATH));
	int fd = r;
	begin("opath.open");
	retfd();
	end();
	T(sc_fstat(fd, &st));
	stcase("opath.fstat", &st, &ref);
	T(sc_fstatat(fd, "", &st, AT_EMPTY_PATH));
	stcase("opath.fstatat_empty", &st, &ref);
	T(fcntl(fd, F_GETFL));
	begin("opath.getfl");
	add(" flags=0x%lx err=%s", r, en(e));
	end();
	char c;
	SIMPLE("opath.read", read(fd, &c, 1));
	SIMPLE("opath.write", write(fd, "x", 1));
	SIMPLE("opath.pread", pread(fd, &c, 1, 0));
	SIMPLE("opath.lseek", lseek(fd, 0, SEEK_SET));
	SIMPLE("opath.ftruncate", ftruncate(fd, 0));
	SIMPLE("opath.setfl", fcntl(fd, F_SETFL, O_APPEND));
	SIMPLE("opath.getfd", fcntl(fd, F_GETFD));
	// check_fcntl_cmd: on an O_PATH file any command but the dups,
	// F_GETFD, F_SETFD, F_GETFL and the queries is EBADF, one the kernel
	// does not know (F_CANCELLK is its own) and F_SETSIG included.
	SIMPLE("opath.fcntl_unknown", syscall(SYS_fcntl, fd, 1029, 0));
	SIMPLE("opath.setsig", fcntl(fd, F_SETSIG, 0));
	SIMPLE("opath.notify", fcntl(fd, F_NOTIFY, 0));
	SIMPLE("opath.getown", fcntl(fd, F_GETOWN, 0));
	SIMPLE("opath.created_query", fcntl(fd, 1028, 0));
	SIMPLE("opath.dupfd_query", fcntl(fd, 1027, fd));
	SIMPLEFD("opath.dup", dup(fd));
	int d = r;
	T(sc_fstat(d, &st));
	stcase("opath.dup_fstat", &st, &ref);
	close(d);
	close(fd);
	SIMPLEFD("opath.directory_on_file", open(p("op"), O_PATH | O_DIRECTORY));
	T(open(dir, O_PATH | O_DIRECTORY));
	int dfd = r;
	begin("opath.dir");
	retfd();
	end();
	T(sc_fstatat(dfd, "op", &st, 0));
	stcase("opath.dirfd_rel", &st, &ref);
	SIMPLE("opath.dir_read", read(dfd, &c, 1));
	SIMPLEFD("opath.dirfd_openat", openat(dfd, "op", O_RDONLY));
	if (r >= 0)
		close(r);
	close(dfd);
	fd = open(p("op"), O_PATH | O_CLOEXEC);
	T(fcntl(fd, F_GETFL));
	begin("opath.cloexec.getfl");
	add(" flags=0x%lx err=%s", r, en(e));
	addgetfd("getfd", fd);
	end();
	close(fd);
	fd = open(p("op"), O_PATH | O_RDWR | O_TRUNC | O_APPEND | O_NOFOLLOW);
	T(fcntl(fd, F_GETFL));
	begin("opath.extra_flags.getfl");
	add(" flags=0x%lx err=%s", r, en(e));
	end();
	T(stat(p("op"), &st));
	stcase("opath.trunc_ignored", &st, &ref);
	close(fd);
}

static void case_statx(void) {
	struct statx x;
	struct stat ref;
	mkfile("sx", "statx data");
	stat(p("sx"), &ref);
	int fd = open(p("sx"), O_RDONLY);
#define SX(name, dfd, path, fl, mask, rf) \
	do { \
		memset(&x, 0, sizeof x); \
		T(sc_statx(dfd, path, fl, mask, &x)); \
		stxcase(name, &x, rf); \
	} while (0)
	SX("statx.basic", AT_FDCWD, p("sx"), 0, STATX_BASIC_STATS, &ref);
	SX("statx.mask0", AT_FDCWD, p("sx"), 0, 0, &ref);
	SX("statx.btime", AT_FDCWD, p("sx"), 0, STATX_BASIC_STATS | STATX_BTIME, &ref);
	SX("statx.only_btime", AT_FDCWD, p("sx"), 0, STATX_BTIME, &ref);
	SX("statx.all", AT_FDCWD, p("sx"), 0, STATX_ALL, &ref);
	SX("statx.size_only", AT_FDCWD, p("sx"), 0, STATX_SIZE, &ref);
	SX("statx.high_mask", AT_FDCWD, p("sx"), 0, 0x7fffffff, &ref);
	SX("statx.reserved", AT_FDCWD, p("sx"), 0, 0x80000000u, NULL);
	SX("statx.both_sync", AT_FDCWD, p("sx"), AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, NULL);
	SX("statx.force_sync", AT_FDCWD, p("sx"), AT_STATX_FORCE_SYNC, STATX_BASIC_STATS | STATX_BTIME, &ref);
	SX("statx.dont_sync", AT_FDCWD, p("sx"), AT_STATX_DONT_SYNC, STATX_BASIC_STATS | STATX_BTIME, &ref);
	SX("statx.unknown_flag", AT_FDCWD, p("sx"), 0x10000, STATX_BASIC_STATS, NULL);
	SX("statx.dir", AT_FDCWD, dir, 0, STATX_BASIC_STATS | STATX_BTIME, &dirst);
	SX("statx.empty_fd", fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &ref);
	SX("statx.null_fd", fd, NULL, AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &ref);
	SX("statx.null_noflag", fd, NULL, 0, STATX_BASIC_STATS, NULL);
	SX("statx.empty_noflag", fd, "", 0, STATX_BASIC_STATS, NULL);
	SX("statx.badfd_empty", 9999, "", AT_EMPTY_PATH, STATX_BASIC_STATS, NULL);
	SX("statx.filefd_rel", fd, "x", 0, STATX_BASIC_STATS, NULL);
	SX("statx.file_slash", AT_FDCWD, p("sx/"), 0, STATX_BASIC_STATS, NULL);
	SX("statx.missing", AT_FDCWD, p("missing"), 0, STATX_BASIC_STATS, NULL);
	SX("statx.badpath", AT_FDCWD, BAD, 0, STATX_BASIC_STATS, NULL);
	T(sc_statx(AT_FDCWD, p("sx"), 0, STATX_BASIC_STATS, BAD));
	begin("statx.badbuf");
	ret();
	end();
	close(fd);
}

static void case_unlink_open(void) {
	struct stat st, ref;
	char buf[64] = {0};
	int fd = open(p("uo"), O_CREAT | O_RDWR, 0644);
	SIMPLE("unlink_open.write", write(fd, "hello world", 11));
	sc_fstat(fd, &ref);
	SIMPLE("unlink_open.unlink", unlink(p("uo")));
	T(stat(p("uo"), &st));
	stcase("unlink_open.stat_path", &st, NULL);
	T(sc_fstat(fd, &st));
	stcase("unlink_open.fstat", &st, &ref);
	T(sc_fstatat(fd, "", &st, AT_EMPTY_PATH));
	stcase("unlink_open.fstatat_empty", &st, &ref);
	struct statx x;
	T(sc_statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &x));
	stxcase("unlink_open.statx_empty", &x, &ref);
	T(pread(fd, buf, sizeof buf - 1, 0));
	begin("unlink_open.read_back");
	ret();
	add(" data=%s", buf);
	end();
	SIMPLE("unlink_open.write_more", write(fd, "!!", 2));
	T(sc_fstat(fd, &st));
	stcase("unlink_open.fstat_after_write", &st, &ref);
	SIMPLEFD("unlink_open.reopen", open(p("uo"), O_RDWR));
	SIMPLEFD("unlink_open.recreate", open(p("uo"), O_CREAT | O_RDWR, 0644));
	int n = r;
	T(sc_fstat(n, &st));
	stcase("unlink_open.recreated_is_new", &st, &ref);
	close(n);
	SIMPLE("unlink_open.close", close(fd));
	SIMPLE("unlink_open.unlink_again", unlink(p("uo")));
	SIMPLE("unlink_open.unlink_missing", unlink(p("uo")));
}

static void case_open(void) {
	struct stat st;
	char name[PATH_MAX + 64];
	umask(022);
	SIMPLEFD("open.empty", open("", O_RDONLY));
	SIMPLEFD("open.empty_creat", open("", O_CREAT | O_RDWR, 0644));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	SIMPLEFD("openat.empty", openat(dfd, "", O_RDONLY));
	SIMPLEFD("open.badpath", open(BAD, O_RDONLY));

	memset(name, 'n', 256);
	name[256] = 0;
	SIMPLEFD("open.name256", openat(dfd, name, O_CREAT | O_RDWR, 0644));
	SIMPLEFD("open.name256_nocreat", openat(dfd, name, O_RDONLY));
	name[255] = 0;
	SIMPLEFD("open.name255", openat(dfd, name, O_CREAT | O_RDWR, 0644));
	close(r);
	T(sc_fstatat(dfd, name, &st, 0));
	stcase("open.name255.stat", &st, NULL);
	unlinkat(dfd, name, 0);

	// PATH_MAX counts the NUL: 4095 characters fit, 4096 do not.
	int n = snprintf(name, sizeof name, "%s/", dir);
	while (n < PATH_MAX - 3) {
		name[n++] = '.';
		name[n++] = '/';
	}
	while (n < PATH_MAX - 1)
		name[n++] = 'x';
	name[n] = 0;
	begin("open.pathlen");
	add(" len=%d", n);
	end();
	SIMPLEFD("open.path4095", open(name, O_CREAT | O_RDWR, 0644));
	if (r >= 0)
		close(r);
	name[n] = 'y';
	name[n + 1] = 0;
	SIMPLEFD("open.path4096", open(name, O_CREAT | O_RDWR, 0644));
	T(stat(name, &st));
	stcase("open.path4096.stat", &st, NULL);
	name[n] = 0;
	T(stat(name, &st));
	stcase("open.path4095.stat", &st, NULL);

	mkfile("of", "0123456789");
	SIMPLEFD("open.excl_existing", open(p("of"), O_CREAT | O_EXCL | O_RDWR, 0644));
	SIMPLEFD("open.excl_new", open(p("of_new"), O_CREAT | O_EXCL | O_RDWR, 0644));
	close(r);
	SIMPLEFD("open.excl_dir", open(dir, O_CREAT | O_EXCL | O_RDWR, 0644));
	SIMPLEFD("open.excl_without_creat", open(p("of"), O_EXCL | O_RDWR));
	close(r);
	SIMPLEFD("open.directory_on_file", open(p("of"), O_DIRECTORY));
	SIMPLEFD("open.directory_on_dir", open(dir, O_DIRECTORY));
	close(r);
	SIMPLEFD("open.directory_creat", open(p("of_dc"), O_DIRECTORY | O_CREAT, 0644));
	T(stat(p("of_dc"), &st));
	stcase("open.directory_creat.stat", &st, NULL);
	SIMPLEFD("open.wronly_dir", open(dir, O_WRONLY));
	SIMPLEFD("open.rdwr_dir", open(dir, O_RDWR));
	SIMPLEFD("open.creat_dir", open(dir, O_CREAT | O_RDONLY, 0644));
	SIMPLEFD("open.trunc_dir", open(dir, O_RDONLY | O_TRUNC));
	SIMPLEFD("open.rdonly_dir", open(dir, O_RDONLY));
	close(r);
	SIMPLEFD("open.accmode3_file", open(p("of"), O_ACCMODE));
	if (r >= 0) {
		char c;
		int fd = r;
		SIMPLE("open.accmode3_read", read(fd, &c, 1));
		close(fd);
	}

	SIMPLEFD("open.trunc_rdonly", open(p("of"), O_RDONLY | O_TRUNC));
	close(r);
	T(stat(p("of"), &st));
	stcase("open.trunc_rdonly.stat", &st, NULL);
	mkfile("of", "0123456789");
	SIMPLEFD("open.trunc_wronly", open(p("of"), O_WRONLY | O_TRUNC));
	close(r);
	T(stat(p("of"), &st));
	stcase("open.trunc_wronly.stat", &st, NULL);
	mkfile("of", "0123456789");
	SIMPLEFD("open.creat_existing_keeps", open(p("of"), O_CREAT | O_RDWR, 0600));
	close(r);
	T(stat(p("of"), &st));
	stcase("open.creat_existing_keeps.stat", &st, NULL);
	SIMPLEFD("creat.existing", creat(p("of"), 0600));
	close(r);
	T(stat(p("of"), &st));
	stcase("creat.existing.stat", &st, NULL);

	SIMPLEFD("open.creat_slash", open(p("of_slash/"), O_CREAT | O_RDWR, 0644));
	T(stat(p("of_slash"), &st));
	stcase("open.creat_slash.stat", &st, NULL);
	SIMPLEFD("open.file_slash", open(p("of/"), O_RDONLY));
	SIMPLEFD("open.file_slash_creat", open(p("of/"), O_CREAT | O_RDONLY, 0644));
	SIMPLEFD("open.file_child", open(p("of/child"), O_RDONLY));
	SIMPLEFD("open.file_child_creat", open(p("of/child"), O_CREAT | O_RDWR, 0644));
	SIMPLEFD("open.dir_slash", open(p("./"), O_RDONLY));
	close(r);
	SIMPLEFD("open.nonexistent_dotdot", open(p("nonexistent/../of"), O_RDONLY));
	SIMPLEFD("open.file_dotdot", open(p("of/../of"), O_RDONLY));
	SIMPLEFD("open.missing", open(p("missing"), O_RDONLY));
	SIMPLEFD("open.creat_in_missing", open(p("missing/new"), O_CREAT | O_RDWR, 0644));
	SIMPLEFD("open.creat_dot", open(p("."), O_CREAT | O_RDONLY, 0644));
	SIMPLEFD("open.creat_dotdot", open(p(".."), O_CREAT | O_RDONLY, 0644));
	int ffd = open(p("of"), O_RDONLY);
	SIMPLEFD("openat.filefd_rel", openat(ffd, "x", O_RDONLY));
	close(ffd);
	SIMPLEFD("openat.badfd_rel", openat(9999, "x", O_RDONLY));
	SIMPLEFD("openat.badfd_abs", openat(9999, p("of"), O_RDONLY));
	close(r);
	SIMPLEFD("openat.dirfd_rel", openat(dfd, "of", O_RDONLY));
	close(r);

	// Modes: the umask applies to O_CREAT and mkdir.
	static const struct {
		const char *name;
		int mask;
		int mode;
	} modes[] = {
		{"open.mode.0777_u022", 022, 0777},   {"open.mode.0666_u022", 022, 0666},
		{"open.mode.0777_u077", 077, 0777},   {"open.mode.0777_u000", 0, 0777},
		{"open.mode.07777_u022", 022, 07777}, {"open.mode.0_u022", 022, 0},
		{"open.mode.0177777_u0", 0, 0177777},
	};
	for (unsigned i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		umask(modes[i].mask);
		char f[32];
		snprintf(f, sizeof f, "mode%u", i);
		T(open(p(f), O_CREAT | O_RDWR, modes[i].mode));
		int fd = r;
		T(fd < 0 ? -1 : sc_fstat(fd, &st));
		freshcase(modes[i].name, &st, NULL);
		close(fd);
	}
	umask(027);
	SIMPLE("mkdir.mode.u027", mkdir(p("mdir027"), 0777));
	T(stat(p("mdir027"), &st));
	freshcase("mkdir.mode.u027.stat", &st, NULL);
	umask(0);
	SIMPLE("mkdir.mode.07777", mkdir(p("mdir7777"), 07777));
	T(stat(p("mdir7777"), &st));
	freshcase("mkdir.mode.07777.stat", &st, NULL);
	SIMPLE("umask.get", umask(022));
	SIMPLE("umask.get2", umask(022));

	// openat2: a few of its strict checks.
	struct open_how how = {.flags = O_RDONLY};
	SIMPLEFD("openat2.plain", syscall(SYS_openat2, dfd, "of", &how, sizeof how));
	close(r);
	how = (struct open_how){.flags = O_RDONLY, .mode = 0644};
	SIMPLEFD("openat2.mode_without_creat", syscall(SYS_openat2, dfd, "of", &how, sizeof how));
	how = (struct open_how){.flags = 1u << 30};
	SIMPLEFD("openat2.unknown_flag", syscall(SYS_openat2, dfd, "of", &how, sizeof how));
	how = (struct open_how){.flags = O_RDONLY};
	SIMPLEFD("openat2.small_size", syscall(SYS_openat2, dfd, "of", &how, 8));
	how = (struct open_how){.flags = O_CREAT | O_RDWR, .mode = 0640};
	umask(0);
	SIMPLEFD("openat2.creat", syscall(SYS_openat2, dfd, "of2", &how, sizeof how));
	umask(022);
	close(r);
	T(stat(p("of2"), &st));
	freshcase("openat2.creat.stat", &st, NULL);
	how = (struct open_how){.flags = O_RDONLY, .resolve = RESOLVE_BENEATH};
	SIMPLEFD("openat2.beneath_dotdot", syscall(SYS_openat2, dfd, "../x", &how, sizeof how));
	close(dfd);
}

static void case_rw(void) {
	struct stat st;
	char buf[8192];
	int fd = open(p("rw"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	SIMPLE("rw.write", write(fd, "0123456789", 10));
	SIMPLE("rw.cur", lseek(fd, 0, SEEK_CUR));
	SIMPLE("rw.read_at_eof", read(fd, buf, 10));
	SIMPLE("rw.seek_set0", lseek(fd, 0, SEEK_SET));
	memset(buf, 0, sizeof buf);
	T(read(fd, buf, 100));
	begin("rw.read_all");
	ret();
	add(" data=%s", buf);
	end();
	SIMPLE("rw.read_zero", read(fd, buf, 0));
	SIMPLE("rw.write_zero", write(fd, buf, 0));
	SIMPLE("rw.seek_end_minus2", lseek(fd, -2, SEEK_END));
	SIMPLE("rw.seek_end_plus5", lseek(fd, 5, SEEK_END));
	SIMPLE("rw.write_past_end", write(fd, "Z", 1));
	T(sc_fstat(fd, &st));
	stcase("rw.hole.stat", &st, NULL);
	memset(buf, 0, sizeof buf);
	T(pread(fd, buf, 100, 8));
	begin("rw.hole.read");
	ret();
	add(" bytes=");
	for (int i = 0; i < r; i++)
		add("%02x", (unsigned char)buf[i]);
	end();
	SIMPLE("rw.seek_neg_set", lseek(fd, -1, SEEK_SET));
	SIMPLE("rw.seek_neg_cur", lseek(fd, -100, SEEK_CUR));
	SIMPLE("rw.seek_neg_end", lseek(fd, -100, SEEK_END));
	SIMPLE("rw.cur_after_bad_seeks", lseek(fd, 0, SEEK_CUR));
	SIMPLE("rw.seek_bad_whence", lseek(fd, 0, 7));
	SIMPLE("rw.seek_far", lseek(fd, 1L << 40, SEEK_SET));
	SIMPLE("rw.seek_data0", lseek(fd, 0, SEEK_DATA));
	SIMPLE("rw.seek_hole0", lseek(fd, 0, SEEK_HOLE));
	SIMPLE("rw.seek_data_eof", lseek(fd, 16, SEEK_DATA));
	SIMPLE("rw.seek_hole_neg", lseek(fd, -1, SEEK_HOLE));
	SIMPLE("rw.pread_neg2", pread(fd, buf, 1, -2));
	SIMPLE("rw.pwrite_neg2", pwrite(fd, "x", 1, -2));
	SIMPLE("rw.pread_min", pread(fd, buf, 1, (off_t)1 << 63));
	SIMPLE("rw.pread_past_eof", pread(fd, buf, 10, 1000));
	SIMPLE("rw.pwrite_mid", pwrite(fd, "AB", 2, 2));
	SIMPLE("rw.cur_after_pwrite", lseek(fd, 0, SEEK_CUR));
	SIMPLE("rw.read_badbuf", (lseek(fd, 0, SEEK_SET), read(fd, BAD, 4)));
	SIMPLE("rw.cur_after_read_badbuf", lseek(fd, 0, SEEK_CUR));
	SIMPLE("rw.write_badbuf", write(fd, BAD, 4));
	T(sc_fstat(fd, &st));
	stcase("rw.write_badbuf.stat", &st, NULL);
	close(fd);

	// pread and pwrite at offset -1: EINVAL like any negative offset. Own
	// file, each line showing the whole effect (ret, offset, size).
	fd = open(p("negoff"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "0123", 4);
	lseek(fd, 1, SEEK_SET);
	T(pread(fd, buf, 1, -1));
	begin("rw.pread_neg1");
	ret();
	add(" pos=%ld", (long)lseek(fd, 0, SEEK_CUR));
	end();
	T(pwrite(fd, "x", 1, -1));
	begin("rw.pwrite_neg1");
	ret();
	sc_fstat(fd, &st);
	add(" pos=%ld size=%ld", (long)lseek(fd, 0, SEEK_CUR), (long)st.st_size);
	memset(buf, 0, sizeof buf);
	pread(fd, buf, 100, 0);
	add(" data=%s", buf);
	end();
	close(fd);

	// Sparse files: pages never written are holes.
	fd = open(p("sparse"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	memset(buf, 's', sizeof buf);
	SIMPLE("sparse.pwrite0", pwrite(fd, buf, 100, 0));
	SIMPLE("sparse.pwrite_page3", pwrite(fd, buf, 100, 3 * 4096));
	T(sc_fstat(fd, &st));
	stcase("sparse.stat", &st, NULL);
	SIMPLE("sparse.seek_hole0", lseek(fd, 0, SEEK_HOLE));
	SIMPLE("sparse.seek_data_hole", lseek(fd, 4096, SEEK_DATA));
	SIMPLE("sparse.seek_hole_in_data", lseek(fd, 3 * 4096 + 10, SEEK_HOLE));
	SIMPLE("sparse.pwrite_big", pwrite(fd, buf, sizeof buf, 5 * 4096 + 100));
	T(sc_fstat(fd, &st));
	stcase("sparse.big.stat", &st, NULL);
	close(fd);

	fd = open(p("rw_app"), O_CREAT | O_RDWR | O_APPEND | O_TRUNC, 0644);
	SIMPLE("append.write1", write(fd, "abc", 3));
	SIMPLE("append.seek0", lseek(fd, 0, SEEK_SET));
	SIMPLE("append.write2", write(fd, "de", 2));
	SIMPLE("append.cur", lseek(fd, 0, SEEK_CUR));
	SIMPLE("append.pwrite0", pwrite(fd, "F", 1, 0));
	SIMPLE("append.cur_after_pwrite", lseek(fd, 0, SEEK_CUR));
	memset(buf, 0, sizeof buf);
	T(pread(fd, buf, 100, 0));
	begin("append.content");
	ret();
	add(" data=%s", buf);
	end();
	SIMPLE("append.setfl_off", fcntl(fd, F_SETFL, 0));
	lseek(fd, 0, SEEK_SET);
	SIMPLE("append.write_after_off", write(fd, "g", 1));
	memset(buf, 0, sizeof buf);
	T(pread(fd, buf, 100, 0));
	begin("append.content2");
	ret();
	add(" data=%s", buf);
	end();
	close(fd);

	fd = open(p("tr"), O_CREAT | O_RDWR | O_TRUNC, 0644);
	memset(buf, 't', sizeof buf);
	SIMPLE("trunc.write", write(fd, buf, 5000));
	T(sc_fstat(fd, &st));
	stcase("trunc.stat0", &st, NULL);
	SIMPLE("trunc.grow", ftruncate(fd, 100000));
	T(sc_fstat(fd, &st));
	stcase("trunc.grow.stat", &st, NULL);
	SIMPLE("trunc.shrink", ftruncate(fd, 5));
	T(sc_fstat(fd, &st));
	stcase("trunc.shrink.stat", &st, NULL);
	memset(buf, 0, sizeof buf);
	T(pread(fd, buf, 100, 0));
	begin("trunc.shrink.read");
	ret();
	end();
	SIMPLE("trunc.regrow", ftruncate(fd, 10));
	memset(buf, 'q', sizeof buf);
	T(pread(fd, buf, 100, 0));
	begin("trunc.regrow.read");
	ret();
	add(" bytes=");
	for (int i = 0; i < r; i++)
		add("%02x", (unsigned char)buf[i]);
	end();
	SIMPLE("trunc.zero", ftruncate(fd, 0));
	T(sc_fstat(fd, &st));
	stcase("trunc.zero.stat", &st, NULL);
	SIMPLE("trunc.negative", ftruncate(fd, -1));
	SIMPLE("trunc.cur_kept", (lseek(fd, 3, SEEK_SET), ftruncate(fd, 1), lseek(fd, 0, SEEK_CUR)));
	close(fd);
	fd = open(p("tr"), O_RDONLY);
	SIMPLE("trunc.rdonly", ftruncate(fd, 0));
	SIMPLE("rw.write_on_rdonly", write(fd, "x", 1));
	SIMPLE("rw.pwrite_on_rdonly", pwrite(fd, "x", 1, 0));
	close(fd);
	fd = open(p("tr"), O_WRONLY);
	SIMPLE("rw.read_on_wronly", read(fd, buf, 1));
	SIMPLE("rw.pread_on_wronly", pread(fd, buf, 1, 0));
	close(fd);
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	SIMPLE("dirfd.read", read(fd, buf, 1));
	SIMPLE("dirfd.pread", pread(fd, buf, 1, 0));
	SIMPLE("dirfd.write", write(fd, "x", 1));
	SIMPLE("dirfd.ftruncate", ftruncate(fd, 0));
	SIMPLE("dirfd.lseek_set0", lseek(fd, 0, SEEK_SET));
	SIMPLE("dirfd.lseek_set5", lseek(fd, 5, SEEK_SET));
	SIMPLE("dirfd.lseek_cur", lseek(fd, 0, SEEK_CUR));
	close(fd);
	// SEEK_END on a tmpfs directory (dcache_dir_lseek): on its own
	// descriptor, so that a wrong answer moves no other case's offset.
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	SIMPLE("dirfd.lseek_end", lseek(fd, 0, SEEK_END));
	SIMPLE("dirfd.lseek_data", lseek(fd, 0, SEEK_DATA));
	close(fd);
}

static void case_fcntl(void) {
	static const struct {
		const char *name;
		int flags;
		int isdir;
	} fl[] = {
		{"getfl.rdonly", O_RDONLY, 0},
		{"getfl.wronly", O_WRONLY, 0},
		{"getfl.rdwr", O_RDWR, 0},
		{"getfl.rdwr_append", O_RDWR | O_APPEND, 0},
		{"getfl.nonblock", O_RDONLY | O_NONBLOCK, 0},
		{"getfl.creat_trunc_excl", O_WRONLY | O_CREAT | O_TRUNC, 0},
		{"getfl.cloexec", O_RDWR | O_CLOEXEC, 0},
		{"getfl.sync", O_RDWR | O_SYNC, 0},
		{"getfl.dsync", O_RDWR | O_DSYNC, 0},
		{"getfl.noatime", O_RDONLY | O_NOATIME, 0},
		{"getfl.largefile", O_RDONLY | O_LARGEFILE, 0},
		{"getfl.nofollow", O_RDONLY | O_NOFOLLOW, 0},
		{"getfl.noctty", O_RDONLY | O_NOCTTY, 0},
		{"getfl.accmode3", O_ACCMODE, 0},
		{"getfl.unknown_bits", O_RDONLY | 0x4000000, 0},
		{"getfl.directory", O_RDONLY | O_DIRECTORY, 1},
		{"getfl.path", O_PATH, 0},
		{"getfl.path_dir", O_PATH | O_DIRECTORY, 1},
	};
	mkfile("fc", "fcntl");
	for (unsigned i = 0; i < sizeof fl / sizeof fl[0]; i++) {
		T(open(fl[i].isdir ? dir : p("fc"), fl[i].flags, 0644));
		int fd = r;
		begin(fl[i].name);
		retfd();
		if (fd >= 0) {
			T(fcntl(fd, F_GETFL));
			add(" flags=0x%lx/%s", r & ~KO_LARGEFILE, en(e));
			addgetfd("getfd", fd);
		}
		end();
		close(fd);
	}
	// The other getfl lines leave O_LARGEFILE out: it is checked here, once.
	static const struct {
		const char *name;
		int flags;
	} lf[] = {
		{"getfl.largefile_forced.rdonly", O_RDONLY},
		{"getfl.largefile_forced.rdwr", O_RDWR},
		{"getfl.largefile_forced.path", O_PATH},
	};
	for (unsigned i = 0; i < sizeof lf / sizeof lf[0]; i++) {
		int fd = open(p("fc"), lf[i].flags);
		begin(lf[i].name);
		add(" largefile=%s", yesno(fcntl(fd, F_GETFL) & KO_LARGEFILE));
		end();
		close(fd);
	}
	int fd = open(p("fc"), O_RDWR);
	SIMPLE("setfl.append_nonblock", fcntl(fd, F_SETFL, O_APPEND | O_NONBLOCK));
	begin("setfl.append_nonblock.getfl");
	add(" flags=0x%x", fcntl(fd, F_GETFL) & ~KO_LARGEFILE);
	end();
	SIMPLE("setfl.accmode_ignored", fcntl(fd, F_SETFL, O_WRONLY | O_CREAT | O_TRUNC));
	begin("setfl.accmode_ignored.getfl");
	add(" flags=0x%x", fcntl(fd, F_GETFL) & ~KO_LARGEFILE);
	end();
	SIMPLE("setfl.noatime", fcntl(fd, F_SETFL, O_NOATIME));
	begin("setfl.noatime.getfl");
	add(" flags=0x%x", fcntl(fd, F_GETFL) & ~KO_LARGEFILE);
	end();
	SIMPLE("setfl.zero", fcntl(fd, F_SETFL, 0));
	begin("setfl.zero.getfl");
	add(" flags=0x%x", fcntl(fd, F_GETFL) & ~KO_LARGEFILE);
	end();

	// Commands the kernel does not know: F_CANCELLK (its own), 12 (a
	// 32-bit kernel's F_GETLK64), 1037 (F_GET_FILE_RW_HINT, gone in Linux
	// 6.9), one whose register's upper half names a known command.
	SIMPLE("fcntl.unknown.cancellk", syscall(SYS_fcntl, fd, 1029, 0));
	SIMPLE("fcntl.unknown.getlk64", syscall(SYS_fcntl, fd, 12, 0));
	SIMPLE("fcntl.unknown.file_rw_hint", syscall(SYS_fcntl, fd, 1037, 0));
	SIMPLE("fcntl.unknown.high", syscall(SYS_fcntl, fd, (1UL << 32) | 1029, 0));
	SIMPLE("fcntl.getsig", fcntl(fd, F_GETSIG, 0));
	SIMPLE("fcntl.get_seals", fcntl(fd, 1034, 0));

	SIMPLE("dup3.same", dup3(fd, fd, 0));
	SIMPLE("dup3.same_cloexec", dup3(fd, fd, O_CLOEXEC));
	SIMPLEFD("dup2.same", dup2(fd, fd));
	SIMPLEFD("dup3.bad_flags", dup3(fd, base + 20, 0x1));
	SIMPLEFD("dup3.bad_flags_nonblock", dup3(fd, base + 20, O_NONBLOCK));
	SIMPLE("dup3.bad_flags_left_nothing", fcntl(base + 20, F_GETFD));
	SIMPLEFD("dup3.cloexec", dup3(fd, base + 20, O_CLOEXEC));
	begin("dup3.cloexec.getfd");
	addgetfd("new", base + 20);
	addgetfd("old", fd);
	end();
	close(base + 20);
	SIMPLEFD("dup2.badold", dup2(9999, base + 20));
	SIMPLE("dup2.badold_left_nothing", fcntl(base + 20, F_GETFD));
	SIMPLEFD("dup2.negnew", dup2(fd, -1));
	SIMPLEFD("dup2.closed_same", dup2(base + 30, base + 30));
	SIMPLEFD("dup.bad", dup(9999));

	int ce = open(p("fc"), O_RDONLY | O_CLOEXEC);
	SIMPLEFD("dup.of_cloexec", dup(ce));
	int d = r;
	begin("dup.of_cloexec.getfd");
	addgetfd("orig", ce);
	addgetfd("dup", d);
	end();
	close(d);
	SIMPLEFD("dupfd_cloexec", fcntl(fd, F_DUPFD_CLOEXEC, 0));
	d = r;
	begin("dupfd_cloexec.getfd");
	addgetfd("orig", fd);
	addgetfd("dup", d);
	end();
	close(d);
	SIMPLEFD("dupfd.min20", fcntl(fd, F_DUPFD, base + 20));
	d = r;
	SIMPLEFD("dupfd.min20_again", fcntl(fd, F_DUPFD, base + 20));
	close(r);
	close(d);
	SIMPLEFD("dupfd.neg", fcntl(fd, F_DUPFD, -1));
	SIMPLE("setfd.cloexec", fcntl(fd, F_SETFD, FD_CLOEXEC));
	begin("setfd.cloexec.getfd");
	addgetfd("fd", fd);
	end();
	SIMPLE("setfd.other_bits", fcntl(fd, F_SETFD, 0xfe));
	begin("setfd.other_bits.getfd");
	addgetfd("fd", fd);
	end();
	SIMPLE("getfd.bad", fcntl(9999, F_GETFD));
	SIMPLE("getfl.bad", fcntl(9999, F_GETFL));
	SIMPLE("fcntl.bad_cmd", fcntl(fd, 9999));

	// dup2 onto a live descriptor closes what was there.
	mkfile("fc2", "other file");
	struct stat st, ref;
	stat(p("fc"), &ref);
	int other = open(p("fc2"), O_RDONLY);
	SIMPLEFD("dup2.replace", dup2(fd, other));
	T(sc_fstat(other, &st));
	stcase("dup2.replace.fstat", &st, &ref);
	// A host file over a virtual fd, and back (unotify installs these
	// itself: the host file is taken from the guest).
	int pp[2];
	if (pipe(pp) == 0) {
		struct stat pst;
		fstat(pp[1], &pst);
		SIMPLEFD("dup2.pipe_over_virtual", dup2(pp[1], other));
		T(sc_fstat(other, &st));
		begin("dup2.pipe_over_virtual.fstat");
		add(" fifo=%s samepipe=%s", yesno(S_ISFIFO(st.st_mode)), yesno(st.st_ino == pst.st_ino));
		end();
		SIMPLEFD("dup3.virtual_over_pipe", dup3(fd, other, O_CLOEXEC));
		T(sc_fstat(other, &st));
		stcase("dup3.virtual_over_pipe.fstat", &st, &ref);
		begin("dup3.virtual_over_pipe.getfd");
		addgetfd("fd", other);
		end();
		int opath = open("/", O_PATH);
		SIMPLEFD("dup2.opath_over_virtual", dup2(opath, other));
		T(sc_fstat(other, &st));
		begin("dup2.opath_over_virtual.fstat");
		add(" root=%s", yesno(st.st_ino == rootst.st_ino && st.st_dev == rootst.st_dev));
		end();
		int nd = dup(fd);
		T(sc_fstat(nd, &st));
		stcase("dup.virtual.fstat", &st, &ref);
		close(nd);
		close(opath);
		close(pp[0]);
		close(pp[1]);
	}
	close(other);
	close(ce);
	close(fd);
}

static void case_dirs(void) {
	struct stat st;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	SIMPLE("mkdir.d", mkdirat(dfd, "d", 0777));
	T(sc_fstatat(dfd, "d", &st, 0));
	freshcase("mkdir.d.stat_empty", &st, NULL);
	SIMPLE("mkdir.d_s1", mkdirat(dfd, "d/s1", 0755));
	SIMPLE("mkdir.d_s2_slash", mkdirat(dfd, "d/s2/", 0755));
	T(sc_fstatat(dfd, "d", &st, 0));
	stcase("mkdir.d.stat_two_subdirs", &st, NULL);
	int f = openat(dfd, "d/f", O_CREAT | O_RDWR, 0644);
	close(f);
	T(sc_fstatat(dfd, "d", &st, 0));
	stcase("mkdir.d.stat_plus_file", &st, NULL);
	T(sc_fstatat(dfd, "d/s1", &st, 0));
	stcase("mkdir.s1.stat", &st, NULL);
	T(sc_fstatat(dfd, "d/s1/", &st, 0));
	stcase("mkdir.s1.stat_slash", &st, NULL);
	T(sc_fstatat(dfd, "d/s1/..", &st, 0));
	stcase("mkdir.s1.dotdot", &st, NULL);
	SIMPLE("mkdir.existing", mkdirat(dfd, "d", 0755));
	SIMPLE("mkdir.existing_file", mkdirat(dfd, "d/f", 0755));
	SIMPLE("mkdir.under_file", mkdirat(dfd, "d/f/x", 0755));
	SIMPLE("mkdir.under_missing", mkdirat(dfd, "missing/x", 0755));
	SIMPLE("mkdir.dot", mkdirat(dfd, "d/.", 0755));
	SIMPLE("mkdir.dotdot", mkdirat(dfd, "d/..", 0755));
	SIMPLE("mkdir.empty", mkdir("", 0755));
	SIMPLE("mkdir.badpath", mkdir(BAD, 0755));
	SIMPLE("unlink.dir", unlinkat(dfd, "d", 0));
	SIMPLE("unlink.dir_slash", unlinkat(dfd, "d/s2/", 0));
	SIMPLE("unlink.file_slash", unlinkat(dfd, "d/f/", 0));
	SIMPLE("unlink.missing_slash", unlinkat(dfd, "d/nope/", 0));
	SIMPLE("unlink.dot", unlinkat(dfd, "d/.", 0));
	SIMPLE("unlink.bad_flags", unlinkat(dfd, "d/f", 0x1));
	SIMPLE("unlink.empty", unlink(""));
	SIMPLE("rmdir.nonempty", unlinkat(dfd, "d", AT_REMOVEDIR));
	SIMPLE("rmdir.file", unlinkat(dfd, "d/f", AT_REMOVEDIR));
	SIMPLE("rmdir.file_path", rmdir(p("d/f")));
	SIMPLE("rmdir.missing", rmdir(p("d/nope")));
	SIMPLE("rmdir.dot", rmdir(p("d/s1/.")));
	SIMPLE("rmdir.dotdot", rmdir(p("d/s1/..")));
	SIMPLE("rmdir.under_file", rmdir(p("d/f/x")));
	SIMPLE("rmdir.empty", rmdir(""));
	SIMPLE("unlink.file", unlinkat(dfd, "d/f", 0));
	T(sc_fstatat(dfd, "d", &st, 0));
	stcase("unlink.file.dirstat", &st, NULL);
	SIMPLE("rmdir.s1_slash", rmdir(p("d/s1/")));
	T(sc_fstatat(dfd, "d", &st, 0));
	stcase("rmdir.s1.dirstat", &st, NULL);
	int held = openat(dfd, "d/s2", O_RDONLY | O_DIRECTORY);
	SIMPLE("rmdir.s2_held_open", unlinkat(dfd, "d/s2", AT_REMOVEDIR));
	T(sc_fstat(held, &st));
	stcase("rmdir.s2.fstat_held", &st, NULL);
	SIMPLEFD("rmdir.s2.create_inside", openat(held, "x", O_CREAT | O_RDWR, 0644));
	SIMPLE("rmdir.s2.mkdir_inside", mkdirat(held, "x", 0755));
	T(sc_fstatat(held, ".", &st, 0));
	stcase("rmdir.s2.stat_dot", &st, NULL);
	T(sc_fstatat(held, "..", &st, 0));
	stcase("rmdir.s2.stat_dotdot", &st, NULL);
	close(held);
	T(sc_fstatat(dfd, "d", &st, 0));
	stcase("rmdir.all.dirstat", &st, NULL);
	SIMPLE("rmdir.d", unlinkat(dfd, "d", AT_REMOVEDIR));
	SIMPLE("rmdir.d_again", unlinkat(dfd, "d", AT_REMOVEDIR));
	SIMPLE("mkdir.sticky", mkdirat(dfd, "sticky", 01777));
	T(sc_fstatat(dfd, "sticky", &st, 0));
	freshcase("mkdir.sticky.stat", &st, NULL);
	close(dfd);
}

// dirents reads directory fd with getdents (legacy, 0) or getdents64 (1)
// and prints the entries sorted by name, each with its type and record
// length (inode numbers and offsets are the file system's own).
static int cmpstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void dirents(const char *name, int fd, int is64) {
	char buf[4096] __attribute__((aligned(8)));
	char *lines[64];
	int nl = 0;
	lseek(fd, 0, SEEK_SET);
	for (;;) {
		T(syscall(is64 ? SYS_getdents64 : SYS_getdents, fd, buf, sizeof buf));
		if (r <= 0)
			break;
		for (long off = 0; off < r && nl < 64;) {
			unsigned short reclen = *(unsigned short *)(buf + off + 16);
			const char *nm = buf + off + (is64 ? 19 : 18);
			unsigned char typ = is64 ? (unsigned char)buf[off + 18] : (unsigned char)buf[off + reclen - 1];
			char *l = malloc(300);
			snprintf(l, 300, " %s/t%u/r%u", nm, typ, reclen);
			lines[nl++] = l;
			off += reclen;
		}
	}
	begin(name);
	ret();
	qsort(lines, nl, sizeof lines[0], cmpstr);
	for (int i = 0; i < nl; i++) {
		add("%s", lines[i]);
		free(lines[i]);
	}
	end();
}

// case_getdents: x86-64 keeps the legacy getdents (struct linux_dirent,
// the type after the name's NUL in the record's last byte); its errnos are
// getdents64's.
static void case_getdents(void) {
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	SIMPLE("getdents.mkdir", mkdirat(dfd, "gd", 0755));
	int g = openat(dfd, "gd", O_RDONLY | O_DIRECTORY);
	close(openat(g, "a", O_CREAT | O_RDWR, 0644));
	close(openat(g, "a-longer-name-of-twenty-three", O_CREAT | O_RDWR, 0644));
	mkdirat(g, "sub", 0755);
	symlinkat("a", g, "ln");
	mkfifoat(g, "fifo", 0644);
	dirents("getdents.legacy", g, 0);
	dirents("getdents.64", g, 1);
	char small[8];
	lseek(g, 0, SEEK_SET);
	SIMPLE("getdents.too_small", syscall(SYS_getdents, g, small, sizeof small));
	SIMPLE("getdents.bad_buffer", syscall(SYS_getdents, g, BAD, 4096));
	SIMPLE("getdents.bad_fd", syscall(SYS_getdents, 9999, small, sizeof small));
	int f = openat(g, "a", O_RDONLY);
	SIMPLE("getdents.not_dir", syscall(SYS_getdents, f, small, sizeof small));
	close(f);
	SIMPLE("getdents.seek_end", lseek(g, 0, SEEK_END));
	// seekdir: a position taken with lseek after some entries and set
	// again lists the same entries from there (sorted: the order is the
	// file system's).
	char buf[4096] __attribute__((aligned(8)));
	lseek(g, 0, SEEK_SET);
	T(syscall(SYS_getdents64, g, buf, 72)); // ".", ".." and one more at most
	long pos = lseek(g, 0, SEEK_CUR);
	dirents("getdents.whole_after_rewind", g, 1);
	T(syscall(SYS_getdents64, g, buf, sizeof buf));
	begin("getdents.at_end");
	ret();
	end();
	T(lseek(g, pos, SEEK_SET));
	begin("getdents.seekdir");
	add(" same_pos=%s", yesno(r == pos));
	T(syscall(SYS_getdents64, g, buf, sizeof buf));
	long n = r;
	char *names[64];
	int nn = 0;
	for (long off = 0; off < n && nn < 64; off += *(unsigned short *)(buf + off + 16))
		names[nn++] = buf + off + 19;
	qsort(names, nn, sizeof names[0], cmpstr);
	add(" n=%d", nn);
	for (int i = 0; i < nn; i++)
		add(" %s", names[i]);
	end();
	// A buffer whose first 40 bytes are mapped and the rest not:
	// filldir64 stops at the first record that faults, and getdents
	// returns the records before it and moves past them alone (EFAULT
	// only when the first faults); what it wrote of the faulting record
	// in the mapped bytes shows in tail_untouched.
	long pg = sysconf(_SC_PAGESIZE);
	for (int is64 = 0; is64 < 2; is64++) {
		char *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		munmap(m + pg, pg);
		char *edge = m + pg - 40;
		memset(edge, 0xAA, 40);
		lseek(g, 0, SEEK_SET);
		T(syscall(is64 ? SYS_getdents64 : SYS_getdents, g, edge, 4096));
		long got = r;
		begin(is64 ? "getdents.straddle64" : "getdents.straddle");
		ret();
		int untouched = 1;
		for (long i = got > 0 ? got : 0; i < 40; i++)
			untouched &= (unsigned char)edge[i] == 0xAA;
		add(" tail_untouched=%s", yesno(untouched));
		int rest = 0;
		for (;;) {
			T(syscall(SYS_getdents64, g, buf, sizeof buf));
			if (r <= 0)
				break;
			for (long off = 0; off < r; off += *(unsigned short *)(buf + off + 16))
				rest++;
		}
		int first = 0;
		for (long off = 0; got > 0 && off < got; off += *(unsigned short *)(edge + off + 16))
			first++;
		add(" first=%d rest=%d", first, rest);
		T(syscall(is64 ? SYS_getdents64 : SYS_getdents, g, m + pg, 4096));
		add(" unmapped_at_end err=%s", en(e));
		end();
		munmap(m, pg);
	}
	close(g);
	close(dfd);
}

static void case_times(void) {
	struct stat a, b;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	struct stat d0, d1;
	sc_fstat(dfd, &d0);
	pause_ms(20);
	int fd = open(p("tm"), O_CREAT | O_RDWR, 0644);
	T(sc_fstat(fd, &a));
	freshcase("times.fresh", &a, NULL);
	struct statx x;
	T(sc_statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &x));
	begin("times.fresh.statx");
	ret();
	if (r == 0) {
		addstx(&x, &a);
		add(" amcEqual=%s btimeIsCtime=%s", yesno(tseq(stxts(x.stx_atime), stxts(x.stx_mtime)) &&
		                                          tseq(stxts(x.stx_mtime), stxts(x.stx_ctime))),
		    yesno(tseq(stxts(x.stx_btime), stxts(x.stx_ctime))));
	}
	end();
	sc_fstat(dfd, &d1);
	begin("times.create_moves_dir");
	add(" mtime=%s ctime=%s", yesno(tsgt(d1.st_mtim, d0.st_mtim)), yesno(tsgt(d1.st_ctim, d0.st_ctim)));
	end();

#define MOVED(name) \
	do { \
		sc_fstat(fd, &b); \
		begin(name); \
		add(" atime=%s mtime=%s ctime=%s", yesno(tsgt(b.st_atim, a.st_atim)), yesno(tsgt(b.st_mtim, a.st_mtim)), \
		    yesno(tsgt(b.st_ctim, a.st_ctim))); \
		add(" mEqC=%s", yesno(tseq(b.st_mtim, b.st_ctim))); \
		end(); \
		a = b; \
	} while (0)

	pause_ms(20);
	write(fd, "data", 4);
	MOVED("times.write");
	pause_ms(20);
	char buf[8];
	pread(fd, buf, 4, 0);
	MOVED("times.read");
	pause_ms(20);
	pread(fd, buf, 4, 0);
	MOVED("times.read_again");
	pause_ms(20);
	write(fd, "", 0);
	MOVED("times.write_zero");
	pause_ms(20);
	ftruncate(fd, 100);
	MOVED("times.ftruncate_grow");
	pause_ms(20);
	ftruncate(fd, 100);
	MOVED("times.ftruncate_same");
	pause_ms(20);
	pwrite(fd, "x", 1, 1);
	MOVED("times.pwrite");
	pause_ms(20);
	lseek(fd, 0, SEEK_SET);
	MOVED("times.lseek");
	pause_ms(20);
	close(open(p("tm"), O_RDWR | O_TRUNC));
	MOVED("times.open_trunc");
	pause_ms(20);
	close(open(p("tm"), O_RDWR | O_TRUNC));
	MOVED("times.open_trunc_empty");
	pause_ms(20);
	close(open(p("tm"), O_RDWR | O_CREAT, 0644));
	MOVED("times.open_creat_existing");
	pause_ms(20);
	int l = open(p("tm"), O_RDONLY);
	MOVED("times.open_rdonly");
	close(l);
	pause_ms(20);
	sc_fstat(dfd, &d0);
	unlink(p("tm"));
	MOVED("times.unlink");
	sc_fstat(dfd, &d1);
	begin("times.unlink_moves_dir");
	add(" mtime=%s ctime=%s", yesno(tsgt(d1.st_mtim, d0.st_mtim)), yesno(tsgt(d1.st_ctim, d0.st_ctim)));
	end();
	pause_ms(20);
	sc_fstat(dfd, &d0);
	mkdir(p("tmd"), 0755);
	sc_fstat(dfd, &d1);
	begin("times.mkdir_moves_dir");
	add(" mtime=%s ctime=%s", yesno(tsgt(d1.st_mtim, d0.st_mtim)), yesno(tsgt(d1.st_ctim, d0.st_ctim)));
	end();
	T(stat(p("tmd"), &b));
	freshcase("times.mkdir_fresh", &b, NULL);
	close(fd);
	close(dfd);
}

int main(int argc, char **argv) {
	if (argc >= 4 && strcmp(argv[1], "exec-child") == 0)
		return exec_child(argc, argv);
	if (argc != 2) {
		fprintf(stderr, "usage: fdstat DIR\n");
		return 2;
	}
	dir = argv[1];
	umask(022);
	base = open("/dev/null", O_RDONLY);
	close(base);
	SIMPLE("setup.mkdir", mkdir(dir, 0755));
	T(stat(dir, &dirst));
	stat("/", &rootst);
	freshcase("setup.dir", &dirst, &dirst);
	// The executable for the exec case: /proc/self/exe is the host's.
	char *self = "/proc/self/exe";

	case_lowest_fd();
	case_emfile();
	case_cloexec(self);
	case_offsets();
	case_close();
	case_close_range();
	case_fstatat();
	case_opath();
	case_statx();
	case_unlink_open();
	case_open();
	case_rw();
	case_fcntl();
	case_dirs();
	case_getdents();
	case_times();

	T(stat(dir, &dirst));
	stcase("teardown.dir", &dirst, NULL);
	begin("END");
	T(open("/dev/null", O_RDONLY));
	add(" lowest_free=base+%ld", r - base);
	end();
	return 0;
}
