// SPDX-License-Identifier: GPL-2.0-only
/*
 * The NBD transport: nbd_connect.c for handshakes, nbd_client.c for I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../transport.h"
#include "nbd_client.h"
#include "nbd_connect.h"
#include "nbd_proto.h"
#include "nbd_uri.h"

#define MAX_CONNS	64

static bool nbd_handles(const char *uri)
{
	return !strncmp(uri, "nbd", 3);
}

static int connect_one(const struct torus_params *p, const struct nbd_uri *u,
		       struct nbd_export *exp, char *err, size_t errlen)
{
	struct nbd_hs_config cfg = {
		.export_name = u->export_name,
		.mode = p->handshake,
		.structured_replies = p->structured,
	};
	struct nbd_connect_limits lim = {
		.timeout_s = p->timeout_s,
		.stop = p->stop,
	};

	return nbd_connect_export(u, &cfg, &lim, exp, err, errlen);
}

static void describe(const struct nbd_uri *u, const struct nbd_export *e,
		     struct torus_target *t)
{
	nbd_uri_label(u, t->label, sizeof(t->label));
	t->size = e->size;
	t->read_only = e->tflags & NBD_FLAG_READ_ONLY;
	t->can_flush = e->tflags & NBD_FLAG_SEND_FLUSH;
	t->can_trim = e->tflags & NBD_FLAG_SEND_TRIM;
	t->can_fua = e->tflags & NBD_FLAG_SEND_FUA;
	/*
	 * Servers that cannot do OPT_GO predate CAN_MULTI_CONN; 0-Disk used
	 * bit 8 for its own SEND_CLOSE. Do not trust the bit from them.
	 */
	t->multi_conn = (e->tflags & NBD_FLAG_CAN_MULTI_CONN) &&
			!e->via_export_name;
	t->min_block = e->min_block;
	t->pref_block = e->pref_block;
	t->max_block = e->max_block;
	snprintf(t->detail, sizeof(t->detail),
		 "%s%s, transmission flags %#06x%s%s",
		 e->oldstyle ? "oldstyle handshake" :
		 e->via_export_name ? "NBD_OPT_EXPORT_NAME" : "NBD_OPT_GO",
		 e->fell_back ? " (after the server dropped NBD_OPT_GO)" : "",
		 e->tflags,
		 e->block_size_known ? ", block size info" : "",
		 e->structured_replies ? ", structured replies" : "");
}

/* Every job probes: say what the uri ignores once, not once per job. */
static void warn_once(const char *uri, const char *warning)
{
	static char last[512];

	if (!warning[0] || !strncmp(last, uri, sizeof(last)))
		return;
	snprintf(last, sizeof(last), "%s", uri);
	fprintf(stderr, "torus: warning: %s: %s\n", uri, warning);
}

static int nbd_probe(const struct torus_params *p, struct torus_target *t,
		     char *err, size_t errlen)
{
	struct nbd_export exp;
	struct nbd_uri u;
	int fd;

	if (nbd_uri_parse(p->uri, &u, err, errlen))
		return -1;
	warn_once(p->uri, u.warning);
	fd = connect_one(p, &u, &exp, err, errlen);
	if (fd < 0)
		return -1;
	describe(&u, &exp, t);
	nbd_disconnect(fd);
	return 0;
}

static void *nbd_open(const struct torus_params *p, unsigned int depth,
		      struct torus_target *t, char *err, size_t errlen)
{
	int fds[MAX_CONNS];
	struct nbd_export exp, first;
	struct nbd_client *c;
	struct nbd_uri u;
	char label[512];
	unsigned int i;

	if (p->conns < 1 || p->conns > MAX_CONNS) {
		snprintf(err, errlen, "conns=%u is out of range (1 to %d)",
			 p->conns, MAX_CONNS);
		return NULL;
	}
	if (nbd_uri_parse(p->uri, &u, err, errlen))
		return NULL;
	nbd_uri_label(&u, label, sizeof(label));
	for (i = 0; i < p->conns; i++) {
		char why[512];

		fds[i] = connect_one(p, &u, &exp, why, sizeof(why));
		if (fds[i] < 0) {
			if (i)
				snprintf(err, errlen,
					 "connection %u of conns=%u: %s", i + 1,
					 p->conns, why);
			else
				snprintf(err, errlen, "%s", why);
			goto fail;
		}
		if (!i)
			first = exp;
		if (exp.size != first.size || exp.tflags != first.tflags) {
			snprintf(err, errlen,
				 "%s: connection %u saw a different export (size %llu, flags %#x) than connection 1 (size %llu, flags %#x)",
				 label, i + 1, (unsigned long long)exp.size,
				 exp.tflags, (unsigned long long)first.size,
				 first.tflags);
			i++;
			goto fail;
		}
	}
	if (first.size < t->size) {
		snprintf(err, errlen,
			 "%s: the export shrank from %llu to %llu bytes since the job started",
			 label, (unsigned long long)t->size,
			 (unsigned long long)first.size);
		goto fail;
	}
	describe(&u, &first, t);
	c = nbd_client_new(fds, p->conns, depth, &first, p->poll_us,
			   p->timeout_s, label, err, errlen);
	return c;
fail:
	while (i--)
		close(fds[i]);
	return NULL;
}

static const uint16_t op_to_cmd[] = {
	[TORUS_OP_READ] = NBD_CMD_READ,
	[TORUS_OP_WRITE] = NBD_CMD_WRITE,
	[TORUS_OP_TRIM] = NBD_CMD_TRIM,
	[TORUS_OP_FLUSH] = NBD_CMD_FLUSH,
};

static int nbd_queue(void *conn, enum torus_op op, bool fua, uint64_t offset,
		     uint32_t len, void *buf, void *user)
{
	return nbd_client_queue(conn, op_to_cmd[op],
				fua ? NBD_CMD_FLAG_FUA : 0, offset, len, buf,
				user);
}

static int nbd_submit(void *conn)
{
	return nbd_client_submit(conn);
}

static int nbd_reap(void *conn, unsigned int min, unsigned int max,
		    const struct timespec *timeout,
		    struct torus_completion *out)
{
	return nbd_client_reap(conn, min, max, timeout, out);
}

static void nbd_cancel(void *conn, int error)
{
	nbd_client_cancel(conn, error);
}

static void nbd_close(void *conn)
{
	nbd_client_free(conn);
}

const struct torus_transport torus_nbd_transport = {
	.name = "nbd",
	.handles = nbd_handles,
	.probe = nbd_probe,
	.open = nbd_open,
	.queue = nbd_queue,
	.submit = nbd_submit,
	.reap = nbd_reap,
	.cancel = nbd_cancel,
	.close = nbd_close,
};
