// SPDX-License-Identifier: GPL-2.0-only
/*
 * The NBD client's submission side (nbd_client_int.h): requests queued
 * per connection, held for a batch while the connection is busy, and
 * sent as one message of headers back to back with write payloads; the
 * timeline's sent stamps.
 */
#include <errno.h>
#include <string.h>

#include "nbd_client_int.h"
#include "nbd_proto.h"
#include "torus_clock.h"
#include "torus_util.h"

/* Timeline: s goes in the send being built, after what is there. */
static void mark_send(struct nbd_conn *cn, struct nbd_slot *s)
{
	uint64_t end = cn->nr_marks ? cn->marks[cn->nr_marks - 1].end : 0;

	end += NBD_REQUEST_LEN;
	if (s->rq.type == NBD_CMD_WRITE)
		end += s->rq.len;
	cn->marks[cn->nr_marks++] = (struct nbd_send_mark){
		.slot = s, .gen = s->gen, .end = end,
	};
}

/*
 * Timeline: bytes more of the send went; the requests whose last byte
 * was among them are done with (their stamp stays).
 */
static void mark_sent(struct nbd_conn *cn, uint64_t bytes)
{
	cn->send_done += bytes;
	while (cn->nr_marked < cn->nr_marks &&
	       cn->marks[cn->nr_marked].end <= cn->send_done)
		cn->nr_marked++;
}

/*
 * Timeline: the sends about to be submitted may carry the last bytes of
 * the requests not yet all gone: their sent stamp is now, just before the
 * kernel copies them to the socket (it returns once they are accepted,
 * or a few microseconds later). Read after the system call, the stamp
 * would come after the server's own receive whenever this thread is
 * preempted in between. A slot finished and reused meanwhile (the
 * connection dropped) is left alone.
 */
void nbdc_stamp_sends(void *client)
{
	struct nbd_client *c = client;
	uint64_t now = 0;
	unsigned int k, i;

	for (k = 0; k < c->nconns && c->sends_prepped; k++) {
		struct nbd_conn *cn = &c->conns[k];

		if (!cn->send_prepped)
			continue;
		cn->send_prepped = false;
		c->sends_prepped--;
		for (i = cn->nr_marked; i < cn->nr_marks; i++) {
			struct nbd_send_mark *m = &cn->marks[i];

			if (!m->slot->busy || m->slot->gen != m->gen)
				continue;
			if (!now)
				now = now_ns();
			m->slot->t[0] = now;
		}
	}
}

static void prep_send(struct nbd_conn *cn)
{
	unsigned int n = cn->iov_cnt - cn->iov_pos;

	if (n > MAX_SEND_IOV)
		n = MAX_SEND_IOV;
	memset(&cn->msg, 0, sizeof(cn->msg));
	cn->msg.msg_iov = &cn->iov[cn->iov_pos];
	cn->msg.msg_iovlen = n;
	nbd_uring_sendmsg(&cn->client->uring, &cn->send_op, cn->idx, &cn->msg);
	cn->sending = true;
	if (cn->client->stamp.fn && !cn->send_prepped) {
		cn->send_prepped = true;
		cn->client->sends_prepped++;
	}
}

/* Moves the pending requests into one send: headers back to back. */
static void start_send(struct nbd_conn *cn)
{
	struct nbd_client *c = cn->client;
	uint64_t now = c->timeout_ns ? now_ns() : 0;
	uint8_t *hdr = cn->hdrbuf;
	struct iovec *run = NULL;
	unsigned int i;

	cn->iov_cnt = 0;
	cn->iov_pos = 0;
	cn->nr_marks = 0;
	cn->nr_marked = 0;
	cn->send_done = 0;
	for (i = 0; i < cn->npending; i++) {
		struct nbd_slot *s = cn->pending[i];
		struct nbd_request req = {
			.flags = s->flags,
			.type = s->rq.type,
			.cookie = (uint64_t)++s->gen << 32 | (s - c->slots),
			.offset = s->rq.offset,
			.length = s->rq.len,
		};

		s->sent = true;
		s->sent_ns = now;
		nbd_encode_request(hdr, &req);
		if (run) {
			run->iov_len += NBD_REQUEST_LEN;
		} else {
			run = &cn->iov[cn->iov_cnt++];
			run->iov_base = hdr;
			run->iov_len = NBD_REQUEST_LEN;
		}
		hdr += NBD_REQUEST_LEN;
		if (s->rq.type == NBD_CMD_WRITE) {
			cn->iov[cn->iov_cnt].iov_base = s->rq.buf;
			cn->iov[cn->iov_cnt].iov_len = s->rq.len;
			cn->iov_cnt++;
			run = NULL;
		}
		if (c->stamp.fn)
			mark_send(cn, s);
	}
	cn->inflight += cn->npending;
	cn->npending = 0;
	prep_send(cn);
}

void nbdc_send_done(struct nbd_uring_op *op, int res)
{
	struct nbd_conn *cn = container_of(op, struct nbd_conn, send_op);
	size_t n = res;

	cn->sending = false;
	if (cn->dead)
		return;
	if (res < 0) {
		nbdc_conn_lost(cn, "send: %s", strerror(-res));
		return;
	}
	if (cn->client->stamp.fn)
		mark_sent(cn, n);
	/* Skip what went out; a short send continues where it stopped. */
	while (n && cn->iov_pos < cn->iov_cnt) {
		struct iovec *v = &cn->iov[cn->iov_pos];

		if (n >= v->iov_len) {
			n -= v->iov_len;
			cn->iov_pos++;
		} else {
			v->iov_base = (uint8_t *)v->iov_base + n;
			v->iov_len -= n;
			n = 0;
		}
	}
	if (cn->iov_pos < cn->iov_cnt)
		prep_send(cn);
	else if (cn->npending)
		start_send(cn);
}

int nbd_client_queue(struct nbd_client *c, uint16_t type, uint16_t flags,
		     uint64_t offset, uint32_t len, void *buf, void *user)
{
	struct nbd_conn *cn = NULL;
	struct nbd_slot *s;
	unsigned int i;

	if (!c->live_conns)
		return -ENOTCONN;
	if (!c->nfree)
		return -EBUSY;

	/* Round robin over the live connections. */
	for (i = 0; i < c->nconns; i++) {
		cn = &c->conns[c->next_conn];
		c->next_conn = (c->next_conn + 1) % c->nconns;
		if (!cn->dead)
			break;
	}

	s = c->free_slots[--c->nfree];
	s->user = user;
	s->conn = cn;
	s->rq.buf = buf;
	s->rq.offset = offset;
	s->rq.len = len;
	s->rq.type = type;
	nbd_rx_req_init(&s->rq);
	s->flags = flags;
	s->busy = true;
	if (c->stamp.fn)
		memset(s->t, 0, sizeof(s->t));
	s->big = type == NBD_CMD_READ && len >= BIG_READ;
	cn->big_reads += s->big;
	cn->pending[cn->npending++] = s;
	return 0;
}

/*
 * Starts the sends that are due. With hold set, new requests stay queued
 * while the connection is busy anyway: the server has a quarter of the
 * depth to work on, or fio has completions to take (fio then calls
 * ->getevents again, which sends them). Up to half the depth is held; it
 * then goes out in one message, often with the wait for replies. At depth
 * 64 this turns about one io_uring_enter and one socket send per request
 * into one per batch, and the server, too, wakes once per batch. Half and
 * a quarter rather than an eighth and 8: less CPU per I/O at every depth
 * measured (docs/performance-history.md). Below HOLD_MIN_DEPTH nothing is held.
 */
void nbdc_start_sends(struct nbd_client *c, bool hold)
{
	unsigned int i;

	for (i = 0; i < c->nconns; i++) {
		struct nbd_conn *cn = &c->conns[i];

		if (cn->npending && !cn->sending && !cn->dead &&
		    !(hold && cn->npending < c->hold_max &&
		      (cn->inflight >= c->depth / 4 || c->completed)))
			start_send(cn);
	}
}

int nbd_client_submit(struct nbd_client *c)
{
	nbdc_start_sends(c, true);
	return nbd_uring_flush(&c->uring);
}
