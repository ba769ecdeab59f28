// SPDX-License-Identifier: GPL-2.0-only
/*
 * The nbd store: a struct backend over an NBD export through the project's
 * client (client/nbd), one connection per backend, each call synchronous
 * (queue, submit, reap until its requests are back). backend_session()
 * opens a new connection, so two rings never share one.
 *
 * The connection made at open only checks the export and learns its size,
 * then closes: a server that takes one connection per volume (torus) must
 * not find it held when a ring's session connects. I/O through the
 * opened backend itself (a UIO device has no sessions) connects again.
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

#include "backends.h"
#include "nbd_client.h"
#include "nbd_connect.h"
#include "nbd_uri.h"
#include "nbd_wire.h"
#include "storage_log.h"
#include "store.h"
#include "torus_util.h"

/* Requests in flight per call: a large transfer is split and pipelined. */
#define NBD_BE_DEPTH		8
/* Largest request when the server states no maximum (nbdkit: 64 MiB). */
#define NBD_BE_MAX_REQ		(32u << 20)
/* WRITE_ZEROES carries no payload; a large range still goes in pieces. */
#define NBD_BE_MAX_ZERO		(1u << 30)
#define NBD_BE_ZERO_BUF		(256u << 10)

static const uint8_t zero_buf[NBD_BE_ZERO_BUF];

struct nbd_be {
	struct backend be;
	char uri[4096];			/* as given, for messages and sessions */
	char label[4200];		/* nbd_uri_label(), for the client */
	unsigned int timeout_s;
	struct nbd_export exp;
	uint32_t max_req;
	int fd;				/* until the client owns it */
	struct nbd_client *client;
	pthread_t owner;		/* the thread that built the client */
	int first_error;		/* of the requests of one xfer */
};

static const struct backend_ops nbd_be_ops;
static struct nbd_be *nbd_be_connect(const char *uri, unsigned int timeout_s,
				     char *err, size_t errlen);

static struct nbd_be *to_nbd(struct backend *be)
{
	return container_of(be, struct nbd_be, be);
}

/* The opened backend's own connection, closed at open (see the top). */
static int redial(struct nbd_be *n)
{
	struct nbd_be *s;
	char err[1200];

	s = nbd_be_connect(n->uri, n->timeout_s, err, sizeof(err));
	if (!s) {
		storage_err("%s", err);
		return -1;
	}
	if (s->exp.size != n->exp.size) {
		storage_err("nbd %s: the export changed size (%llu, was %llu)",
			    n->uri, (unsigned long long)s->exp.size,
			    (unsigned long long)n->exp.size);
		nbd_disconnect(s->fd);
		free(s);
		return -1;
	}
	n->exp = s->exp;
	n->max_req = s->max_req;
	n->fd = s->fd;
	free(s);
	return 0;
}

/* The client, built on first use by the calling thread (see the top). */
/* The client's completer: one xfer fails with its first error. */
static void xfer_done(void *arg, void *user, int error)
{
	struct nbd_be *n = arg;

	if (error && !n->first_error)
		n->first_error = error;
}

static int get_client(struct nbd_be *n)
{
	const struct torus_completer done = { .fn = xfer_done, .arg = n };
	char err[512];

	if (n->client) {
		if (pthread_equal(n->owner, pthread_self()))
			return 0;
		storage_err("nbd %s: used from a second thread; each thread needs its own session",
			    n->uri);
		return -EXDEV;
	}
	if (n->fd < 0 && redial(n))
		return -ENOTCONN;
	/* The client owns the socket from here, and closes it on failure. */
	n->client = nbd_client_new(&n->fd, 1, NBD_BE_DEPTH, &n->exp, 0,
				   n->timeout_s, &done, n->label, err,
				   sizeof(err));
	n->fd = -1;
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

static void xfer_err(struct nbd_be *n, uint16_t type, uint64_t len,
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
 * NBD_BE_DEPTH in flight (FLUSH: one request, len 0). buf (NULL for
 * payload-free commands) advances with the offset unless step_buf is
 * false (zeroes written from one buffer).
 */
static int nbd_be_xfer(struct nbd_be *n, uint16_t type, void *buf,
		       bool step_buf, uint64_t len, uint64_t off,
		       uint32_t chunk)
{
	uint64_t start = off, total = len;
	bool flush = type == NBD_CMD_FLUSH;
	unsigned int inflight = 0;
	int ret, first, got;

	ret = get_client(n);
	if (ret)
		return ret;
	n->first_error = 0;
	while (len || flush || inflight) {
		while ((len || flush) && inflight < NBD_BE_DEPTH) {
			uint32_t l = min_u64(len, chunk);

			ret = nbd_client_queue(n->client, type, 0, off, l, buf,
					       NULL);
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
		inflight -= got;
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

static int nbd_be_pread(struct backend *be, void *buf, size_t len,
			uint64_t off)
{
	struct nbd_be *n = to_nbd(be);

	return nbd_be_xfer(n, NBD_CMD_READ, buf, true, len, off, n->max_req);
}

static int nbd_be_pwrite(struct backend *be, const void *buf, size_t len,
			 uint64_t off)
{
	struct nbd_be *n = to_nbd(be);

	if (n->exp.tflags & NBD_FLAG_READ_ONLY)
		return -EROFS;
	return nbd_be_xfer(n, NBD_CMD_WRITE, (void *)buf, true, len, off,
			   n->max_req);
}

static int nbd_be_zero(struct backend *be, size_t len, uint64_t off)
{
	struct nbd_be *n = to_nbd(be);

	if (n->exp.tflags & NBD_FLAG_READ_ONLY)
		return -EROFS;
	if (n->exp.tflags & NBD_FLAG_SEND_WRITE_ZEROES)
		return nbd_be_xfer(n, NBD_CMD_WRITE_ZEROES, NULL, false, len,
				   off, NBD_BE_MAX_ZERO);
	return nbd_be_xfer(n, NBD_CMD_WRITE, (void *)zero_buf, false, len, off,
			   min_u64(n->max_req, sizeof(zero_buf)));
}

static int nbd_be_trim(struct backend *be, size_t len, uint64_t off)
{
	struct nbd_be *n = to_nbd(be);

	if (n->exp.tflags & NBD_FLAG_READ_ONLY)
		return -EROFS;
	if (!(n->exp.tflags & NBD_FLAG_SEND_TRIM))
		return -EOPNOTSUPP;
	return nbd_be_xfer(n, NBD_CMD_TRIM, NULL, false, len, off,
			   NBD_BE_MAX_ZERO);
}

static int nbd_be_flush(struct backend *be)
{
	struct nbd_be *n = to_nbd(be);

	/* A server that offers no flush has no cache to flush. */
	if (!(n->exp.tflags & NBD_FLAG_SEND_FLUSH))
		return 0;
	/* Not connected since open: nothing was written through it. */
	if (!n->client && n->fd < 0)
		return 0;
	return nbd_be_xfer(n, NBD_CMD_FLUSH, NULL, false, 0, 0, 0);
}

static bool nbd_can_trim(const struct backend *be)
{
	const struct nbd_be *n = container_of(be, struct nbd_be, be);

	return n->exp.tflags & NBD_FLAG_SEND_TRIM;
}

static void nbd_be_close(struct backend *be)
{
	struct nbd_be *n = to_nbd(be);

	if (n->client)
		nbd_client_free(n->client);
	else if (n->fd >= 0)
		nbd_disconnect(n->fd);
	free(n);
}

/* Connects and negotiates; the client itself comes with the first I/O. */
static struct nbd_be *nbd_be_connect(const char *uri, unsigned int timeout_s,
				     char *err, size_t errlen)
{
	struct nbd_hs_config cfg = { .mode = NBD_HS_MODE_AUTO };
	struct nbd_connect_limits lim = { .timeout_s = timeout_s };
	struct nbd_uri u;
	struct nbd_be *n;
	char msg[1024];

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
	cfg.export_name = u.export_name;
	n->fd = nbd_connect_export(&u, &cfg, &lim, &n->exp, msg, sizeof(msg));
	if (n->fd < 0) {
		snprintf(err, errlen, "nbd %s: %s", uri, msg);
		goto fail;
	}
	n->max_req = NBD_BE_MAX_REQ;
	if (n->exp.block_size_known && n->exp.max_block &&
	    n->exp.max_block < n->max_req)
		n->max_req = n->exp.max_block;
	n->be.ops = &nbd_be_ops;
	n->be.size = n->exp.size;
	return n;
fail:
	free(n);
	return NULL;
}

/* Each ring gets its own connection to the same export. */
static struct backend *nbd_be_session(struct backend *be, char *err,
				      size_t errlen)
{
	struct nbd_be *n = to_nbd(be), *s;

	s = nbd_be_connect(n->uri, n->timeout_s, err, errlen);
	if (!s)
		return NULL;
	if (s->exp.size != n->exp.size) {
		snprintf(err, errlen, "nbd %s: the export changed size (%llu, was %llu)",
			 n->uri, (unsigned long long)s->exp.size,
			 (unsigned long long)n->exp.size);
		nbd_be_close(&s->be);
		return NULL;
	}
	return &s->be;
}

static const struct backend_ops nbd_be_ops = {
	.name = "nbd",
	.pread = nbd_be_pread,
	.pwrite = nbd_be_pwrite,
	.zero = nbd_be_zero,
	.trim = nbd_be_trim,
	.flush = nbd_be_flush,
	.session = nbd_be_session,
	.close = nbd_be_close,
};

struct backend *nbd_store_open(const char *uri, unsigned int timeout_s,
			       char *err, size_t errlen)
{
	struct nbd_be *n;

	n = nbd_be_connect(uri, timeout_s, err, errlen);
	if (!n)
		return NULL;
	if (!n->exp.size) {
		snprintf(err, errlen, "nbd %s: the export is empty", uri);
		nbd_be_close(&n->be);
		return NULL;
	}
	/* Let go of the volume until I/O needs it (see the top). */
	nbd_disconnect(n->fd);
	n->fd = -1;
	return &n->be;
}

/* The URI is checked here, so that a bad one is a command line error. */
static int nbd_parse(void *priv, const char *arg, char *err, size_t errlen)
{
	const char **uri = priv;
	struct nbd_uri u;

	if (!arg || !*arg) {
		snprintf(err, errlen, "no URI: use nbd:nbd://HOST[:PORT][/NAME] or nbd:nbd+unix:///NAME?socket=PATH");
		return -1;
	}
	if (nbd_uri_parse(arg, &u, err, errlen))
		return -1;
	*uri = arg;
	return 0;
}

static struct backend *nbd_open(const void *priv,
				const struct store_params *p, char *err,
				size_t errlen)
{
	const char *const *uri = priv;

	return nbd_store_open(*uri, p->timeout_s, err, errlen);
}

const struct store_type store_nbd = {
	.name = "nbd",
	.usage = "nbd:URI",
	.help = "an NBD export (nbd://HOST[:PORT][/NAME] or\n"
		"nbd+unix:///NAME?socket=PATH), its size",
	.flags = STORE_OWN_SIZE | STORE_SESSIONS,
	.priv_size = sizeof(const char *),
	.parse = nbd_parse,
	.open = nbd_open,
	.can_trim = nbd_can_trim,
};
