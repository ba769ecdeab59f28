/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The NBD client's io_uring (nbd_uring.c): made with the connections'
 * sockets as fixed files, a sendmsg or recvmsg prepared on one, submitted,
 * waited for, and each completion handed to the op its SQE was prepared
 * for. The send and receive sides both use it; it knows neither.
 */
#ifndef TORUS_NBD_URING_H
#define TORUS_NBD_URING_H

#include <liburing.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* What a completion goes to: its SQE's user data points here. */
struct nbd_uring_op {
	void (*done)(struct nbd_uring_op *op, int res);
};

struct nbd_uring {
	struct io_uring ring;
	/*
	 * Timeline only (NULL: off): called just before each submission, so
	 * that a send is stamped before the kernel copies it, not after.
	 */
	void (*before_submit)(void *arg);
	void *arg;
};

/*
 * entries SQEs (two per connection and spare); fds[0..nfds) registered as
 * fixed files 0..nfds. 0, or -1 with err set; fds are not closed.
 */
int nbd_uring_init(struct nbd_uring *u, unsigned int entries, const int *fds,
		   unsigned int nfds, char *err, size_t errlen);
void nbd_uring_exit(struct nbd_uring *u);

/* A sendmsg / recvmsg on fixed file idx, its completion to op->done. */
void nbd_uring_sendmsg(struct nbd_uring *u, struct nbd_uring_op *op,
		       unsigned int idx, const struct msghdr *msg);
void nbd_uring_recvmsg(struct nbd_uring *u, struct nbd_uring_op *op,
		       unsigned int idx, struct msghdr *msg);

/* Submits what is prepared, if anything: 0 or a negative errno. */
int nbd_uring_flush(struct nbd_uring *u);
/* Submits what is prepared and waits for a completion, ts at most. */
int nbd_uring_wait(struct nbd_uring *u, struct __kernel_timespec *ts);
/* Hands every posted completion to its op. */
void nbd_uring_dispatch(struct nbd_uring *u);

/* SQEs prepared and not submitted yet. */
static inline bool nbd_uring_prepared(struct nbd_uring *u)
{
	return io_uring_sq_ready(&u->ring);
}

/*
 * Completions the kernel holds until it is entered
 * (IORING_SETUP_TASKRUN_FLAG): nbd_uring_get_events() posts them.
 */
static inline bool nbd_uring_task_work(struct nbd_uring *u)
{
	return IO_URING_READ_ONCE(*u->ring.sq.kflags) & IORING_SQ_TASKRUN;
}

static inline void nbd_uring_get_events(struct nbd_uring *u)
{
	io_uring_get_events(&u->ring);
}

static inline bool nbd_uring_posted(struct nbd_uring *u)
{
	return io_uring_cq_ready(&u->ring);
}

/* Waits for a completion, submitting nothing: 0 or a negative errno. */
static inline int nbd_uring_wait_posted(struct nbd_uring *u)
{
	struct io_uring_cqe *cqe;

	return io_uring_wait_cqe(&u->ring, &cqe);
}

/* Polls readable when completions are posted. */
static inline int nbd_uring_fd(const struct nbd_uring *u)
{
	return u->ring.ring_fd;
}

#endif /* TORUS_NBD_URING_H */
