// SPDX-License-Identifier: GPL-2.0-only
/*
 * The NBD transport: its options and messages, the embedded nbdkit, and
 * the binding of client/nbd (connect + io_uring client) to transport.h.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fio's option table types (struct fio_option, FIO_OPT_*). */
#include "fio.h"
#include "optgroup.h"

#include "../option_table.h"
#include "../transport.h"
#include "nbd_client.h"
#include "nbd_connect.h"
#include "nbd_embedded.h"
#include "nbd_job_check.h"
#include "nbd_proto.h"
#include "nbd_uri.h"

#define MAX_CONNS	64
#define MAX_POLL_US	1000000

/*
 * A job's session: its connections, in one client, which hands finished
 * requests straight to the glue's completer.
 */
struct nbd_session {
	struct torus_session base;
	struct nbd_client *client;
};

static struct nbd_session *nbd_session_of(struct torus_session *s)
{
	return (struct nbd_session *)((char *)s -
				     offsetof(struct nbd_session, base));
}

/* The options block the glue lays out for this transport. */
struct nbd_opts {
	unsigned int conns;
	unsigned int handshake;		/* enum nbd_hs_mode */
	unsigned int structured;
	unsigned int poll_us;
};

static int set_handshake(void *eo, const char *value)
{
	return torus_option_set(eo, "handshake", value);
}

static struct fio_option nbd_options[] = {
	{
		.name	= "conns",
		.lname	= "NBD connections",
		.help	= "Connections per job; requests are spread across them, and more than 1 needs a server that advertises multi-conn",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct nbd_opts, conns),
		.def	= "1",
		.minval	= 1,
		.maxval	= MAX_CONNS,
	},
	{
		.name	= "handshake",
		.lname	= "NBD handshake",
		.help	= "How to negotiate the export: auto, go or export-name",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct nbd_opts, handshake),
		.cb	= set_handshake,
		.def	= "auto",
		.posval	= {
			{ .ival = "auto", .oval = NBD_HS_MODE_AUTO,
			  .help = "NBD_OPT_GO, falling back to NBD_OPT_EXPORT_NAME for legacy servers (torus, 0-Disk)" },
			{ .ival = "go", .oval = NBD_HS_MODE_GO,
			  .help = "NBD_OPT_GO only (with block size info)" },
			{ .ival = "export-name", .oval = NBD_HS_MODE_EXPORT_NAME,
			  .help = "NBD_OPT_EXPORT_NAME only" },
		},
	},
	{
		.name	= "structured_replies",
		.lname	= "NBD structured replies",
		.help	= "Negotiate structured replies: simple replies are cheaper, structured ones exercise servers that split reads",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct nbd_opts, structured),
		.def	= "0",
	},
	{
		.name	= "poll_us",
		.lname	= "Busy-poll microseconds",
		.help	= "With at most 2 requests outstanding, busy-poll for replies this many microseconds before sleeping: cuts QD1 latency, costs CPU; 0 never spins, as the kernel's paths do not",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct nbd_opts, poll_us),
		.def	= "0",
		.minval	= 0,
		.maxval	= MAX_POLL_US,
	},
	{
		.name	= NULL,
	},
};

/* fio 3.33 lets negatives through when the minimum is 0: check here. */
static int nbd_check_options(const void *opts, char *err, size_t errlen)
{
	const struct nbd_opts *o = opts;

	if (o->conns < 1 || o->conns > MAX_CONNS) {
		snprintf(err, errlen, "conns=%d is out of range: use 1 to %d connections",
			 (int)o->conns, MAX_CONNS);
		return -1;
	}
	if (o->poll_us > MAX_POLL_US) {
		snprintf(err, errlen,
			 "poll_us=%d is out of range: use 0 (never spin) to %d microseconds",
			 (int)o->poll_us, MAX_POLL_US);
		return -1;
	}
	return 0;
}

static bool nbd_handles(const char *uri)
{
	return !strncmp(uri, "nbd", 3);
}

static int connect_one(const struct torus_params *p, const struct nbd_uri *u,
		       struct nbd_export *exp, char *err, size_t errlen)
{
	const struct nbd_opts *o = p->opts;
	struct nbd_hs_config cfg = {
		.export_name = u->export_name,
		.mode = o->handshake,
		.structured_replies = o->structured,
	};
	struct nbd_connect_limits lim = {
		.timeout_s = p->timeout_s,
		.stop = p->stop,
	};

	return nbd_connect_export(u, &cfg, &lim, exp, err, errlen);
}

/*
 * Servers that cannot do OPT_GO predate CAN_MULTI_CONN; 0-Disk used bit 8
 * for its own SEND_CLOSE. Do not trust the bit from them.
 */
static bool multi_conn(const struct nbd_export *e)
{
	return (e->tflags & NBD_FLAG_CAN_MULTI_CONN) && !e->via_export_name;
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
	t->min_block = e->min_block;
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

/* Every job inspects: say what the uri ignores once, not once per job. */
static void warn_once(const char *uri, const char *warning)
{
	static char last[512];

	if (!warning[0] || !strncmp(last, uri, sizeof(last)))
		return;
	snprintf(last, sizeof(last), "%s", uri);
	fprintf(stderr, "torus: warning: %s: %s\n", uri, warning);
}

static int check_multi_conn(const struct torus_params *p,
			    const struct nbd_export *e, const char *label,
			    char *err, size_t errlen)
{
	const struct nbd_opts *o = p->opts;

	if (o->conns <= 1 || multi_conn(e))
		return 0;
	snprintf(err, errlen,
		 "%s: conns=%u but the server does not advertise multi-conn (NBD_FLAG_CAN_MULTI_CONN), so connections could see each other's writes out of order; use conns=1 (qemu-nbd needs -e %u to allow it)",
		 label, o->conns, o->conns);
	return -1;
}

static int nbd_inspect(const struct torus_params *p, struct torus_target *t,
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
	return check_multi_conn(p, &exp, t->label, err, errlen);
}

int nbd_job_check(const struct torus_params *p, const struct torus_job *job,
		  const struct torus_target *t, char *err, size_t errlen)
{
	if (job->trims && !t->can_trim) {
		snprintf(err, errlen,
			 "%s: the server does not support trim (NBD_FLAG_SEND_TRIM not advertised); remove rw=trim/randtrim/trimwrite from the job",
			 t->label);
		return -1;
	}
	if (job->fua && !t->can_fua) {
		snprintf(err, errlen,
			 "%s: fua=1 but the server does not support FUA (NBD_FLAG_SEND_FUA not advertised); drop fua=1",
			 t->label);
		return -1;
	}
	return 0;
}

static struct torus_session *nbd_open(const struct torus_params *p,
				      unsigned int depth,
				      struct torus_target *t, char *err,
				      size_t errlen)
{
	const struct nbd_opts *o = p->opts;
	int fds[MAX_CONNS];
	struct nbd_export exp, first;
	struct nbd_session *s;
	struct nbd_uri u;
	char label[512];
	unsigned int i;

	if (nbd_uri_parse(p->uri, &u, err, errlen))
		return NULL;
	nbd_uri_label(&u, label, sizeof(label));
	for (i = 0; i < o->conns; i++) {
		char why[512];

		fds[i] = connect_one(p, &u, &exp, why, sizeof(why));
		if (fds[i] < 0) {
			if (i)
				snprintf(err, errlen,
					 "connection %u of conns=%u: %s", i + 1,
					 o->conns, why);
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
	if (check_multi_conn(p, &first, label, err, errlen))
		goto fail;
	describe(&u, &first, t);
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory for iodepth=%u", depth);
		i = o->conns;
		goto fail;
	}
	s->base.done = p->done;
	/* From here the client owns the sockets, even when it fails. */
	s->client = nbd_client_new(fds, o->conns, depth, &first, o->poll_us,
				   p->timeout_s, &p->done, label, err, errlen);
	if (!s->client) {
		free(s);
		return NULL;
	}
	if (p->stamp.fn)
		nbd_client_set_stamper(s->client, &p->stamp);
	return &s->base;
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

static int nbd_queue(struct torus_session *s, enum torus_op op, bool fua,
		     uint64_t offset, uint32_t len, void *buf, void *user)
{
	return nbd_client_queue(nbd_session_of(s)->client, op_to_cmd[op],
				fua ? NBD_CMD_FLAG_FUA : 0, offset, len, buf,
				user);
}

static int nbd_submit(struct torus_session *s)
{
	return nbd_client_submit(nbd_session_of(s)->client);
}

static int nbd_reap(struct torus_session *s, unsigned int min,
		    const struct timespec *timeout)
{
	return nbd_client_reap(nbd_session_of(s)->client, min, timeout);
}

static void nbd_cancel(struct torus_session *s, int error)
{
	nbd_client_cancel(nbd_session_of(s)->client, error);
}

static void nbd_close(struct torus_session *s)
{
	struct nbd_session *ns = nbd_session_of(s);

	nbd_client_free(ns->client);
	free(ns);
}

const struct torus_transport torus_nbd_transport = {
	.name = "nbd",
	.kind = "an NBD",
	.uri_forms = "nbd://host[:port]/export or nbd+unix:///export?socket=PATH",
	.options = nbd_options,
	.opts_size = sizeof(struct nbd_opts),
	.check_options = nbd_check_options,
	.handles = nbd_handles,
	.embedded = nbd_embedded_get,
	.inspect = nbd_inspect,
	.check = nbd_job_check,
	.open = nbd_open,
	.queue = nbd_queue,
	.submit = nbd_submit,
	.reap = nbd_reap,
	.cancel = nbd_cancel,
	.close = nbd_close,
};
