// SPDX-License-Identifier: GPL-2.0-only
/*
 * The NBD client's io_uring (nbd_uring.h): set up, SQEs prepared on the
 * connections' fixed files, submissions (each after the before_submit
 * hook: the timeline's send stamps), waits, and completions dispatched to
 * the op in their user data.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nbd_uring.h"

int nbd_uring_init(struct nbd_uring *u, unsigned int entries, const int *fds,
		   unsigned int nfds, char *err, size_t errlen)
{
	struct io_uring_params p = { 0 };
	int ret;

	/*
	 * One job thread owns the ring; completions need not interrupt it
	 * (5.19+). Not DEFER_TASKRUN: it also defers the kernel's retries of
	 * partial socket sends and receives until the next enter, which
	 * stalls large transfers (64 KiB randrw lost a third of its
	 * efficiency). A plain ring on older kernels.
	 */
	static const unsigned int tries[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN |
			IORING_SETUP_TASKRUN_FLAG,
		0,
	};
	unsigned int i;

	for (i = 0, ret = -EINVAL; i < 2 && ret == -EINVAL; i++) {
		memset(&p, 0, sizeof(p));
		p.flags = tries[i];
		ret = io_uring_queue_init_params(entries, &u->ring, &p);
	}
	if (ret < 0) {
		snprintf(err, errlen, "io_uring_queue_init: %s%s", strerror(-ret),
			 ret == -EPERM ? " (io_uring disabled by sysctl kernel.io_uring_disabled?)" : "");
		return -1;
	}
	/* Saves a file table lookup on every io_uring_enter; optional. */
	io_uring_register_ring_fd(&u->ring);
	ret = io_uring_register_files(&u->ring, fds, nfds);
	if (ret < 0) {
		snprintf(err, errlen, "io_uring_register_files: %s",
			 strerror(-ret));
		io_uring_queue_exit(&u->ring);
		return -1;
	}
	return 0;
}

void nbd_uring_exit(struct nbd_uring *u)
{
	io_uring_queue_exit(&u->ring);
}

/* Every submission goes through here or nbd_uring_wait(): the hook first. */
static int submit(struct nbd_uring *u)
{
	if (u->before_submit)
		u->before_submit(u->arg);
	return io_uring_submit(&u->ring);
}

static struct io_uring_sqe *get_sqe(struct nbd_uring *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

	if (!sqe) {
		/* The ring holds two entries per connection: never full. */
		submit(u);
		sqe = io_uring_get_sqe(&u->ring);
	}
	return sqe;
}

static void prepared(struct io_uring_sqe *sqe, struct nbd_uring_op *op)
{
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, op);
}

void nbd_uring_sendmsg(struct nbd_uring *u, struct nbd_uring_op *op,
		       unsigned int idx, const struct msghdr *msg)
{
	struct io_uring_sqe *sqe = get_sqe(u);

	io_uring_prep_sendmsg(sqe, idx, msg, MSG_NOSIGNAL);
	prepared(sqe, op);
}

void nbd_uring_recvmsg(struct nbd_uring *u, struct nbd_uring_op *op,
		       unsigned int idx, struct msghdr *msg)
{
	struct io_uring_sqe *sqe = get_sqe(u);

	io_uring_prep_recvmsg(sqe, idx, msg, 0);
	prepared(sqe, op);
}

int nbd_uring_flush(struct nbd_uring *u)
{
	int ret;

	if (!io_uring_sq_ready(&u->ring))
		return 0;
	do {
		ret = submit(u);
	} while (ret == -EINTR);
	return ret < 0 ? ret : 0;
}

int nbd_uring_wait(struct nbd_uring *u, struct __kernel_timespec *ts)
{
	struct io_uring_cqe *cqe;

	if (u->before_submit)
		u->before_submit(u->arg);
	return io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, ts, NULL);
}

void nbd_uring_dispatch(struct nbd_uring *u)
{
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0;

	io_uring_for_each_cqe(&u->ring, head, cqe) {
		struct nbd_uring_op *op = io_uring_cqe_get_data(cqe);

		op->done(op, cqe->res);
		seen++;
	}
	io_uring_cq_advance(&u->ring, seen);
}
