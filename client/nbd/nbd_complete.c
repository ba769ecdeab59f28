// SPDX-License-Identifier: GPL-2.0-only
/*
 * How the NBD client's requests end (nbd_client_int.h): one at a time,
 * handed to the completer with its timeline stamps as its reply is parsed
 * or it times out; or all of a connection's at once when the connection is
 * lost, which both the send and the receive side find.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>

#include "nbd_client_int.h"

/* A request that went on the wire: its stamps, keyed by its cookie. */
static void stamp_slot(struct nbd_client *c, const struct nbd_slot *s)
{
	struct torus_wire_stamps w = {
		.key = (uint64_t)s->gen << 32 | (uint32_t)(s - c->slots),
		.offset = s->rq.offset,
		.len = s->rq.len,
		.stream = s->conn->idx,
		.t = { s->t[0], s->t[1], s->t[2] },
	};

	c->stamp.fn(c->stamp.arg, s->user, &w);
}

/* The one hand-off of a finished request: straight to the completer. */
void nbdc_complete_slot(struct nbd_client *c, struct nbd_slot *s, int error)
{
	if (c->stamp.fn && s->sent)
		stamp_slot(c, s);
	s->busy = false;
	s->sent = false;
	s->conn->inflight--;
	s->conn->big_reads -= s->big;
	c->free_slots[c->nfree++] = s;
	c->completed++;
	c->done.fn(c->done.arg, s->user, error);
}

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
