// uring_open PATH: creates PATH with io_uring's IORING_OP_OPENAT
// (O_CREAT|O_WRONLY, relative to the working directory), a path call that
// never passes through a system call of its own, and prints the
// completion's result: a descriptor number, or -errno. "setup -errno"
// when the kernel refuses io_uring itself.
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: uring_open PATH\n");
		return 2;
	}
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	int ring = syscall(__NR_io_uring_setup, 4, &p);
	if (ring < 0) {
		printf("setup %d\n", -errno);
		return 0;
	}
	size_t sqsz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP)
		sqsz = cqsz = sqsz > cqsz ? sqsz : cqsz;
	char *sq = mmap(0, sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
	char *cq = sq;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP))
		cq = mmap(0, cqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
	struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	unsigned *tail = (unsigned *)(sq + p.sq_off.tail);
	unsigned idx = *tail & *(unsigned *)(sq + p.sq_off.ring_mask);
	struct io_uring_sqe *e = &sqes[idx];
	memset(e, 0, sizeof *e);
	e->opcode = IORING_OP_OPENAT;
	e->fd = AT_FDCWD;
	e->addr = (unsigned long)argv[1];
	e->len = 0644;
	e->open_flags = O_CREAT | O_WRONLY;
	((unsigned *)(sq + p.sq_off.array))[idx] = idx;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
		perror("io_uring_enter");
		return 1;
	}
	unsigned head = __atomic_load_n((unsigned *)(cq + p.cq_off.head), __ATOMIC_ACQUIRE);
	struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	printf("%d\n", cqes[head & *(unsigned *)(cq + p.cq_off.ring_mask)].res);
	return 0;
}
