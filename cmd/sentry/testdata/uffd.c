// uffd: a userfaultfd that handles the kernel's faults is refused in the
// sandbox (the sentry's reads of the guest's memory would wait on it for
// good), by the call and by /dev/userfaultfd; a user-mode-only one works,
// and a call whose path is on a page nobody has filled fails with EFAULT
// while the rest of the guest goes on.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

static const char *res(long r) {
	if (r >= 0)
		return "ok";
	return errno == EPERM ? "EPERM" : strerror(errno);
}

static char *page;

static void *stat_on_page(void *arg) {
	struct stat st;
	long r = stat(page, &st);
	printf("stat on an unfilled page: %s\n", r < 0 && errno == EFAULT ? "EFAULT" : res(r));
	return NULL;
}

int main(int argc, char **argv) {
	char path[256];
	snprintf(path, sizeof path, "%s/uffd-file", argv[1]);
	close(open(path, O_CREAT | O_WRONLY, 0644));
	long k = syscall(SYS_userfaultfd, O_CLOEXEC);
	printf("userfaultfd: %s\n", res(k));
	long u = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	printf("userfaultfd user-mode-only: %s\n", res(u));
	int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev >= 0) {
		long d = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC);
		printf("/dev/userfaultfd new: %s\n", res(d));
		long du = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | UFFD_USER_MODE_ONLY);
		printf("/dev/userfaultfd new user-mode-only: %s\n", res(du));
	} else {
		printf("/dev/userfaultfd new: EPERM\n/dev/userfaultfd new user-mode-only: ok\n");
	}
	// The device again, as a node on the sentry's tmpfs (mknod needs the
	// host's root: --userns=off).
	struct stat ds;
	char node[256];
	snprintf(node, sizeof node, "%s/uffd-node", argv[1]);
	if (stat("/dev/userfaultfd", &ds) == 0 && mknod(node, S_IFCHR | 0600, ds.st_rdev) == 0) {
		int n = open(node, O_RDWR | O_CLOEXEC);
		printf("node new: %s\n", n < 0 ? res(n) : res(ioctl(n, USERFAULTFD_IOC_NEW, O_CLOEXEC)));
		unlink(node);
	} else {
		printf("node: %s\n", res(-1));
	}
	if (k >= 0)
		u = k; // the case the sandbox refuses: a stat on it would wait for the fill below
	if (u < 0)
		return 1;
	struct uffdio_api api = {.api = UFFD_API};
	if (ioctl(u, UFFDIO_API, &api) != 0) {
		perror("UFFDIO_API");
		return 1;
	}
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct uffdio_register reg = {.range = {(unsigned long)page, 4096}, .mode = UFFDIO_REGISTER_MODE_MISSING};
	if (ioctl(u, UFFDIO_REGISTER, &reg) != 0) {
		perror("UFFDIO_REGISTER");
		return 1;
	}
	pthread_t t;
	pthread_create(&t, NULL, stat_on_page, NULL);
	// The thread's stat either failed at once or waits for the page; the
	// rest of the guest goes on meanwhile, then fills the page.
	sleep(1);
	struct stat st;
	printf("another stat meanwhile: %s\n", res(stat(path, &st)));
	fflush(stdout);
	static char src[4096] __attribute__((aligned(4096)));
	strcpy(src, path);
	struct uffdio_copy cp = {.dst = (unsigned long)page, .src = (unsigned long)src, .len = 4096};
	ioctl(u, UFFDIO_COPY, &cp);
	pthread_join(t, NULL);
	unlink(path);
	return 0;
}
