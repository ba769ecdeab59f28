// SPDX-License-Identifier: GPL-2.0-only
/*
 * Connection buffers: batched receive and batched send; see peer.h.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peer.h"
#include "log.h"
#include "shape.h"
#include "stamps.h"
#include "torus_util.h"

unsigned int peer_spin_us;

int peer_init(struct peer *c, int fd, struct server *srv)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->srv = srv;
	c->exact = true;
	c->in_cap = CONN_IN_SIZE;
	c->out_cap = CONN_OUT_SIZE;
	c->in = malloc(c->in_cap);
	c->out = malloc(c->out_cap);
	if (!c->in || !c->out) {
		free(c->in);
		free(c->out);
		return -1;
	}
	return 0;
}

void peer_free(struct peer *c)
{
	free(c->in);
	free(c->out);
}

/* Room for n bytes from in_pos: compact, or grow when n is larger. */
static int peer_make_room(struct peer *c, size_t n)
{
	size_t have = peer_avail(c);
	uint8_t *p;

	if (n > c->in_cap) {
		p = malloc(n);
		if (!p)
			return -1;
		memcpy(p, peer_data(c), have);
		free(c->in);
		c->in = p;
		c->in_cap = n;
	} else if (c->in_pos) {
		memmove(c->in, peer_data(c), have);
	}
	c->in_pos = 0;
	c->in_end = have;
	return 0;
}

/*
 * Waking a sleeping thread costs tens of microseconds on these (virtual)
 * machines, more than serving a batch: poll the socket for a while before
 * sleeping in recv, as long as the client keeps sending.
 */
static ssize_t peer_recv(struct peer *c, size_t len)
{
	uint64_t until = 0;
	ssize_t got;

	while (peer_spin_us) {
		got = recv(c->fd, c->in + c->in_end, len, MSG_DONTWAIT);
		if (got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return got;
		if (!until)
			until = now_ns() + peer_spin_us * 1000;
		else if (now_ns() > until)
			break;
	}
	return recv(c->fd, c->in + c->in_end, len, 0);
}

/* Send iov[0, k) and close the gap: the rest wait for their due time. */
static int peer_send_prefix(struct peer *c, int k)
{
	struct msghdr msg = { 0 };
	struct iovec *iov = c->iov;
	/* before the send: the client may read the reply before it returns */
	uint64_t replied = c->tl ? now_ns() : 0;
	int left = k, i;
	ssize_t n;

	while (left) {
		msg.msg_iov = iov;
		msg.msg_iovlen = left;
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			shim_debug("%s: send: %s", c->peer, strerror(errno));
			return -1;
		}
		while (left && (size_t)n >= iov->iov_len) {
			n -= iov->iov_len;
			iov++;
			left--;
		}
		if (left) {
			iov->iov_base = (uint8_t *)iov->iov_base + n;
			iov->iov_len -= n;
		}
	}
	if (c->tl)
		stamps_sent(c, k, replied);
	memmove(c->iov, c->iov + k, (c->niov - k) * sizeof(c->iov[0]));
	c->niov -= k;
	for (i = 0; i < c->nmarks; i++)
		c->marks[i].iov_end -= k;
	c->merge_floor = c->merge_floor > k ? c->merge_floor - k : 0;
	if (!c->niov) {
		c->out_used = 0;
		c->out_refs_store = false;
	}
	return 0;
}

/*
 * Send the replies that are due; while others wait, return as soon as the
 * client sends more (1), or when everything is sent (0).
 */
static int peer_send_due(struct peer *c)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	struct timespec ts;
	uint64_t now, wait;
	int k, ret;

	for (;;) {
		if (!c->nmarks)
			return peer_flush(c);
		now = now_ns();
		for (k = 0; k < c->nmarks && c->marks[k].due <= now; k++)
			;
		if (k) {
			if (peer_send_prefix(c, c->marks[k - 1].iov_end))
				return -1;
			c->nmarks -= k;
			memmove(c->marks, c->marks + k,
				c->nmarks * sizeof(c->marks[0]));
			continue;
		}
		wait = c->marks[0].due - now;
		ts.tv_sec = wait / 1000000000u;
		ts.tv_nsec = wait % 1000000000u;
		ret = ppoll(&pfd, 1, &ts, NULL);
		if (ret < 0 && errno != EINTR)
			return -1;
		if (ret > 0)
			return 1;
	}
}

int peer_mark(struct peer *c, uint64_t due)
{
	if (c->nmarks == CONN_IOV_MAX && peer_flush(c))
		return -1;
	c->marks[c->nmarks].iov_end = c->niov;
	c->marks[c->nmarks].due = due;
	c->nmarks++;
	c->merge_floor = c->niov;
	return 0;
}

int peer_need(struct peer *c, size_t n)
{
	ssize_t got;

	if (peer_avail(c) >= n)
		return 0;
	if ((c->in_pos || n > c->in_cap) && peer_make_room(c, n))
		return -1;
	if (c->send_when_due) {
		if (peer_send_due(c) < 0)
			return -1;
	} else if (peer_flush(c)) {
		return -1;
	}
	while (peer_avail(c) < n) {
		got = peer_recv(c, c->exact ? n - peer_avail(c) :
				   c->in_cap - c->in_end);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got < 0)
				shim_debug("%s: receive: %s", c->peer,
					   strerror(errno));
			return -1;
		}
		c->in_end += got;
		if (c->tl)
			c->recv_ns = now_ns();
	}
	return 0;
}

const uint8_t *peer_read(struct peer *c, size_t n)
{
	const uint8_t *p;

	if (peer_need(c, n))
		return NULL;
	p = peer_data(c);
	peer_consume(c, n);
	return p;
}

int peer_skip(struct peer *c, uint64_t n)
{
	size_t chunk;

	while (n) {
		chunk = min_u64(n, c->in_cap);
		if (peer_need(c, chunk))
			return -1;
		peer_consume(c, chunk);
		n -= chunk;
	}
	return 0;
}

static int peer_grow_out(struct peer *c, size_t len)
{
	uint8_t *p;

	/* only with nothing queued: iovecs point into the old buffer */
	p = malloc(len);
	if (!p)
		return -1;
	free(c->out);
	c->out = p;
	c->out_cap = len;
	return 0;
}

uint8_t *peer_reserve(struct peer *c, size_t len)
{
	struct iovec *last;
	uint8_t *p;

	if (c->out_used + len > c->out_cap || c->niov == CONN_IOV_MAX) {
		if (peer_flush(c))
			return NULL;
		if (len > c->out_cap && peer_grow_out(c, len))
			return NULL;
	}
	p = c->out + c->out_used;
	c->out_used += len;
	last = c->niov > c->merge_floor ? &c->iov[c->niov - 1] : NULL;
	if (last && (uint8_t *)last->iov_base + last->iov_len == p) {
		last->iov_len += len;
	} else {
		c->iov[c->niov].iov_base = p;
		c->iov[c->niov].iov_len = len;
		c->niov++;
	}
	return p;
}

void peer_unreserve(struct peer *c, size_t n)
{
	struct iovec *last = &c->iov[c->niov - 1];

	c->out_used -= n;
	last->iov_len -= n;
	if (!last->iov_len)
		c->niov--;
}

int peer_queue_ref(struct peer *c, const void *p, size_t len)
{
	if (c->niov == CONN_IOV_MAX && peer_flush(c))
		return -1;
	c->iov[c->niov].iov_base = (void *)p;
	c->iov[c->niov].iov_len = len;
	c->niov++;
	c->out_refs_store = true;
	return 0;
}

int peer_flush(struct peer *c)
{
	if (!c->niov)
		return 0;
	if (c->due_ns) {
		shaper_wait(c->due_ns);
		c->due_ns = 0;
	}
	c->nmarks = 0;
	return peer_send_prefix(c, c->niov);
}

void peer_reset(struct peer *c)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	peer_flush(c);
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}
