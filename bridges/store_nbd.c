// SPDX-License-Identifier: GPL-2.0-only
/*
 * The nbd store: a struct store over an NBD export through the project's
 * client (client/nbd), one connection per store (",conns=N": N), each
 * synchronous call queueing, submitting and reaping until its requests
 * are back. store_session() opens new connections, so two rings never
 * share one.
 *
 * Asynchronous requests (store_ops.aio): as many in flight as the
 * caller asks, each cut into NBD requests (one per iovec and per the
 * server's largest request), sent from and received into the caller's
 * buffers. A request waits in the store, in order, while the client's
 * slots are all taken. The client's completer only counts pieces off; a
 * request whose pieces are all back goes on a list that reap() works
 * through, where done() is called or the next stage (the flush of a FUA
 * write the server cannot mark) is queued. Synchronous calls still work
 * in between: their requests carry no user pointer.
 *
 * The connection made at open only checks the export and learns its size,
 * then closes: a server that takes one connection per volume
 * (coreos-torus) must not find it held when a ring's session connects. I/O through the
 * opened store itself (a UIO device has no sessions) connects again.
 *
 * The client's io_uring is SINGLE_ISSUER: only the thread that created it
 * may submit. A session is opened by the handler host and then used by
 * its ring's thread, so the client is built by the first I/O, in the
 * thread that will keep using it; the handshake happens at open, where
 * its errors belong.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol_stores.h"
#include "nbd_client.h"
#include "nbd_connect.h"
#include "nbd_uri.h"
#include "nbd_wire.h"
#include "storage_log.h"
#include "store.h"
#include "torus_util.h"

/* Requests in flight per call: a large transfer is split and pipelined. */
#define NBD_STORE_DEPTH		8
/* conns=N: the most connections per session. */
#define NBD_STORE_MAX_CONNS	16
/* Largest request when the server states no maximum (nbdkit: 64 MiB). */
#define NBD_STORE_MAX_REQ	(32u << 20)
/* WRITE_ZEROES carries no payload; a large range still goes in pieces. */
#define NBD_STORE_MAX_ZERO	(1u << 30)
#define NBD_STORE_ZERO_BUF	(256u << 10)

static const uint8_t zero_buf[NBD_STORE_ZERO_BUF];

struct nbd_store {
	struct store st;
	char uri[4096];			/* as given, for messages and sessions */
	char label[4200];		/* nbd_uri_label(), for the client */
	unsigned int timeout_s;
	struct nbd_export exp;
	uint32_t max_req;
	unsigned int conns;		/* per session */
	int fds[NBD_STORE_MAX_CONNS];	/* until the client owns them */
	unsigned int nfds;
	struct nbd_client *client;
	pthread_t owner;		/* the thread that built the client */
	int first_error;		/* of the requests of one xfer */
	unsigned int sync_done;		/* of them, replies in */

	/* Asynchronous requests (see the top). */
	unsigned int aio_depth;		/* 0: none opened */
	struct store_io *waiting, **waiting_tail;
	struct store_io *finished, **finished_tail;
};

/* The parameters of --store nbd:URI[,conns=N]. */
struct nbd_spec {
	char uri[4096];
	unsigned int conns;
};

static const struct store_ops nbd_store_ops;
static struct nbd_store *nbd_store_connect(const char *uri, unsigned int conns,
					   unsigned int timeout_s, char *err,
					   size_t errlen);

static struct nbd_store *to_nbd(struct store *st)
{
	return container_of(st, struct nbd_store, st);
}

static void hang_up(struct nbd_store *n)
{
	while (n->nfds)
		nbd_disconnect(n->fds[--n->nfds]);
}

/* The opened store's own connections, closed at open (see the top). */
static int redial(struct nbd_store *n)
{
	struct nbd_store *s;
	char err[1200];

	s = nbd_store_connect(n->uri, n->conns, n->timeout_s, err, sizeof(err));
	if (!s) {
		storage_err("%s", err);
		return -1;
	}
	if (s->exp.size != n->exp.size) {
		storage_err("nbd %s: the export changed size (%llu, was %llu)",
			    n->uri, (unsigned long long)s->exp.size,
			    (unsigned long long)n->exp.size);
		hang_up(s);
		free(s);
		return -1;
	}
	n->exp = s->exp;
	n->max_req = s->max_req;
	memcpy(n->fds, s->fds, sizeof(n->fds));
	n->nfds = s->nfds;
	free(s);
	return 0;
}

/* A request of ours whose pieces are all back: for reap(). */
static void io_finished(struct nbd_store *n, struct store_io *io)
{
	io->next = NULL;
	*n->finished_tail = io;
	n->finished_tail = &io->next;
}

/*
 * The client's completer: a synchronous xfer (no user pointer) fails with
 * its first error; an asynchronous request counts its pieces off.
 */
static void xfer_done(void *arg, void *user, int error)
{
	struct nbd_store *n = arg;
	struct store_io *io = user;

	if (!io) {
		n->sync_done++;
		if (error && !n->first_error)
			n->first_error = error;
		return;
	}
	if (error && !io->error)
		io->error = -error;
	/* Still waiting: the pump finishes it once all its pieces went. */
	if (!--io->parts && !io->next && n->waiting != io)
		io_finished(n, io);
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
	if (!n->nfds && redial(n))
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
	uint64_t start = off, total = len;
	bool flush = type == NBD_CMD_FLUSH;
	unsigned int inflight = 0;
	int ret, first, got;

	ret = get_client(n, NBD_STORE_DEPTH);
	if (ret)
		return ret;
	n->first_error = 0;
	n->sync_done = 0;
	while (len || flush || inflight) {
		while ((len || flush) && inflight < NBD_STORE_DEPTH) {
			uint32_t l = min_u64(len, chunk);

			ret = nbd_client_queue(n->client, type, 0, off, l, buf,
					       NULL);
			if (ret == -EBUSY)
				break;
			if (ret)
				goto fail;
			inflight++;
			flush = false;
			off += l;
			len -= l;
			if (buf && step_buf)
				buf = (uint8_t *)buf + l;
		}
		ret = nbd_client_submit(n->client);
		if (ret)
			goto fail;
		got = nbd_client_reap(n->client, 1, NULL);
		if (got < 0) {
			ret = got;
			goto fail;
		}
		inflight -= n->sync_done;
		n->sync_done = 0;
	}
	first = -n->first_error;
	if (first)
		xfer_err(n, type, total, start, first);
	return first;
fail:
	xfer_err(n, type, total, start, ret);
	/* The client cannot say which requests went out: drop it. */
	if (inflight)
		nbd_client_cancel(n->client, EIO);
	return ret;
}

static int nbd_store_pread(struct store *st, void *buf, size_t len,
			   uint64_t off)
{
	struct nbd_store *n = to_nbd(st);

	return nbd_store_xfer(n, NBD_CMD_READ, buf, true, len, off, n->max_req);
}

static int nbd_store_pwrite(struct store *st, const void *buf, size_t len,
			    uint64_t off)
{
	struct nbd_store *n = to_nbd(st);

	if (n->exp.tflags & NBD_FLAG_READ_ONLY)
		return -EROFS;
	return nbd_store_xfer(n, NBD_CMD_WRITE, (void *)buf, true, len, off,
			      n->max_req);
}

static int nbd_store_zero(struct store *st, size_t len, uint64_t off)
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

static int nbd_store_trim(struct store *st, size_t len, uint64_t off)
{
	struct nbd_store *n = to_nbd(st);

	if (n->exp.tflags & NBD_FLAG_READ_ONLY)
		return -EROFS;
	if (!(n->exp.tflags & NBD_FLAG_SEND_TRIM))
		return -EOPNOTSUPP;
	return nbd_store_xfer(n, NBD_CMD_TRIM, NULL, false, len, off,
			      NBD_STORE_MAX_ZERO);
}

static int nbd_store_flush(struct store *st)
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

/* Bytes the stage moves (a flush counts one, for its one request). */
static uint64_t io_need(const struct store_io *io)
{
	return io->stage == STAGE_FLUSH || io->op == STORE_IO_FLUSH ?
	       1 : io->len;
}

/* The next piece at io->pos: where its data is, how long it may be. */
static void *io_piece(const struct nbd_store *n, const struct store_io *io,
		      int cmd, uint32_t *len)
{
	uint64_t left = io->len - io->pos, at = io->pos;
	uint32_t i;

	if (cmd == NBD_CMD_FLUSH) {
		*len = 0;
		return NULL;
	}
	if (cmd == NBD_CMD_WRITE_ZEROES || cmd == NBD_CMD_TRIM) {
		*len = min_u64(left, NBD_STORE_MAX_ZERO);
		return NULL;
	}
	if (io->op == STORE_IO_ZERO) {
		*len = min_u64(left, min_u64(n->max_req, sizeof(zero_buf)));
		return (void *)zero_buf;
	}
	for (i = 0; i < io->iov_cnt && at >= io->iov[i].iov_len; i++)
		at -= io->iov[i].iov_len;
	/* Iovecs shorter than len: the caller's bug, refused in io_queue(). */
	if (i == io->iov_cnt) {
		*len = 0;
		return NULL;
	}
	*len = min_u64(min_u64(left, io->iov[i].iov_len - at), n->max_req);
	return (uint8_t *)io->iov[i].iov_base + at;
}

/*
 * Queue the request's pieces: 1 when all went (or it failed), 0 when the
 * client has no slot free.
 */
static int io_queue(struct nbd_store *n, struct store_io *io)
{
	int cmd = io_cmd(n, io), ret;
	uint16_t flags = 0;
	uint32_t len;
	void *buf;

	if (cmd < 0) {
		io->error = cmd;
		io->pos = io_need(io);
		return 1;
	}
	if (cmd == NBD_CMD_WRITE && (io->flags & STORE_IO_FUA) &&
	    (n->exp.tflags & NBD_FLAG_SEND_FUA))
		flags = NBD_CMD_FLAG_FUA;
	while (io->pos < io_need(io) && !io->error) {
		buf = io_piece(n, io, cmd, &len);
		if (!len && cmd != NBD_CMD_FLUSH) {
			io->error = -EINVAL;
			break;
		}
		/* A flush has no range: offset and length 0. */
		ret = nbd_client_queue(n->client, cmd, flags,
				       cmd == NBD_CMD_FLUSH ? 0 :
				       io->off + io->pos, len, buf, io);
		if (ret == -EBUSY)
			return 0;
		if (ret) {
			io->error = ret;
			break;
		}
		io->parts++;
		io->pos += cmd == NBD_CMD_FLUSH ? 1 : len;
	}
	io->pos = io_need(io);
	return 1;
}

/* Queue what waits, in order, while the client has slots. */
static void pump(struct nbd_store *n)
{
	struct store_io *io;

	while ((io = n->waiting)) {
		if (!io_queue(n, io))
			return;
		n->waiting = io->next;
		if (!n->waiting)
			n->waiting_tail = &n->waiting;
		io->next = NULL;
		if (!io->parts)
			io_finished(n, io);
	}
}

static void io_wait(struct nbd_store *n, struct store_io *io)
{
	io->next = NULL;
	*n->waiting_tail = io;
	n->waiting_tail = &io->next;
}

/* The next stage of a request whose pieces are back, or its done(). */
static int io_settle(struct nbd_store *n, struct store_io *io)
{
	int cmd;

	if (!io->error && io->stage == STAGE_MAIN &&
	    io->op == STORE_IO_WRITE && (io->flags & STORE_IO_FUA) &&
	    !(n->exp.tflags & NBD_FLAG_SEND_FUA) &&
	    (n->exp.tflags & NBD_FLAG_SEND_FLUSH)) {
		io->stage = STAGE_FLUSH;
		io->pos = 0;
		io_wait(n, io);
		return 0;
	}
	if (io->error && !(io->op == STORE_IO_TRIM &&
			   io->error == -EOPNOTSUPP)) {
		cmd = io_cmd(n, io);
		xfer_err(n, cmd < 0 ? NBD_CMD_WRITE : cmd, io->len, io->off,
			 io->error);
	}
	io->done(io, io->error);
	return 1;
}

static int nbd_aio_open(struct store *st, unsigned int depth)
{
	struct nbd_store *n = to_nbd(st);
	int ret;

	if (n->client)
		return -EBUSY;
	n->waiting_tail = &n->waiting;
	n->finished_tail = &n->finished;
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

	io->pos = 0;
	io->parts = 0;
	io->stage = STAGE_MAIN;
	io->error = 0;
	/* A server without flush has nothing to flush (as nbd_store_flush). */
	if (io->op == STORE_IO_FLUSH &&
	    !(n->exp.tflags & NBD_FLAG_SEND_FLUSH)) {
		io_finished(n, io);
		return;
	}
	io_wait(n, io);
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
	struct store_io *io, *next;
	int got, done = 0;

	got = nbd_client_reap(n->client, 0, NULL);
	if (got < 0 && got != -EINTR && got != -EAGAIN)
		storage_err("nbd %s: waiting for replies: %s", n->uri,
			    strerror(-got));
	/* Taken whole: done() and the next stages run off this list. */
	io = n->finished;
	n->finished = NULL;
	n->finished_tail = &n->finished;
	for (; io; io = next) {
		next = io->next;
		io->next = NULL;
		done += io_settle(n, io);
	}
	pump(n);
	nbd_client_send_all(n->client);
	return done;
}

static void nbd_aio_cancel(struct store *st, int err)
{
	struct nbd_store *n = to_nbd(st);
	struct store_io *io;

	nbd_client_cancel(n->client, -err);
	/* What had not gone out yet fails too. */
	while ((io = n->waiting)) {
		n->waiting = io->next;
		io->error = err;
		io->pos = io_need(io);
		io->next = NULL;
		if (!io->parts)
			io_finished(n, io);
	}
	n->waiting_tail = &n->waiting;
	while ((io = n->finished)) {
		n->finished = io->next;
		io->next = NULL;
		io->done(io, io->error ? io->error : err);
	}
	n->finished_tail = &n->finished;
}

static const struct store_aio_ops nbd_aio_ops = {
	.open = nbd_aio_open,
	.submit = nbd_aio_submit,
	.commit = nbd_aio_commit,
	.reap = nbd_aio_reap,
	.cancel = nbd_aio_cancel,
};

/* ---- opening ---- */

static bool nbd_can_trim(const struct store *st)
{
	const struct nbd_store *n = container_of(st, struct nbd_store, st);

	return n->exp.tflags & NBD_FLAG_SEND_TRIM;
}

static void nbd_store_close(struct store *st)
{
	struct nbd_store *n = to_nbd(st);

	if (n->client)
		nbd_client_free(n->client);
	hang_up(n);
	free(n);
}

/* One connection, negotiated: its fd, or -1 with the reason in err. */
static int dial(const struct nbd_uri *u, unsigned int timeout_s,
		struct nbd_export *exp, char *err, size_t errlen)
{
	struct nbd_hs_config cfg = {
		.mode = NBD_HS_MODE_AUTO,
		.export_name = u->export_name,
	};
	struct nbd_connect_limits lim = { .timeout_s = timeout_s };

	return nbd_connect_export(u, &cfg, &lim, exp, err, errlen);
}

/* Connects and negotiates; the client itself comes with the first I/O. */
static struct nbd_store *nbd_store_connect(const char *uri, unsigned int conns,
					   unsigned int timeout_s, char *err,
					   size_t errlen)
{
	struct nbd_export more;
	struct nbd_uri u;
	struct nbd_store *n;
	char msg[1024];
	int fd;

	n = calloc(1, sizeof(*n));
	if (!n) {
		snprintf(err, errlen, "nbd %s: out of memory", uri);
		return NULL;
	}
	if (nbd_uri_parse(uri, &u, msg, sizeof(msg))) {
		snprintf(err, errlen, "nbd %s: %s", uri, msg);
		goto fail;
	}
	if (u.warning[0])
		storage_err("nbd %s: warning: %s", uri, u.warning);
	snprintf(n->uri, sizeof(n->uri), "%s", uri);
	nbd_uri_label(&u, n->label, sizeof(n->label));
	n->timeout_s = timeout_s;
	n->conns = conns;
	while (n->nfds < conns) {
		fd = dial(&u, timeout_s, n->nfds ? &more : &n->exp, msg,
			  sizeof(msg));
		if (fd < 0) {
			snprintf(err, errlen, "nbd %s: %s%s", uri, msg,
				 n->nfds ? " (a further connection of conns=N)" : "");
			goto fail;
		}
		n->fds[n->nfds++] = fd;
		/*
		 * A flush on one connection covers the others' writes only
		 * where the server says so.
		 */
		if (conns > 1 && !(n->exp.tflags & NBD_FLAG_CAN_MULTI_CONN)) {
			snprintf(err, errlen,
				 "nbd %s: conns=%u, but the server does not offer multi-conn (NBD_FLAG_CAN_MULTI_CONN), so a flush on one connection would not cover writes on the others; use one connection",
				 uri, conns);
			goto fail;
		}
	}
	n->max_req = NBD_STORE_MAX_REQ;
	if (n->exp.block_size_known && n->exp.max_block &&
	    n->exp.max_block < n->max_req)
		n->max_req = n->exp.max_block;
	n->st.ops = &nbd_store_ops;
	n->st.size = n->exp.size;
	n->st.read_only = n->exp.tflags & NBD_FLAG_READ_ONLY;
	return n;
fail:
	hang_up(n);
	free(n);
	return NULL;
}

/* Each ring gets connections of its own to the same export. */
static struct store *nbd_store_session(struct store *st, char *err,
				       size_t errlen)
{
	struct nbd_store *n = to_nbd(st), *s;

	s = nbd_store_connect(n->uri, n->conns, n->timeout_s, err, errlen);
	if (!s)
		return NULL;
	if (s->exp.size != n->exp.size) {
		snprintf(err, errlen, "nbd %s: the export changed size (%llu, was %llu)",
			 n->uri, (unsigned long long)s->exp.size,
			 (unsigned long long)n->exp.size);
		nbd_store_close(&s->st);
		return NULL;
	}
	return &s->st;
}

static const struct store_ops nbd_store_ops = {
	.name = "nbd",
	.pread = nbd_store_pread,
	.pwrite = nbd_store_pwrite,
	.zero = nbd_store_zero,
	.trim = nbd_store_trim,
	.flush = nbd_store_flush,
	.session = nbd_store_session,
	.close = nbd_store_close,
	.aio = &nbd_aio_ops,
};

static struct store *nbd_store_open_conns(const char *uri,
					  unsigned int conns,
					  unsigned int timeout_s, char *err,
					  size_t errlen)
{
	struct nbd_store *n;

	n = nbd_store_connect(uri, conns, timeout_s, err, errlen);
	if (!n)
		return NULL;
	if (!n->exp.size) {
		snprintf(err, errlen, "nbd %s: the export is empty", uri);
		nbd_store_close(&n->st);
		return NULL;
	}
	/* Let go of the volume until I/O needs it (see the top). */
	hang_up(n);
	return &n->st;
}

struct store *nbd_store_open(const char *uri, unsigned int timeout_s,
			     char *err, size_t errlen)
{
	return nbd_store_open_conns(uri, 1, timeout_s, err, errlen);
}

/*
 * The URI is checked here, so that a bad one is a command line error.
 * ",conns=N" at the end is the option, not the URI's.
 */
static int nbd_parse(void *priv, const char *arg, char *err, size_t errlen)
{
	struct nbd_spec *spec = priv;
	const char *opt;
	struct nbd_uri u;
	char *end;
	unsigned long v;

	if (!arg || !*arg) {
		snprintf(err, errlen, "no URI: use nbd:nbd://HOST[:PORT][/NAME] or nbd:nbd+unix:///NAME?socket=PATH");
		return -1;
	}
	spec->conns = 1;
	snprintf(spec->uri, sizeof(spec->uri), "%s", arg);
	opt = strrchr(arg, ',');
	if (opt && !strncmp(opt, ",conns=", 7)) {
		errno = 0;
		v = strtoul(opt + 7, &end, 10);
		if (errno || end == opt + 7 || *end || !v ||
		    v > NBD_STORE_MAX_CONNS) {
			snprintf(err, errlen, "%s: conns= takes a number of connections from 1 to %u",
				 opt + 1, NBD_STORE_MAX_CONNS);
			return -1;
		}
		spec->conns = v;
		spec->uri[opt - arg] = '\0';
	}
	if (strlen(spec->uri) >= sizeof(spec->uri) - 1) {
		snprintf(err, errlen, "the URI is longer than %zu bytes",
			 sizeof(spec->uri) - 2);
		return -1;
	}
	return nbd_uri_parse(spec->uri, &u, err, errlen) ? -1 : 0;
}

static struct store *nbd_open(const void *priv,
			      const struct store_params *p, char *err,
			      size_t errlen)
{
	const struct nbd_spec *spec = priv;

	return nbd_store_open_conns(spec->uri, spec->conns, p->timeout_s, err,
				    errlen);
}

const struct store_type store_nbd = {
	.name = "nbd",
	.usage = "nbd:URI[,conns=N]",
	.help = "an NBD export (nbd://HOST[:PORT][/NAME] or\n"
		"nbd+unix:///NAME?socket=PATH), its size; as many\n"
		"requests in flight as a ring has commands, over N\n"
		"connections a ring (default 1; more need a server\n"
		"that offers multi-conn)",
	.flags = STORE_OWN_SIZE | STORE_SESSIONS,
	.priv_size = sizeof(struct nbd_spec),
	.parse = nbd_parse,
	.open = nbd_open,
	.can_trim = nbd_can_trim,
};
