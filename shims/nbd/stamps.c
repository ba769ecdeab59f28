// SPDX-License-Identifier: GPL-2.0-only
/*
 * A connection's timeline records; see stamps.h.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "peer.h"
#include "shim_timeline.h"
#include "stamps.h"
#include "torus_clock.h"

static const char *const stamp_names[ST_COUNT] = {
	[ST_RECEIVED] = "received",
	[ST_STARTED] = "started",
	[ST_STORED] = "stored",
	[ST_REPLIED] = "replied",
};

static uint16_t tl_op_of(uint16_t type)
{
	switch (type) {
	case NBD_CMD_READ:
		return TL_OP_READ;
	case NBD_CMD_WRITE:
		return TL_OP_WRITE;
	case NBD_CMD_TRIM:
		return TL_OP_TRIM;
	case NBD_CMD_FLUSH:
		return TL_OP_FLUSH;
	default:
		return TL_OP_OTHER;
	}
}

static void put(struct peer *c, const struct tl_rec *rec)
{
	*tl_next(c->tl) = *rec;
}

void stamps_open(struct peer *c)
{
	if (!shim_timeline_dir)
		return;
	c->tl_pend = malloc(ST_PENDING_MAX * sizeof(*c->tl_pend));
	if (!c->tl_pend) {
		shim_err("%s: out of memory for its timeline records; serving on without them",
			 c->peer);
		return;
	}
	c->tl = shim_timeline_open(c->id, "nbd-cookie", stamp_names,
				   ST_COUNT);
	if (!c->tl) {
		free(c->tl_pend);
		c->tl_pend = NULL;
	}
}

void stamps_close(struct peer *c)
{
	unsigned int i;

	if (!c->tl)
		return;
	for (i = 0; i < c->tl_npend; i++)
		put(c, &c->tl_pend[i].rec);
	if (c->tl_unsent)
		shim_info("%s: %llu timeline records written before their replies were sent (more than %d replies waited)",
			  c->peer, (unsigned long long)c->tl_unsent,
			  ST_PENDING_MAX);
	shim_timeline_close(c->tl);
	c->tl = NULL;
	free(c->tl_pend);
	c->tl_pend = NULL;
}

void stamps_begin(struct peer *c, const struct nbd_request *req,
		  bool execute)
{
	struct tl_rec *r = &c->tl_cur;

	memset(r, 0, sizeof(*r));
	r->key = req->cookie;
	r->offset = req->offset;
	r->len = req->length;
	r->op = tl_op_of(req->type);
	r->stream = c->id;
	r->t[ST_RECEIVED] = c->recv_ns;
	if (execute)
		r->t[ST_STARTED] = now_ns();
	c->tl_busy = execute;
}

void stamps_end(struct peer *c, bool queued)
{
	struct peer_pend *p;

	c->tl_busy = false;
	if (!queued)
		return;
	if (c->tl_cur.t[ST_STARTED])
		c->tl_cur.t[ST_STORED] = now_ns();
	if (c->tl_npend == ST_PENDING_MAX) {
		/* the oldest goes out without its reply's stamp */
		put(c, &c->tl_pend[0].rec);
		c->tl_unsent++;
		c->tl_npend--;
		memmove(c->tl_pend, c->tl_pend + 1,
			c->tl_npend * sizeof(*c->tl_pend));
	}
	p = &c->tl_pend[c->tl_npend++];
	p->rec = c->tl_cur;
	p->iov_end = c->niov;
}

void stamps_sent(struct peer *c, int k, uint64_t replied)
{
	unsigned int i, n;

	for (n = 0; n < c->tl_npend && c->tl_pend[n].iov_end <= k; n++) {
		c->tl_pend[n].rec.t[ST_REPLIED] = replied;
		put(c, &c->tl_pend[n].rec);
	}
	c->tl_npend -= n;
	memmove(c->tl_pend, c->tl_pend + n, c->tl_npend * sizeof(*c->tl_pend));
	for (i = 0; i < c->tl_npend; i++)
		c->tl_pend[i].iov_end -= k;
	/*
	 * A send while a request executes (a fence before a write, a full
	 * queue) comes before its store does: the store starts after it.
	 */
	if (c->tl_busy)
		c->tl_cur.t[ST_STARTED] = now_ns();
}
