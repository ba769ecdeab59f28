// SPDX-License-Identifier: GPL-2.0-only
/*
 * The NBD client's life (nbd_client_int.h): making it, its io_uring and
 * connections, cancelling, freeing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nbd_client_int.h"
#include "nbd_connect.h"
#include "nbd_proto.h"

void nbd_client_set_stamper(struct nbd_client *c,
			    const struct torus_stamper *stamp)
{
	c->stamp = *stamp;
	/* Each submission then stamps the sends it carries. */
	c->uring.before_submit = stamp->fn ? nbdc_stamp_sends : NULL;
	c->uring.arg = c;
}

int nbd_client_fd(const struct nbd_client *c)
{
	return nbd_uring_fd(&c->uring);
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
		cn->send_op.done = nbdc_send_done;
		cn->recv_op.done = nbdc_recv_done;
		nbd_rx_init(&cn->rx, &nbdc_rx_ops, cn, exp->structured_replies,
			    MAX_CHUNK_BODY);
	}
	if (nbd_uring_init(&c->uring, 2 * nconns + 2, fds, nconns, err, errlen))
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
		if (!busy || nbd_uring_wait_posted(&c->uring))
			break;
		nbd_uring_dispatch(&c->uring);
	}
	for (i = 0; i < c->nconns; i++) {
		if (c->conns[i].dead)
			close(c->conns[i].fd);
		else
			nbd_disconnect(c->conns[i].fd);
	}
	nbd_uring_exit(&c->uring);
	free_client(c);
}
