// SPDX-License-Identifier: GPL-2.0-only
/*
 * The NBD client's life (nbd_client_int.h): making it, its io_uring and
 * connections, losing a connection, cancelling, freeing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nbd_client_int.h"
#include "nbd_connect.h"
#include "nbd_proto.h"

/*
 * Closes a connection and fails everything outstanding on it with error;
 * the other connections carry on. The caller has said why.
 */
void nbdc_drop_conn(struct nbd_conn *cn, int error)
{
	struct nbd_client *c = cn->client;
	unsigned int i;

	if (cn->dead)
		return;
	cn->dead = true;
	c->live_conns--;
	/* Queued-but-unsent requests are failed with the sent ones. */
	cn->inflight += cn->npending;
	cn->npending = 0;
	cn->nr_marks = 0;
	for (i = 0; i < c->depth; i++) {
		struct nbd_slot *s = &c->slots[i];

		if (s->busy && s->conn == cn)
			nbdc_complete_slot(c, s, error);
	}
	nbd_rx_init(&cn->rx, cn->rx.ops, cn, cn->rx.structured,
		    cn->rx.max_body);
	/* Ends any send or receive still in flight on it. */
	shutdown(cn->fd, SHUT_RDWR);
}

/* Fails every request on a lost connection with EIO, saying why once. */
void nbdc_conn_lost(struct nbd_conn *cn, const char *fmt, ...)
{
	struct nbd_client *c = cn->client;
	char why[320];
	va_list ap;

	if (cn->dead)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	fprintf(stderr,
		"torus: %s: connection %u lost: %s; its %u outstanding requests fail with EIO\n",
		c->label, cn->idx + 1, why, cn->inflight + cn->npending);
	nbdc_drop_conn(cn, EIO);
}

void nbd_client_set_stamper(struct nbd_client *c,
			    const struct torus_stamper *stamp)
{
	c->stamp = *stamp;
}

int nbd_client_fd(const struct nbd_client *c)
{
	return c->ring.ring_fd;
}

void nbd_client_cancel(struct nbd_client *c, int error)
{
	unsigned int i, n = nbdc_outstanding(c);

	if (!n)
		return;
	fprintf(stderr,
		"torus: %s: %u requests still outstanding as the job stops; they fail with %s\n",
		c->label, n, strerror(error));
	for (i = 0; i < c->nconns; i++)
		if (c->conns[i].inflight || c->conns[i].npending)
			nbdc_drop_conn(&c->conns[i], error);
}

static int setup_ring(struct nbd_client *c, const int *fds, char *err,
		      size_t errlen)
{
	struct io_uring_params p = { 0 };
	unsigned int entries = 2 * c->nconns + 2;
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
		ret = io_uring_queue_init_params(entries, &c->ring, &p);
	}
	if (ret < 0) {
		snprintf(err, errlen, "io_uring_queue_init: %s%s", strerror(-ret),
			 ret == -EPERM ? " (io_uring disabled by sysctl kernel.io_uring_disabled?)" : "");
		return -1;
	}
	/* Saves a file table lookup on every io_uring_enter; optional. */
	io_uring_register_ring_fd(&c->ring);
	ret = io_uring_register_files(&c->ring, fds, c->nconns);
	if (ret < 0) {
		snprintf(err, errlen, "io_uring_register_files: %s",
			 strerror(-ret));
		io_uring_queue_exit(&c->ring);
		return -1;
	}
	return 0;
}

static void free_client(struct nbd_client *c)
{
	unsigned int i;

	if (!c)
		return;
	for (i = 0; c->conns && i < c->nconns; i++) {
		free(c->conns[i].pending);
		free(c->conns[i].hdrbuf);
		free(c->conns[i].iov);
		free(c->conns[i].rbuf_mem);
		free(c->conns[i].marks);
	}
	free(c->conns);
	free(c->slots);
	free(c->free_slots);
	free(c);
}

struct nbd_client *nbd_client_new(const int *fds, unsigned int nconns,
				  unsigned int depth,
				  const struct nbd_export *exp,
				  unsigned int poll_us, unsigned int timeout_s,
				  const struct torus_completer *done,
				  const char *label, char *err, size_t errlen)
{
	struct nbd_client *c;
	unsigned int i;

	c = calloc(1, sizeof(*c));
	if (!c)
		goto oom;
	c->nconns = nconns;
	c->live_conns = nconns;
	c->depth = depth;
	c->poll_ns = (uint64_t)poll_us * 1000;
	c->hold_max = depth >= HOLD_MIN_DEPTH ? depth / 2 : 0;
	c->timeout_s = timeout_s;
	c->timeout_ns = (uint64_t)timeout_s * 1000000000ULL;
	c->done = *done;
	snprintf(c->label, sizeof(c->label), "%s", label);
	c->conns = calloc(nconns, sizeof(*c->conns));
	c->slots = calloc(depth, sizeof(*c->slots));
	c->free_slots = calloc(depth, sizeof(*c->free_slots));
	if (!c->conns || !c->slots || !c->free_slots)
		goto oom;
	for (i = 0; i < depth; i++)
		c->free_slots[i] = &c->slots[depth - 1 - i];
	c->nfree = depth;

	for (i = 0; i < nconns; i++) {
		struct nbd_conn *cn = &c->conns[i];

		cn->client = c;
		cn->idx = i;
		cn->pending = calloc(depth, sizeof(*cn->pending));
		cn->hdrbuf = malloc((size_t)depth * NBD_REQUEST_LEN);
		cn->iov = calloc(2 * (size_t)depth, sizeof(*cn->iov));
		cn->rbuf_mem = aligned_alloc(64, RBUF_SIZE + 64);
		cn->marks = calloc(depth, sizeof(*cn->marks));
		if (!cn->pending || !cn->hdrbuf || !cn->iov || !cn->rbuf_mem ||
		    !cn->marks)
			goto oom;
		cn->rbuf = cn->rbuf_mem + RBUF_SKEW;
		nbd_rx_init(&cn->rx, &nbdc_rx_ops, cn, exp->structured_replies,
			    MAX_CHUNK_BODY);
	}
	if (setup_ring(c, fds, err, errlen))
		goto fail;
	for (i = 0; i < nconns; i++)
		c->conns[i].fd = fds[i];
	return c;
oom:
	snprintf(err, errlen, "out of memory allocating the NBD client");
fail:
	for (i = 0; i < nconns; i++)
		close(fds[i]);
	free_client(c);
	return NULL;
}

void nbd_client_free(struct nbd_client *c)
{
	struct io_uring_cqe *cqe;
	unsigned int i;
	bool busy;

	if (!c)
		return;
	/* Nothing may still point into our buffers when they are freed. */
	for (;;) {
		busy = false;
		for (i = 0; i < c->nconns; i++) {
			struct nbd_conn *cn = &c->conns[i];

			if (cn->sending || cn->receiving) {
				if (!cn->dead) {
					cn->dead = true;
					shutdown(cn->fd, SHUT_RDWR);
				}
				busy = true;
			}
		}
		if (!busy || io_uring_wait_cqe(&c->ring, &cqe))
			break;
		nbdc_process_cqes(c);
	}
	for (i = 0; i < c->nconns; i++) {
		if (c->conns[i].dead)
			close(c->conns[i].fd);
		else
			nbd_disconnect(c->conns[i].fd);
	}
	io_uring_queue_exit(&c->ring);
	free_client(c);
}
