// SPDX-License-Identifier: GPL-2.0-only
/*
 * The coreos profile: the archived CoreOS torus server (coreos-torus),
 * `torusblk nbdserve` (coreos/torus internal/nbd), as observed on the wire
 * (docs/legacy-servers.md; what it does not reproduce is in that page's
 * fidelity table):
 *
 * - fixed newstyle, handshake flags 0x0001; client flags read and ignored;
 * - options: EXPORT_NAME (empty or unknown name, or a volume already in
 *   use: connection closed), LIST (its payload is not read), ABORT (acked
 *   as LIST, then the connection ends; coreos-torus itself then crashes,
 *   which the shim does not imitate); any other option, or one longer
 *   than 4096 bytes, closes the connection without a reply, and without
 *   reading the option's data: a TCP reset when there was some;
 * - export reply: size, flags 0x0025, always 124 zeroes;
 * - READ, WRITE, FLUSH, TRIM (which also syncs), DISC; FUA ignored; any
 *   other command closes the connection; simple replies only;
 * - one request at a time, replies in order; one connection per volume.
 */
#include <errno.h>
#include <string.h>

#include "store_ops.h"
#include "peer.h"
#include "export.h"
#include "negotiate.h"
#include "log.h"
#include "profile.h"
#include "reply.h"

#define COREOS_HFLAGS	NBD_FLAG_FIXED_NEWSTYLE
#define COREOS_TFLAGS	(NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | \
			 NBD_FLAG_SEND_TRIM)
#define COREOS_MAX_OPTION	4096
/* coreos-torus allocates whatever length is asked; the shim stops here. */
#define COREOS_MAX_REQUEST	(64u << 20)

static int coreos_export_name(struct peer *c, uint32_t len)
{
	struct export *e = c->exp;
	const uint8_t *name = peer_read(c, len);

	if (!name)
		return -1;
	if (!len) {
		shim_info("%s: empty volume name (coreos-torus requires one); closing",
			  c->peer);
		return -1;
	}
	if (!export_name_is(e, name, len)) {
		shim_info("%s: no volume \"%.*s\" (coreos-torus serves \"%s\"); closing",
			  c->peer, (int)len, name, e->name);
		return -1;
	}
	if (!export_try_lock(e)) {
		shim_info("%s: volume \"%s\" is in use by another connection: locked, as in coreos-torus; closing",
			  c->peer, e->name);
		return -1;
	}
	c->holds_export = true;
	return neg_export_name_reply(c, e->size,
				     COREOS_TFLAGS | e->extra_tflags, false);
}

static int coreos_negotiate(struct peer *c)
{
	uint32_t cflags, opt, len;

	if (neg_greeting(c, COREOS_HFLAGS) || neg_client_flags(c, &cflags))
		return -1;
	for (;;) {
		if (neg_option(c, &opt, &len))
			return -1;
		if (len > COREOS_MAX_OPTION) {
			shim_info("%s: strange option length %u; closing",
				  c->peer, len);
			peer_reset(c);
			return -1;
		}
		switch (opt) {
		case NBD_OPT_EXPORT_NAME:
			return coreos_export_name(c, len);
		case NBD_OPT_ABORT:
			/*
			 * coreos-torus acks it as LIST, then serves a nil volume and
			 * the whole process dies; here only this connection
			 * ends (reset if ABORT carried data coreos-torus never read)
			 */
			neg_reply(c, NBD_OPT_LIST, NBD_REP_ACK);
			peer_flush(c);
			if (len)
				peer_reset(c);
			return -1;
		case NBD_OPT_LIST:
			/* the payload stays in the stream, as in coreos-torus */
			if (neg_reply_server(c, NBD_OPT_LIST, c->exp->name) ||
			    neg_reply(c, NBD_OPT_LIST, NBD_REP_ACK))
				return -1;
			break;
		default:
			shim_info("%s: unknown option %s (%u): coreos-torus closes the connection",
				  c->peer, nbd_opt_name(opt), opt);
			/* coreos-torus never reads the data: the kernel resets */
			if (len)
				peer_reset(c);
			return -1;
		}
	}
}

static int coreos_check(struct peer *c, const struct nbd_request *req)
{
	switch (req->type) {
	case NBD_CMD_READ:
		if (req->length > COREOS_MAX_REQUEST) {
			shim_info("%s: READ of %u bytes; closing", c->peer,
				  req->length);
			return REQ_CLOSE;
		}
		return 0;
	case NBD_CMD_WRITE:
	case NBD_CMD_FLUSH:
	case NBD_CMD_TRIM:
	case NBD_CMD_DISC:
		return 0;
	default:
		shim_info("%s: nbd: invalid command %u; closing", c->peer,
			  req->type);
		return REQ_CLOSE;
	}
}

static bool in_range(const struct peer *c, const struct nbd_request *req)
{
	return req->offset <= c->exp->size &&
	       req->length <= c->exp->size - req->offset;
}

/*
 * coreos-torus answers a failed read with the error and still sends the buffer;
 * the shim sends zeroes in its place.
 */
static int coreos_read(struct peer *c, const struct nbd_request *req)
{
	uint8_t *p = peer_reserve(c, NBD_SIMPLE_REPLY_LEN + req->length);
	int err = -EIO;

	if (!p)
		return REQ_CLOSE;
	if (in_range(c, req))
		err = store_pread(c->exp->st, p + NBD_SIMPLE_REPLY_LEN,
				  req->length, req->offset);
	if (err)
		memset(p + NBD_SIMPLE_REPLY_LEN, 0, req->length);
	nbd_encode_simple_reply(p, err ? NBD_EIO : 0, req->cookie);
	return REQ_NEXT;
}

static int coreos_request(struct peer *c, const struct nbd_request *req,
			 const uint8_t *payload)
{
	struct store *st = c->exp->st;
	uint32_t error = 0;
	int ret;

	switch (req->type) {
	case NBD_CMD_READ:
		return coreos_read(c, req);
	case NBD_CMD_WRITE:
		if (!in_range(c, req) ||
		    store_pwrite(st, payload, req->length, req->offset))
			error = NBD_EIO;
		break;
	case NBD_CMD_TRIM:
		/* errors are only logged; trim is followed by a sync */
		if (in_range(c, req)) {
			ret = store_trim(st, req->length, req->offset);
			if (ret)
				shim_info("%s: trim error: %s", c->peer,
					  strerror(-ret));
		}
		/* fall through */
	case NBD_CMD_FLUSH:
		ret = store_flush(st);
		if (ret)
			shim_info("%s: sync error: %s", c->peer,
				  strerror(-ret));
		break;
	case NBD_CMD_DISC:
		store_flush(st);
		return REQ_DISC;
	}
	return reply_simple(c, req->cookie, error) ? REQ_CLOSE : REQ_NEXT;
}

const struct profile profile_coreos = {
	.name = "coreos",
	.default_export = "torus",
	.default_block_size = 512 * 1024,
	.max_payload = COREOS_MAX_REQUEST,
	.default_poll_us = 0,
	.pipelined = false,
	.negotiate = coreos_negotiate,
	.check = coreos_check,
	.request = coreos_request,
};
