// SPDX-License-Identifier: GPL-2.0-only
/*
 * The libnbd transport: NBD through libnbd's asynchronous API, for what
 * the native transport does not speak (TLS, nbd+vsock://) and to measure
 * a general client library inside the same glue (docs/libnbd.md).
 *
 * Each connection is one libnbd handle. queue() takes a slot; submit()
 * issues the commands queued since the last one (libnbd sends each at
 * once), after the glue stamped fio's issue time, as the native transport
 * sends; reap() polls the handles' sockets in the direction libnbd asks for
 * and lets libnbd read the replies, which call back into done(): the
 * glue's completer, once per request.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

/* struct fio_option, for the table in libnbd_inspect.c. */
#include "fio.h"

#include "../transport.h"
#include "../nbd/nbd_embedded.h"
#include "../nbd/nbd_job_check.h"
#include "libnbd_setup.h"

/* libnbd_inspect.c's, declared where fio's types are. */
extern struct fio_option lnbd_options[];

/* Waits are cut so that expired requests are seen. */
#define MAX_WAIT_MS		1000
/* A read's separate pieces kept to check its chunks against each other. */
#define MAX_PIECES		16

/* One request: the callback's user_data. */
struct lnbd_slot {
	struct lnbd_session *s;
	void *user;
	uint64_t start_ns;
	unsigned int conn;
	bool busy;
	bool orphan;		/* already failed to the glue: ignore its end */
	enum torus_op op;
	bool fua;
	uint32_t len;
	uint64_t offset;
	void *buf;
	/*
	 * timeline=: libnbd's cookie. Its own reply cannot be read before
	 * nbd_aio_* returns it: libnbd returns once the request is sent.
	 */
	int64_t cookie;
	/*
	 * A read's chunks so far: libnbd checks each against the read, not
	 * against each other, nor that they cover it (nbd_pread_structured(3)).
	 */
	uint32_t seen;
	bool bad;		/* a chunk was wrong: said, the read fails */
	unsigned int npieces;
	struct {
		uint32_t start, end;
	} piece[MAX_PIECES];
};

struct lnbd_conn {
	struct nbd_handle *h;	/* NULL once killed: closed at once */
	unsigned int inflight;
	bool dead;		/* never polled nor used again */
};

struct lnbd_session {
	struct torus_session base;
	struct lnbd_conn conns[LNBD_MAX_CONNS];
	unsigned int nconns, next;
	struct lnbd_slot *slots;
	unsigned int *free;	/* stack of free slot indices */
	unsigned int depth, nfree;
	unsigned int *pending;	/* queued, not yet issued: submit()'s */
	unsigned int npending;
	unsigned int inflight;
	unsigned long completed;
	unsigned int timeout_s;
	uint64_t next_check;
	struct torus_stamper stamp;
	struct pollfd *pfd;
	unsigned int *pconn;	/* the connection of each pfd */
	char label[512];
};

static struct lnbd_session *lnbd_session_of(struct torus_session *s)
{
	return (struct lnbd_session *)((char *)s -
				       offsetof(struct lnbd_session, base));
}

static void free_session(struct lnbd_session *s)
{
	unsigned int i;

	for (i = 0; i < s->nconns; i++)
		if (s->conns[i].h)
			lnbd_drop_handle(s->conns[i].h);
	free(s->slots);
	free(s->free);
	free(s->pending);
	free(s->pfd);
	free(s->pconn);
	free(s);
}

static struct torus_session *lnbd_open(const struct torus_params *p,
				       unsigned int depth,
				       struct torus_target *t, char *err,
				       size_t errlen)
{
	const struct lnbd_opts *o = p->opts;
	struct lnbd_session *s;
	uint64_t size0 = t->size;
	unsigned int i;

	s = calloc(1, sizeof(*s));
	if (s) {
		s->slots = calloc(depth, sizeof(*s->slots));
		s->free = calloc(depth, sizeof(*s->free));
		s->pending = calloc(depth, sizeof(*s->pending));
		s->pfd = calloc(o->conns, sizeof(*s->pfd));
		s->pconn = calloc(o->conns, sizeof(*s->pconn));
	}
	if (!s || !s->slots || !s->free || !s->pending || !s->pfd ||
	    !s->pconn) {
		snprintf(err, errlen, "out of memory for iodepth=%u", depth);
		if (s)
			free_session(s);
		return NULL;
	}
	s->base.done = p->done;
	s->stamp = p->stamp;
	s->depth = depth;
	s->timeout_s = p->timeout_s;
	snprintf(s->label, sizeof(s->label), "%s", p->uri);
	for (i = 0; i < depth; i++) {
		s->slots[i].s = s;
		s->free[s->nfree++] = depth - 1 - i;
	}
	for (i = 0; i < o->conns; i++) {
		char why[768];
		struct nbd_handle *h = lnbd_connect(p, why, sizeof(why));

		if (!h) {
			if (i)
				snprintf(err, errlen,
					 "connection %u of conns=%u: %s",
					 i + 1, o->conns, why);
			else
				snprintf(err, errlen, "%s", why);
			goto fail;
		}
		s->conns[s->nconns++].h = h;
		if (nbd_get_size(h) != nbd_get_size(s->conns[0].h)) {
			snprintf(err, errlen,
				 "%s: connection %u saw a different export size (%lld bytes) than connection 1 (%lld bytes)",
				 s->label, i + 1, (long long)nbd_get_size(h),
				 (long long)nbd_get_size(s->conns[0].h));
			goto fail;
		}
	}
	if ((uint64_t)nbd_get_size(s->conns[0].h) < size0) {
		snprintf(err, errlen,
			 "%s: the export shrank from %llu to %lld bytes since the job started",
			 s->label, (unsigned long long)size0,
			 (long long)nbd_get_size(s->conns[0].h));
		goto fail;
	}
	if (lnbd_check_multi_conn(p, s->conns[0].h, s->label, err, errlen))
		goto fail;
	lnbd_fill_target(s->conns[0].h, p->uri, t);
	return &s->base;
fail:
	free_session(s);
	return NULL;
}

/* The glue's completer, once: the slot is free again after it. */
static void slot_done(struct lnbd_session *s, struct lnbd_slot *sl, int error)
{
	sl->busy = false;
	s->conns[sl->conn].inflight--;
	s->inflight--;
	s->completed++;
	s->free[s->nfree++] = sl - s->slots;
	s->base.done.fn(s->base.done.arg, sl->user, error);
}

/*
 * timeline=: the command's stamp, keyed by libnbd's cookie, which is the
 * handle the server sees (and keys its own records by).
 */
static void stamp(struct lnbd_session *s, struct lnbd_slot *sl)
{
	struct torus_wire_stamps w = {
		.key = (uint64_t)sl->cookie,
		.offset = sl->offset,
		.len = sl->len,
		.stream = sl->conn,
		.t = { lnbd_now_ns() },
	};

	s->stamp.fn(s->stamp.arg, sl->user, &w);
}

/* Records [start, end) of a read as received: -1 on overlap, -2 if full. */
static int add_piece(struct lnbd_slot *sl, uint32_t start, uint32_t end)
{
	unsigned int i;

	for (i = 0; i < sl->npieces; i++)
		if (start < sl->piece[i].end && sl->piece[i].start < end)
			return -1;
	/* In-order (or reverse) chunks grow one piece. */
	for (i = 0; i < sl->npieces; i++) {
		if (sl->piece[i].end == start) {
			sl->piece[i].end = end;
			return 0;
		}
		if (sl->piece[i].start == end) {
			sl->piece[i].start = start;
			return 0;
		}
	}
	if (sl->npieces == MAX_PIECES)
		return -2;
	sl->piece[sl->npieces].start = start;
	sl->piece[sl->npieces++].end = end;
	return 0;
}

/* libnbd's chunk callback: each chunk lies inside the read (libnbd's check). */
static int on_chunk(void *user_data, const void *subbuf, size_t count,
		    uint64_t offset, unsigned int status, int *error)
{
	struct lnbd_slot *sl = user_data;
	const char *what = status == LIBNBD_READ_DATA ? "OFFSET_DATA" : "OFFSET_HOLE";
	uint32_t start = offset - sl->offset;
	int ret;

	if (sl->orphan || sl->bad ||
	    (status != LIBNBD_READ_DATA && status != LIBNBD_READ_HOLE))
		return 0;
	ret = count ? add_piece(sl, start, start + count) : 0;
	if (count && !ret) {
		sl->seen += count;
		return 0;
	}
	sl->bad = true;
	*error = EIO;
	if (!count)
		fprintf(stderr,
			"torus: %s: connection %u: an %s chunk of 0 bytes in the read of %u bytes at offset %llu (the server breaks the protocol); the read fails with EIO\n",
			sl->s->label, sl->conn + 1, what, sl->len,
			(unsigned long long)sl->offset);
	else if (ret == -1)
		fprintf(stderr,
			"torus: %s: connection %u: chunks of the read of %u bytes at offset %llu overlap (an %s chunk of %zu bytes at offset %llu); the read fails with EIO\n",
			sl->s->label, sl->conn + 1, sl->len,
			(unsigned long long)sl->offset, what, count,
			(unsigned long long)offset);
	else
		fprintf(stderr,
			"torus: %s: connection %u: the read of %u bytes at offset %llu arrived in more than %d separate pieces; it fails with EIO\n",
			sl->s->label, sl->conn + 1, sl->len,
			(unsigned long long)sl->offset, MAX_PIECES);
	return -1;
}

/* libnbd's completion callback: runs inside a libnbd call on the handle. */
static int on_done(void *user_data, int *error)
{
	struct lnbd_slot *sl = user_data;
	int err;

	/* Failed already (timeout, cancel): its connection is gone. */
	if (sl->orphan)
		return 1;
	if (!*error && sl->op == TORUS_OP_READ && sl->seen != sl->len) {
		fprintf(stderr,
			"torus: %s: connection %u: the read of %u bytes at offset %llu ended having sent only %u of them (data or holes); it fails with EIO\n",
			sl->s->label, sl->conn + 1, sl->len,
			(unsigned long long)sl->offset, sl->seen);
		*error = EIO;
	}
	err = *error == ENOTCONN ? EIO : *error;
	/* The reply was read and parsed: the callback stamp, then the glue. */
	if (sl->s->stamp.fn)
		stamp(sl->s, sl);
	slot_done(sl->s, sl, err);
	return 1;
}

static struct lnbd_conn *pick_conn(struct lnbd_session *s, unsigned int *idx)
{
	unsigned int i, c;

	for (i = 0; i < s->nconns; i++) {
		c = (s->next + i) % s->nconns;
		if (!s->conns[c].dead) {
			s->next = c + 1;
			*idx = c;
			return &s->conns[c];
		}
	}
	return NULL;
}

static int lnbd_queue(struct torus_session *ts, enum torus_op op, bool fua,
		      uint64_t offset, uint32_t len, void *buf, void *user)
{
	struct lnbd_session *s = lnbd_session_of(ts);
	struct lnbd_slot *sl;
	struct lnbd_conn *c;
	unsigned int idx;

	/* Reaps between queue() and submit() may free slots: hold at depth. */
	if (!s->nfree || s->npending == s->depth)
		return -EBUSY;
	c = pick_conn(s, &idx);
	if (!c)
		return -ENOTCONN;
	sl = &s->slots[s->free[--s->nfree]];
	sl->user = user;
	sl->conn = idx;
	sl->busy = true;
	sl->orphan = false;
	sl->op = op;
	sl->fua = fua;
	sl->len = len;
	sl->offset = offset;
	sl->buf = buf;
	sl->seen = 0;
	sl->bad = false;
	sl->npieces = 0;
	sl->cookie = -1;
	c->inflight++;
	s->inflight++;
	s->pending[s->npending++] = sl - s->slots;
	return 0;
}

/* Hands one queued request to libnbd, which sends it: 0, or -1. */
static int issue(struct lnbd_session *s, struct lnbd_slot *sl)
{
	nbd_completion_callback cb = { .callback = on_done, .user_data = sl };
	nbd_chunk_callback chunk = { .callback = on_chunk, .user_data = sl };
	uint32_t flags = sl->fua ? LIBNBD_CMD_FLAG_FUA : 0;
	struct nbd_handle *h = s->conns[sl->conn].h;

	sl->start_ns = s->timeout_s ? lnbd_now_ns() : 0;
	switch (sl->op) {
	case TORUS_OP_READ:
		sl->cookie = nbd_aio_pread_structured(h, sl->buf, sl->len,
						      sl->offset, chunk, cb, 0);
		break;
	case TORUS_OP_WRITE:
		sl->cookie = nbd_aio_pwrite(h, sl->buf, sl->len, sl->offset,
					    cb, flags);
		break;
	case TORUS_OP_TRIM:
		sl->cookie = nbd_aio_trim(h, sl->len, sl->offset, cb, 0);
		break;
	default:
		sl->cookie = nbd_aio_flush(h, cb, 0);
		break;
	}
	return sl->cookie >= 0 ? 0 : -1;
}

/*
 * Issues what was queued since the last submit. A request that libnbd
 * would not take (it refused it, or its connection died meanwhile) fails
 * to the glue here: libnbd never calls it back.
 */
static int lnbd_submit(struct torus_session *ts)
{
	struct lnbd_session *s = lnbd_session_of(ts);
	unsigned int i;

	for (i = 0; i < s->npending; i++) {
		struct lnbd_slot *sl = &s->slots[s->pending[i]];

		if (!sl->busy || sl->cookie >= 0)
			continue;
		if (!s->conns[sl->conn].dead && !issue(s, sl))
			continue;
		if (!s->conns[sl->conn].dead)
			lnbd_say_failed(s->label, sl->conn, lnbd_op_name(sl->op),
					sl->len, sl->offset);
		slot_done(s, sl, EIO);
	}
	s->npending = 0;
	return 0;
}

/*
 * Fails a connection's outstanding requests at once (expired gets
 * ETIMEDOUT, the rest error) and closes its handle, so that libnbd never
 * writes into their buffers again nor calls them back: their slots are
 * then free for the connections left.
 */
static void kill_conn(struct lnbd_session *s, unsigned int c,
		      struct lnbd_slot *expired, int error)
{
	struct lnbd_conn *cn = &s->conns[c];
	unsigned int i;

	cn->dead = true;
	for (i = 0; i < s->depth; i++) {
		struct lnbd_slot *sl = &s->slots[i];

		if (!sl->busy || sl->orphan || sl->conn != c)
			continue;
		/* What libnbd calls back from now on is ignored. */
		sl->orphan = true;
		cn->inflight--;
		s->inflight--;
		s->completed++;
		s->base.done.fn(s->base.done.arg, sl->user,
				sl == expired ? ETIMEDOUT : error);
	}
	nbd_close(cn->h);
	cn->h = NULL;
	for (i = 0; i < s->depth; i++) {
		struct lnbd_slot *sl = &s->slots[i];

		if (sl->busy && sl->orphan && sl->conn == c) {
			sl->busy = false;
			sl->orphan = false;
			s->free[s->nfree++] = i;
		}
	}
}

static void check_timeouts(struct lnbd_session *s, uint64_t now)
{
	uint64_t limit = (uint64_t)s->timeout_s * 1000000000ULL;
	unsigned int i;

	if (!s->timeout_s || now < s->next_check)
		return;
	s->next_check = now + limit / 8;
	for (i = 0; i < s->depth; i++) {
		struct lnbd_slot *sl = &s->slots[i];
		struct lnbd_conn *cn = &s->conns[sl->conn];

		if (!sl->busy || sl->orphan || cn->dead ||
		    now - sl->start_ns < limit)
			continue;
		fprintf(stderr,
			"torus: %s: connection %u: no reply for %u s to %s of %u bytes at offset %llu (request_timeout=%u); libnbd cannot cancel one command, so the connection is closed and its %u other outstanding requests fail with EIO\n",
			s->label, sl->conn + 1, s->timeout_s,
			lnbd_op_name(sl->op), sl->len,
			(unsigned long long)sl->offset, s->timeout_s,
			cn->inflight - 1);
		kill_conn(s, sl->conn, sl, EIO);
	}
}

/* libnbd failed reading or writing: the connection is gone. */
static void conn_failed(struct lnbd_session *s, unsigned int c)
{
	fprintf(stderr,
		"torus: %s: connection %u: libnbd: %s; its outstanding requests fail with EIO (is the server still running?)\n",
		s->label, c + 1, lnbd_error());
	kill_conn(s, c, NULL, EIO);
}

/* One poll of every live handle; returns -errno or 0. */
static int poll_once(struct lnbd_session *s, int ms)
{
	unsigned int i, n = 0;
	int ret;

	for (i = 0; i < s->nconns; i++) {
		struct lnbd_conn *cn = &s->conns[i];
		int dir, fd;

		if (cn->dead)
			continue;
		fd = nbd_aio_get_fd(cn->h);
		dir = nbd_aio_get_direction(cn->h);
		if (fd < 0 || nbd_aio_is_dead(cn->h) == 1 ||
		    nbd_aio_is_closed(cn->h) == 1) {
			conn_failed(s, i);
			continue;
		}
		s->pfd[n].fd = fd;
		s->pfd[n].events = (dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
				   (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0);
		s->pfd[n].revents = 0;
		s->pconn[n++] = i;
	}
	if (!n)
		return s->inflight ? -EIO : 0;
	ret = poll(s->pfd, n, ms);
	if (ret < 0)
		return errno == EINTR ? 0 : -errno;
	for (i = 0; i < n; i++) {
		struct lnbd_conn *cn = &s->conns[s->pconn[i]];
		short re = s->pfd[i].revents;

		if (!re || cn->dead)
			continue;
		if ((re & (POLLIN | POLLHUP | POLLERR)) &&
		    nbd_aio_notify_read(cn->h) == -1) {
			conn_failed(s, s->pconn[i]);
			continue;
		}
		if ((re & POLLOUT) && nbd_aio_notify_write(cn->h) == -1)
			conn_failed(s, s->pconn[i]);
	}
	return 0;
}

static int lnbd_reap(struct torus_session *ts, unsigned int min,
		     const struct timespec *timeout)
{
	struct lnbd_session *s = lnbd_session_of(ts);
	unsigned long start = s->completed;
	uint64_t now = lnbd_now_ns(), end = now;
	int ret;

	if (timeout)
		end += (uint64_t)timeout->tv_sec * 1000000000ULL +
		       timeout->tv_nsec;
	/* Whatever is ready now, without waiting. */
	ret = poll_once(s, 0);
	for (;;) {
		uint64_t left;
		int ms;

		if (ret < 0)
			return ret;
		check_timeouts(s, now);
		if (s->completed - start >= min || !s->inflight)
			break;
		now = lnbd_now_ns();
		if (timeout && now >= end)
			break;
		left = timeout ? (end - now + 999999) / 1000000 : MAX_WAIT_MS;
		ms = left < MAX_WAIT_MS ? (int)left : MAX_WAIT_MS;
		ret = poll_once(s, ms);
		now = lnbd_now_ns();
	}
	return s->completed - start;
}

static void lnbd_cancel(struct torus_session *ts, int error)
{
	struct lnbd_session *s = lnbd_session_of(ts);
	unsigned int i;

	if (!s->inflight)
		return;
	fprintf(stderr,
		"torus: %s: %u requests still outstanding as the job stops; they fail with %s\n",
		s->label, s->inflight, strerror(error));
	for (i = 0; i < s->nconns; i++)
		if (s->conns[i].inflight)
			kill_conn(s, i, NULL, error);
}

static void lnbd_close(struct torus_session *ts)
{
	free_session(lnbd_session_of(ts));
}

const struct torus_transport torus_libnbd_transport = {
	.name = "libnbd",
	.kind = "a libnbd",
	.uri_forms = "nbd://, nbds://, nbd+unix://, nbds+unix://, nbd+vsock:// or nbds+vsock:// (as libnbd's nbd_connect_uri takes them)",
	.options = lnbd_options,
	.opts_size = sizeof(struct lnbd_opts),
	.check_options = lnbd_check_options,
	.handles = lnbd_handles,
	.embedded = nbd_embedded_get,
	.inspect = lnbd_inspect,
	.check = nbd_job_check,
	.open = lnbd_open,
	.queue = lnbd_queue,
	.submit = lnbd_submit,
	.reap = lnbd_reap,
	.cancel = lnbd_cancel,
	.close = lnbd_close,
};
