// SPDX-License-Identifier: GPL-2.0-only
/*
 * The nbd store's I/O (store_nbd.h): each synchronous call queues,
 * submits and reaps until its pieces are back.
 *
 * Asynchronous requests (store_ops.aio): as many in flight as the
 * caller asks, each cut into NBD requests (one per iovec and per the
 * server's largest request), sent from and received into the caller's
 * buffers. A request waits in the store, in order, while the client's
 * slots are all taken (common/torus_split.h, as the TCMU transport's
 * commands wait for the ring). The client's completer only counts pieces
 * off; a request whose pieces are all back goes on a list that reap()
 * works through, where done() is called or the next stage (the flush of a
 * FUA write the server cannot mark) is queued. Synchronous calls still
 * work in between: their pieces are the store's own (nbd_store.sync).
 *
 * The client's io_uring is SINGLE_ISSUER: only the thread that created it
 * may submit. A session is opened by the handler host and then used by
 * its ring's thread, so the client is built by the first I/O, in the
 * thread that will keep using it; the handshake happens at open, where
 * its errors belong.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "nbd_wire.h"
#include "storage_log.h"
#include "store_nbd.h"
#include "torus_util.h"

/* Requests in flight per call: a large transfer is split and pipelined. */
#define NBD_STORE_DEPTH		8
/* WRITE_ZEROES carries no payload; a large range still goes in pieces. */
#define NBD_STORE_MAX_ZERO	(1u << 30)
#define NBD_STORE_ZERO_BUF	(256u << 10)

static const uint8_t zero_buf[NBD_STORE_ZERO_BUF];

/*
 * The client's completer: a piece of a synchronous call or of an
 * asynchronous request. The call counts its own; a request whose last
 * piece is back goes to reap().
 */
static void xfer_done(void *arg, void *user, int error)
{
	struct nbd_store *n = arg;
	struct torus_split *s = user;

	if (split_back(s, -error) && s != &n->sync)
		fifo_push(&n->finished, s);
}

/* The client, built on first use by the calling thread (see the top). */
static int get_client(struct nbd_store *n, unsigned int depth)
{
	const struct torus_completer done = { .fn = xfer_done, .arg = n };
	char err[512];
	unsigned int i;

	if (n->client) {
		if (pthread_equal(n->owner, pthread_self()))
			return 0;
		storage_err("nbd %s: used from a second thread; each thread needs its own session",
			    n->uri);
		return -EXDEV;
	}
	if (!n->nfds && nbd_store_redial(n))
		return -ENOTCONN;
	/* The client owns the sockets from here, and closes them on failure. */
	n->client = nbd_client_new(n->fds, n->nfds, depth, &n->exp, 0,
				   n->timeout_s, &done, n->label, err,
				   sizeof(err));
	for (i = 0; i < n->nfds; i++)
		n->fds[i] = -1;
	n->nfds = 0;
	if (!n->client) {
		storage_err("nbd %s: %s", n->uri, err);
		return -ENOMEM;
	}
	n->owner = pthread_self();
	return 0;
}

static const char *cmd_name(uint16_t type)
{
	switch (type) {
	case NBD_CMD_READ:		return "read";
	case NBD_CMD_WRITE:		return "write";
	case NBD_CMD_FLUSH:		return "flush";
	case NBD_CMD_TRIM:		return "trim";
	case NBD_CMD_WRITE_ZEROES:	return "write-zeroes";
	}
	return "request";
}

static void xfer_err(struct nbd_store *n, uint16_t type, uint64_t len,
		     uint64_t off, int err)
{
	if (type == NBD_CMD_FLUSH)
		storage_err("nbd %s: flush: %s", n->uri, strerror(-err));
	else
		storage_err("nbd %s: %s of %llu bytes at %llu: %s", n->uri,
			    cmd_name(type), (unsigned long long)len,
			    (unsigned long long)off, strerror(-err));
}

/*
 * One call: [off, off + len) as requests of at most chunk bytes, up to
 * NBD_STORE_DEPTH in flight (FLUSH: one request, len 0). buf (NULL for
 * payload-free commands) advances with the offset unless step_buf is
 * false (zeroes written from one buffer). Asynchronous requests may hold
 * every slot of the client: then this waits for one of theirs.
 */
static int nbd_store_xfer(struct nbd_store *n, uint16_t type, void *buf,
			  bool step_buf, uint64_t len, uint64_t off,
			  uint32_t chunk)
{
	struct torus_split *s = &n->sync;
	uint8_t *at = buf;
	uint32_t l;
	int ret;

	ret = get_client(n, NBD_STORE_DEPTH);
	if (ret)
		return ret;
	split_init(s, len);
	while (!split_all_sent(s) || s->out) {
		while (!split_all_sent(s) && s->out < NBD_STORE_DEPTH) {
			l = split_next(s, chunk);
			ret = nbd_client_queue(n->client, type, 0,
					       off + s->sent, l, at, s);
			if (ret == -EBUSY)
				break;
			if (ret)
				goto fail;
			split_queued(s, l);
			if (at && step_buf)
				at += l;
		}
		ret = nbd_client_submit(n->client);
		if (ret)
			goto fail;
		ret = nbd_client_reap(n->client, 1, NULL);
		if (ret < 0)
			goto fail;
	}
	if (s->error)
		xfer_err(n, type, len, off, s->error);
	return s->error;
fail:
	xfer_err(n, type, len, off, ret);
	/* The client cannot say which requests went out: drop it. */
	if (s->out)
		nbd_client_cancel(n->client, EIO);
	return ret;
}

int nbd_store_pread(struct store *st, void *buf, size_t len, uint64_t off)
{
	struct nbd_store *n = to_nbd(st);

	return nbd_store_xfer(n, NBD_CMD_READ, buf, true, len, off, n->max_req);
}

int nbd_store_pwrite(struct store *st, const void *buf, size_t len,
		     uint64_t off)
{
	struct nbd_store *n = to_nbd(st);

	if (n->exp.tflags & NBD_FLAG_READ_ONLY)
		return -EROFS;
	return nbd_store_xfer(n, NBD_CMD_WRITE, (void *)buf, true, len, off,
			      n->max_req);
}

int nbd_store_zero(struct store *st, size_t len, uint64_t off)
{
	struct nbd_store *n = to_nbd(st);

	if (n->exp.tflags & NBD_FLAG_READ_ONLY)
		return -EROFS;
	if (n->exp.tflags & NBD_FLAG_SEND_WRITE_ZEROES)
		return nbd_store_xfer(n, NBD_CMD_WRITE_ZEROES, NULL, false, len,
				      off, NBD_STORE_MAX_ZERO);
	return nbd_store_xfer(n, NBD_CMD_WRITE, (void *)zero_buf, false, len,
			      off, min_u64(n->max_req, sizeof(zero_buf)));
}

int nbd_store_trim(struct store *st, size_t len, uint64_t off)
{
	struct nbd_store *n = to_nbd(st);

	if (n->exp.tflags & NBD_FLAG_READ_ONLY)
		return -EROFS;
	if (!(n->exp.tflags & NBD_FLAG_SEND_TRIM))
		return -EOPNOTSUPP;
	return nbd_store_xfer(n, NBD_CMD_TRIM, NULL, false, len, off,
			      NBD_STORE_MAX_ZERO);
}

int nbd_store_flush(struct store *st)
{
	struct nbd_store *n = to_nbd(st);

	/* A server that offers no flush has no cache to flush. */
	if (!(n->exp.tflags & NBD_FLAG_SEND_FLUSH))
		return 0;
	/* Not connected since open: nothing was written through it. */
	if (!n->client && !n->nfds)
		return 0;
	return nbd_store_xfer(n, NBD_CMD_FLUSH, NULL, false, 0, 0, 0);
}

/* ---- asynchronous requests ---- */

/* Stages of a request: its own NBD requests, then a FUA write's flush. */
enum { STAGE_MAIN, STAGE_FLUSH };

static struct store_io *io_of(struct torus_split *s)
{
	return container_of(s, struct store_io, split);
}

/* A flush is one piece of no bytes. */
static void io_start(struct store_io *io, uint8_t stage)
{
	io->stage = stage;
	split_init(&io->split, stage == STAGE_FLUSH ||
			       io->op == STORE_IO_FLUSH ? 0 : io->len);
}

/* The NBD command a request's stage sends, or a negative errno. */
static int io_cmd(const struct nbd_store *n, const struct store_io *io)
{
	uint32_t tf = n->exp.tflags;

	if (io->stage == STAGE_FLUSH || io->op == STORE_IO_FLUSH)
		return NBD_CMD_FLUSH;
	if (io->op != STORE_IO_READ && (tf & NBD_FLAG_READ_ONLY))
		return -EROFS;
	switch (io->op) {
	case STORE_IO_READ:
		return NBD_CMD_READ;
	case STORE_IO_WRITE:
		return NBD_CMD_WRITE;
	case STORE_IO_ZERO:
		return tf & NBD_FLAG_SEND_WRITE_ZEROES ? NBD_CMD_WRITE_ZEROES :
							 NBD_CMD_WRITE;
	case STORE_IO_TRIM:
		return tf & NBD_FLAG_SEND_TRIM ? NBD_CMD_TRIM : -EOPNOTSUPP;
	}
	return -EINVAL;
}

/* The next piece: where its data is, how long it may be. */
static void *io_piece(const struct nbd_store *n, const struct store_io *io,
		      int cmd, uint32_t *len)
{
	const struct torus_split *s = &io->split;
	uint64_t at = s->sent;
	uint32_t i;

	if (cmd == NBD_CMD_FLUSH) {
		*len = 0;
		return NULL;
	}
	if (cmd == NBD_CMD_WRITE_ZEROES || cmd == NBD_CMD_TRIM) {
		*len = split_next(s, NBD_STORE_MAX_ZERO);
		return NULL;
	}
	if (io->op == STORE_IO_ZERO) {
		*len = split_next(s, min_u64(n->max_req, sizeof(zero_buf)));
		return (void *)zero_buf;
	}
	for (i = 0; i < io->iov_cnt && at >= io->iov[i].iov_len; i++)
		at -= io->iov[i].iov_len;
	/* Iovecs shorter than len: the caller's bug, refused in io_queue(). */
	if (i == io->iov_cnt) {
		*len = 0;
		return NULL;
	}
	*len = split_next(s, min_u64(io->iov[i].iov_len - at, n->max_req));
	return (uint8_t *)io->iov[i].iov_base + at;
}

/*
 * Queue the request's pieces: 1 when all went (or it failed), 0 when the
 * client has no slot free.
 */
static int io_queue(struct nbd_store *n, struct store_io *io)
{
	struct torus_split *s = &io->split;
	int cmd = io_cmd(n, io), ret;
	uint16_t flags = 0;
	uint32_t len;
	void *buf;

	if (cmd < 0) {
		split_stop(s, cmd);
		return 1;
	}
	if (cmd == NBD_CMD_WRITE && (io->flags & STORE_IO_FUA) &&
	    (n->exp.tflags & NBD_FLAG_SEND_FUA))
		flags = NBD_CMD_FLAG_FUA;
	/* An error (a piece's, or an earlier piece's reply) stops the rest. */
	while (!split_all_sent(s) && !s->error) {
		buf = io_piece(n, io, cmd, &len);
		/* A flush has no range: offset and length 0. */
		ret = !len && cmd != NBD_CMD_FLUSH ? -EINVAL :
		      nbd_client_queue(n->client, cmd, flags,
				       cmd == NBD_CMD_FLUSH ? 0 :
				       io->off + s->sent, len, buf, s);
		if (ret == -EBUSY)
			return 0;
		if (ret)
			split_stop(s, ret);
		else
			split_queued(s, len);
	}
	split_stop(s, 0);
	return 1;
}

/* Queue what waits, in order, while the client has slots. */
static void pump(struct nbd_store *n)
{
	struct torus_split *s;

	while ((s = n->waiting.head)) {
		if (!io_queue(n, io_of(s)))
			return;
		fifo_pop(&n->waiting);
		if (!s->out)
			fifo_push(&n->finished, s);
	}
}

/* The next stage of a request whose pieces are back, or its done(). */
static int io_settle(struct nbd_store *n, struct store_io *io)
{
	int cmd, error = io->split.error;

	if (!error && io->stage == STAGE_MAIN &&
	    io->op == STORE_IO_WRITE && (io->flags & STORE_IO_FUA) &&
	    !(n->exp.tflags & NBD_FLAG_SEND_FUA) &&
	    (n->exp.tflags & NBD_FLAG_SEND_FLUSH)) {
		io_start(io, STAGE_FLUSH);
		fifo_push(&n->waiting, &io->split);
		return 0;
	}
	if (error && !(io->op == STORE_IO_TRIM && error == -EOPNOTSUPP)) {
		cmd = io_cmd(n, io);
		xfer_err(n, cmd < 0 ? NBD_CMD_WRITE : cmd, io->len, io->off,
			 error);
	}
	io->done(io, error);
	return 1;
}

static int nbd_aio_open(struct store *st, unsigned int depth)
{
	struct nbd_store *n = to_nbd(st);
	int ret;

	if (n->client)
		return -EBUSY;
	fifo_init(&n->waiting);
	fifo_init(&n->finished);
	n->aio_depth = depth;
	/* Room for the ring's commands and a synchronous call beside them. */
	ret = get_client(n, depth + NBD_STORE_DEPTH);
	if (ret)
		return ret;
	return nbd_client_fd(n->client);
}

static void nbd_aio_submit(struct store *st, struct store_io *io)
{
	struct nbd_store *n = to_nbd(st);

	io_start(io, STAGE_MAIN);
	/* A server without flush has nothing to flush (as nbd_store_flush). */
	if (io->op == STORE_IO_FLUSH &&
	    !(n->exp.tflags & NBD_FLAG_SEND_FLUSH)) {
		fifo_push(&n->finished, &io->split);
		return;
	}
	fifo_push(&n->waiting, &io->split);
}

static void nbd_aio_commit(struct store *st)
{
	struct nbd_store *n = to_nbd(st);

	pump(n);
	nbd_client_send_all(n->client);
}

static int nbd_aio_reap(struct store *st)
{
	struct nbd_store *n = to_nbd(st);
	struct torus_split *s, *next;
	int got, done = 0;

	got = nbd_client_reap(n->client, 0, NULL);
	if (got < 0 && got != -EINTR && got != -EAGAIN)
		storage_err("nbd %s: waiting for replies: %s", n->uri,
			    strerror(-got));
	/* Taken whole: done() and the next stages run off this list. */
	s = n->finished.head;
	fifo_init(&n->finished);
	for (; s; s = next) {
		next = s->next;
		s->next = NULL;
		done += io_settle(n, io_of(s));
	}
	pump(n);
	nbd_client_send_all(n->client);
	return done;
}

static void nbd_aio_cancel(struct store *st, int err)
{
	struct nbd_store *n = to_nbd(st);
	struct torus_split *s;

	nbd_client_cancel(n->client, -err);
	/* What had not gone out yet fails too. */
	while ((s = fifo_pop(&n->waiting)))
		if (split_stop(s, err))
			fifo_push(&n->finished, s);
	while ((s = fifo_pop(&n->finished)))
		io_of(s)->done(io_of(s), s->error ? s->error : err);
}

const struct store_aio_ops nbd_aio_ops = {
	.open = nbd_aio_open,
	.submit = nbd_aio_submit,
	.commit = nbd_aio_commit,
	.reap = nbd_aio_reap,
	.cancel = nbd_aio_cancel,
};
