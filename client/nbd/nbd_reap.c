// SPDX-License-Identifier: GPL-2.0-only
/*
 * The NBD client's receiving side (nbd_client_int.h): receives into the
 * staging buffer or straight into a read's buffer, replies parsed
 * (proto/nbd/nbd_replies.c), each finished request handed to the
 * completer; the reap loop, its busy-poll and request timeouts, and the
 * send of everything before a caller's own wait.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nbd_client_int.h"
#include "nbd_proto.h"
#include "torus_clock.h"
#include "torus_util.h"

static struct nbd_rx_req *rx_lookup(void *owner, uint64_t cookie)
{
	struct nbd_conn *cn = owner;
	struct nbd_client *c = cn->client;
	uint32_t i = COOKIE_SLOT(cookie);
	struct nbd_slot *s;

	if (i >= c->depth)
		return NULL;
	s = &c->slots[i];
	if (!s->busy || !s->sent || s->conn != cn || s->gen != COOKIE_GEN(cookie))
		return NULL;
	/* The parser looks a reply up as soon as its header is in. */
	if (c->stamp.fn && !s->t[1])
		s->t[1] = c->rx_now;
	return &s->rq;
}

static void rx_complete(void *owner, struct nbd_rx_req *rq, int error)
{
	struct nbd_conn *cn = owner;
	struct nbd_slot *s = (struct nbd_slot *)rq;

	if (cn->client->stamp.fn)
		s->t[2] = cn->client->rx_now;
	nbdc_complete_slot(cn->client, s, error);
}

static void rx_notice(void *owner, const char *msg)
{
	struct nbd_conn *cn = owner;

	if (cn->notices++ >= MAX_NOTICES)
		return;
	fprintf(stderr, "torus: %s: connection %u: %s%s\n", cn->client->label,
		cn->idx + 1, msg,
		cn->notices == MAX_NOTICES ? " (further such messages suppressed)" : "");
}

const struct nbd_rx_ops nbdc_rx_ops = {
	.lookup = rx_lookup,
	.complete = rx_complete,
	.notice = rx_notice,
};

/* Lays out the next receive of a connection in cn->rmsg. */
static void prep_recv(struct nbd_conn *cn)
{
	unsigned int n = 0;
	uint8_t *dst;
	uint32_t due;

	cn->riov_direct = 0;
	/* The rest of a read payload goes straight to its buffer. */
	due = nbd_rx_payload_dst(&cn->rx, &dst);
	if (due) {
		cn->riov[n].iov_base = dst;
		cn->riov[n].iov_len = due;
		n++;
		cn->riov_direct = 1;
	}
	cn->riov[n].iov_base = cn->rbuf + cn->rlen;
	cn->riov[n].iov_len = RBUF_SIZE - cn->rlen;
	if (cn->big_reads && cn->riov[n].iov_len > RECV_WINDOW)
		cn->riov[n].iov_len = RECV_WINDOW;
	n++;
	memset(&cn->rmsg, 0, sizeof(cn->rmsg));
	cn->rmsg.msg_iov = cn->riov;
	cn->rmsg.msg_iovlen = n;
}

static bool recv_due(struct nbd_conn *cn)
{
	return !cn->receiving && !cn->dead && cn->inflight;
}

static void arm_recv(struct nbd_conn *cn)
{
	if (!recv_due(cn))
		return;
	prep_recv(cn);
	nbd_uring_recvmsg(&cn->client->uring, &cn->recv_op, cn->idx, &cn->rmsg);
	cn->receiving = true;
}

/*
 * Receives are armed here, from ->getevents, and not again as soon as one
 * completes: replies that arrive while fio is busy then wait in the socket
 * and come in with one receive, rather than each waking a receive armed
 * for it (task work here, a wake-up for the server as its buffer drains).
 * With the staging alignment below it saves CPU per I/O at 4 KiB QD64
 * (docs/performance-history.md).
 */
static void arm_recvs(struct nbd_client *c)
{
	unsigned int i;

	for (i = 0; i < c->nconns; i++)
		arm_recv(&c->conns[i]);
}

/* Parses everything complete in the staging buffer. */
static void parse_replies(struct nbd_conn *cn)
{
	long used = nbd_rx_feed(&cn->rx, cn->rbuf, cn->rlen);
	uint8_t *base;

	if (used < 0) {
		nbdc_conn_lost(cn, "%s", cn->rx.errmsg);
		return;
	}
	cn->rlen -= used;
	base = cn->rbuf_mem + ((RBUF_SKEW - cn->rlen) & 63);
	if (base != cn->rbuf + used)
		memmove(base, cn->rbuf + used, cn->rlen);
	cn->rbuf = base;
}

static void handle_recv(struct nbd_conn *cn, int res)
{
	size_t n = res;

	cn->receiving = false;
	if (cn->dead)
		return;
	if (res <= 0) {
		nbdc_conn_lost(cn, "%s", res ? strerror(-res) : "server closed the connection");
		return;
	}
	/* Timeline: the replies in this receive are parsed now. */
	if (cn->client->stamp.fn)
		cn->client->rx_now = now_ns();
	if (cn->riov_direct) {
		size_t direct = n < cn->riov[0].iov_len ? n : cn->riov[0].iov_len;

		nbd_rx_payload_received(&cn->rx, direct);
		n -= direct;
	}
	cn->rlen += n;
	parse_replies(cn);
}

void nbdc_recv_done(struct nbd_uring_op *op, int res)
{
	handle_recv(container_of(op, struct nbd_conn, recv_op), res);
}

/*
 * A receive without io_uring, for busy-polling: whatever the socket holds
 * now, or nothing.
 */
static void poll_recv(struct nbd_conn *cn)
{
	ssize_t n;

	if (!recv_due(cn))
		return;
	prep_recv(cn);
	n = recvmsg(cn->fd, &cn->rmsg, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	cn->receiving = true;
	handle_recv(cn, n < 0 ? -errno : (int)n);
}

/* Whether this wait spins first (see busy_poll()). */
static bool polling(struct nbd_client *c)
{
	return c->poll_ns && nbdc_outstanding(c) &&
	       nbdc_outstanding(c) <= POLL_MAX_OUTSTANDING;
}

static void poll_recvs(struct nbd_client *c)
{
	unsigned int i;

	for (i = 0; i < c->nconns; i++)
		poll_recv(&c->conns[i]);
}

/*
 * With one or two requests in flight the wait is pure latency, and on a
 * VM waking an idle vCPU can cost more than the round trip itself. Spin
 * for a bounded time first, receiving from the sockets directly. Not by
 * watching for io_uring's task work behind an armed receive: on 6.x
 * kernels that spin saw its reply late, later the longer it spun
 * (docs/performance-history.md). The io_uring receive is armed when the spin
 * gives up.
 */
static void busy_poll(struct nbd_client *c, unsigned int min)
{
	uint64_t deadline;

	nbd_uring_flush(&c->uring);
	deadline = now_ns() + c->poll_ns;
	while (c->completed < min && now_ns() < deadline) {
		/* Sends complete as task work too. */
		if (nbd_uring_task_work(&c->uring))
			nbd_uring_get_events(&c->uring);
		if (nbd_uring_posted(&c->uring))
			nbd_uring_dispatch(&c->uring);
		poll_recvs(c);
	}
}

/*
 * Fails the oldest expired request with ETIMEDOUT and closes its
 * connection (the stream cannot be trusted once a reply is missing); the
 * connection's other requests fail with EIO.
 */
static void check_timeouts(struct nbd_client *c, uint64_t now)
{
	unsigned int i;

	for (i = 0; i < c->depth; i++) {
		struct nbd_slot *s = &c->slots[i];
		struct nbd_conn *cn = s->conn;

		if (!s->busy || !s->sent || now - s->sent_ns < c->timeout_ns ||
		    cn->dead)
			continue;
		fprintf(stderr,
			"torus: %s: connection %u: no reply for %u s to %s of %u bytes at offset %llu (request_timeout=%u); closing the connection, its %u other outstanding requests fail with EIO\n",
			c->label, cn->idx + 1, c->timeout_s,
			nbd_cmd_name(s->rq.type), s->rq.len,
			(unsigned long long)s->rq.offset, c->timeout_s,
			cn->inflight + cn->npending - 1);
		nbdc_complete_slot(c, s, ETIMEDOUT);
		nbdc_drop_conn(cn, EIO);
	}
	c->next_check = now + (c->timeout_ns / 8 < TIMEOUT_CHECK_MAX_NS ?
			       c->timeout_ns / 8 : TIMEOUT_CHECK_MAX_NS);
}

int nbd_client_reap(struct nbd_client *c, unsigned int min,
		    const struct timespec *timeout)
{
	struct __kernel_timespec kts, *tsp;
	uint64_t deadline = 0, now, wait;
	unsigned int n;
	bool spin;
	int ret;

	c->completed = 0;
	/*
	 * A call that may not wait still lets the kernel post what it has
	 * (task work is only run on entry); one that may wait enters anyway
	 * once the posted completions run out.
	 */
	if (!min && nbd_uring_task_work(&c->uring))
		nbd_uring_get_events(&c->uring);
	nbd_uring_dispatch(&c->uring);
	/* A poller receives by itself (busy_poll()) before arming. */
	spin = polling(c);
	if (!spin)
		arm_recvs(c);
	else if (c->completed >= min)
		poll_recvs(c);
	if (c->completed < min) {
		/* About to wait: everything held goes out with the wait. */
		nbdc_start_sends(c, false);
		if (spin)
			busy_poll(c, min);
	} else if (!min && c->timeout_ns && nbdc_outstanding(c)) {
		/* Pollers never wait here: look for expired requests anyway. */
		now = now_ns();
		if (now >= c->next_check)
			check_timeouts(c, now);
	}
	while (c->completed < min && nbdc_outstanding(c)) {
		now = now_ns();
		if (c->timeout_ns && now >= c->next_check) {
			check_timeouts(c, now);
			continue;
		}
		/* The timeout bounds the whole call, not each wait. */
		if (timeout && !deadline)
			deadline = now + (uint64_t)timeout->tv_sec * 1000000000ULL +
				   timeout->tv_nsec;
		if (timeout && now >= deadline)
			break;
		wait = timeout ? deadline - now : UINT64_MAX;
		if (c->timeout_ns && c->next_check - now < wait)
			wait = c->next_check - now;
		tsp = NULL;
		if (wait != UINT64_MAX) {
			kts.tv_sec = wait / 1000000000ULL;
			kts.tv_nsec = wait % 1000000000ULL;
			tsp = &kts;
		}
		arm_recvs(c);
		ret = nbd_uring_wait(&c->uring, tsp);
		if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EAGAIN) {
			c->completed = 0;
			return ret;
		}
		nbd_uring_dispatch(&c->uring);
	}
	/* Sends due or re-armed while parsing go out now. */
	nbd_client_submit(c);
	/* Outside reap() nothing waits to be taken (nbdc_start_sends()). */
	n = c->completed;
	c->completed = 0;
	return n;
}

int nbd_client_send_all(struct nbd_client *c)
{
	nbdc_start_sends(c, false);
	arm_recvs(c);
	return nbd_uring_flush(&c->uring);
}
