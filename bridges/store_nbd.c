// SPDX-License-Identifier: GPL-2.0-only
/*
 * The nbd store: a struct store over an NBD export through the project's
 * client (client/nbd), one connection per store (",conns=N": N). This
 * file connects, parses and opens; store_nbd_io.c moves the data.
 * store_session() opens new connections, so two rings never share one.
 *
 * The connection made at open only checks the export and learns its size,
 * then closes: a server that takes one connection per volume
 * (coreos-torus) must not find it held when a ring's session connects.
 * I/O through the opened store itself (a UIO device has no sessions)
 * connects again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol_stores.h"
#include "nbd_connect.h"
#include "nbd_uri.h"
#include "nbd_wire.h"
#include "storage_log.h"
#include "store.h"
#include "store_nbd.h"

/* Largest request when the server states no maximum (nbdkit: 64 MiB). */
#define NBD_STORE_MAX_REQ	(32u << 20)

/* The parameters of --store nbd:URI[,conns=N]. */
struct nbd_spec {
	char uri[4096];
	unsigned int conns;
};

static const struct store_ops nbd_store_ops;
static struct nbd_store *nbd_store_connect(const char *uri, unsigned int conns,
					   unsigned int timeout_s, char *err,
					   size_t errlen);

static void hang_up(struct nbd_store *n)
{
	while (n->nfds)
		nbd_disconnect(n->fds[--n->nfds]);
}

/* The opened store's own connections, closed at open (see the top). */
int nbd_store_redial(struct nbd_store *n)
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
