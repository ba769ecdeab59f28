// SPDX-License-Identifier: GPL-2.0-only
/*
 * The libnbd transport before any I/O: its options, the uris it serves,
 * what a connected handle says about the export (the glue's target), and
 * the checks that refuse what the server cannot do for the job.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <libnbd.h>

/* fio's option table types (struct fio_option, FIO_OPT_*). */
#include "fio.h"
#include "optgroup.h"

#include "libnbd_setup.h"

/* Without block size info: what every server takes (the native's too). */
#define DEFAULT_MAX_BLOCK	(32U << 20)
/* libnbd refuses larger payloads itself. */
#define LIBNBD_MAX_PAYLOAD	(64U << 20)

struct fio_option lnbd_options[] = {
	{
		/* The glue folds it into the nbd transport's conns=. */
		.name	= "conns",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct lnbd_opts, conns),
		.def	= "1",
		.minval	= 1,
		.maxval	= LNBD_MAX_CONNS,
	},
	{
		.name	= "tls_certificates",
		.lname	= "TLS certificates directory",
		.help	= "X.509 directory (ca-cert.pem, client-cert.pem, client-key.pem) for an nbds:// uri with transport=libnbd; the uri's ?tls-certificates=DIR does the same",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct lnbd_opts, tls_certificates),
	},
	{
		.name	= "tls_psk_file",
		.lname	= "TLS PSK file",
		.help	= "PSK file (username:hexkey lines, as psktool writes them) for an nbds:// uri with transport=libnbd; the uri's ?tls-psk-file=FILE does the same",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct lnbd_opts, tls_psk_file),
	},
	{
		.name	= "tls_username",
		.lname	= "TLS username",
		.help	= "PSK user name with transport=libnbd; a user in the uri (nbds://alice@host/) wins; none: the login name",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct lnbd_opts, tls_username),
	},
	{
		.name	= NULL,
	},
};

static const char *const schemes[] = {
	"nbd://", "nbds://", "nbd+unix://", "nbds+unix://", "nbd+vsock://",
	"nbds+vsock://",
};

bool lnbd_handles(const char *uri)
{
	unsigned int i;

	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (!strncmp(uri, schemes[i], strlen(schemes[i])))
			return true;
	return false;
}

void lnbd_fill_target(struct nbd_handle *h, const char *uri,
		      struct torus_target *t)
{
	int64_t min = nbd_get_block_size(h, LIBNBD_SIZE_MINIMUM);
	int64_t pref = nbd_get_block_size(h, LIBNBD_SIZE_PREFERRED);
	int64_t max = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);

	snprintf(t->label, sizeof(t->label), "%s", uri);
	t->size = nbd_get_size(h);
	t->read_only = nbd_is_read_only(h) == 1;
	t->can_flush = nbd_can_flush(h) == 1;
	t->can_trim = nbd_can_trim(h) == 1;
	t->can_fua = nbd_can_fua(h) == 1;
	t->min_block = min > 0 ? min : 1;
	t->max_block = max > 0 ? max : DEFAULT_MAX_BLOCK;
	if (t->max_block > LIBNBD_MAX_PAYLOAD)
		t->max_block = LIBNBD_MAX_PAYLOAD;
	t->cmd_max = 0;
	snprintf(t->detail, sizeof(t->detail),
		 "libnbd %s, %s, block sizes %lld/%lld/%lld, multi-conn %d",
		 nbd_get_version(h), nbd_get_tls_negotiated(h) == 1 ?
		 "TLS" : "plain", (long long)min, (long long)pref,
		 (long long)max, nbd_can_multi_conn(h));
}

int lnbd_check_multi_conn(const struct torus_params *p, struct nbd_handle *h,
			  const char *label, char *err, size_t errlen)
{
	const struct lnbd_opts *o = p->opts;

	if (o->conns <= 1 || nbd_can_multi_conn(h) == 1)
		return 0;
	snprintf(err, errlen,
		 "%s: conns=%u but the server does not advertise multi-conn (NBD_FLAG_CAN_MULTI_CONN), so connections could see each other's writes out of order; use conns=1 (qemu-nbd needs -e %u to allow it)",
		 label, o->conns, o->conns);
	return -1;
}

/* Tells the server goodbye if it can be said without waiting. */
void lnbd_drop_handle(struct nbd_handle *h)
{
	if (nbd_aio_is_ready(h) == 1)
		nbd_aio_disconnect(h, 0);
	nbd_close(h);
}

int lnbd_inspect(const struct torus_params *p, struct torus_target *t,
		 char *err, size_t errlen)
{
	struct nbd_handle *h = lnbd_connect(p, err, errlen);
	int ret;

	if (!h)
		return -1;
	lnbd_fill_target(h, p->uri, t);
	ret = lnbd_check_multi_conn(p, h, t->label, err, errlen);
	lnbd_drop_handle(h);
	return ret;
}
