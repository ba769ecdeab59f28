// SPDX-License-Identifier: GPL-2.0-only
/*
 * The zeroos profile: ZeroOS 0-Disk's `nbdserver` (zero-os/0-Disk
 * nbd/gonbdserver), as observed on the wire (docs/legacy-servers.md; what
 * it does not reproduce is in that page's fidelity table):
 *
 * - fixed newstyle, handshake flags 0x0003; the client's NO_ZEROES is
 *   honoured;
 * - options: EXPORT_NAME (unknown or empty name: connection closed, as
 *   the nbdserver program sets no default export), LIST, STARTTLS
 *   (ERR_UNSUP; payload left in the stream, as 0-Disk does), ABORT (ACK,
 *   then closed), anything else ERR_UNSUP; INFO and GO are read in the
 *   pre-standard order (u16 info count, the infos, u32 name length, name)
 *   straight from the stream, so a conformant OPT_GO for a named export
 *   fails with "Name is too long" and the connection is reset with the
 *   rest of the option unread; an unknown or empty name gets ERR_UNKNOWN;
 *   a known one gets INFO_EXPORT, INFO_NAME, INFO_DESCRIPTION ("boot
 *   vdisk": 0-Disk says "<vdisk type> vdisk", and the deduped layout is
 *   the boot type's) and INFO_BLOCK_SIZE, unasked, then ACK;
 * - each connection gets its own view of the store (store_session):
 *   over Redis, its own copy of the block map, as each 0-Disk connection
 *   builds its own store;
 * - transmission flags 0x014d; block sizes 1 / --block-size / 32 MiB;
 * - READ, WRITE, FLUSH, WRITE_ZEROES, DISC; FUA flushes the store; TRIM
 *   (not advertised, unless --advertise-trim asks so that clients send
 *   it) answers EIO; a request with length 0, past the end or
 *   over the maximum, or an unknown command, drops the connection;
 * - the READ reply header goes out before the data is read, so a store
 *   read error ends the connection; every error is EIO;
 * - one request at a time, replies in order.
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

#define ZEROOS_HFLAGS	(NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES)
/* bit 8 is 0-Disk's old NBD_FLAG_SEND_CLOSE (CAN_MULTI_CONN today) */
#define ZEROOS_TFLAGS	(NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | \
			 NBD_FLAG_SEND_FUA | NBD_FLAG_SEND_WRITE_ZEROES | \
			 NBD_FLAG_CAN_MULTI_CONN)
#define ZEROOS_MAX_OPTION	65536
#define ZEROOS_MAX_NAME		4096
/* ExportConfig.Description of nbdserver: "<vdisk type> vdisk" */
#define ZEROOS_DESCRIPTION	"boot vdisk"

/*
 * The store for this connection: 0-Disk builds one per connection
 * (connectExport), so over Redis each has its own block map. NULL (logged)
 * when the storage cannot be reached.
 */
static struct store *zeroos_attach(struct peer *c)
{
	struct store *st;
	char err[512];

	st = store_session(c->exp->st, err, sizeof(err));
	if (!st)
		shim_info("%s: cannot open vdisk \"%s\": %s", c->peer,
			  c->exp->name, err);
	return st;
}

static void zeroos_detach(struct peer *c, struct store *st)
{
	if (st != c->exp->st)
		store_close(st);
}

static int zeroos_export_name(struct peer *c, uint32_t len)
{
	struct export *e = c->exp;
	const uint8_t *name = peer_read(c, len);

	if (!name)
		return -1;
	if (!len) {
		shim_info("%s: empty export name and no default export (as the nbdserver program); closing",
			  c->peer);
		return -1;
	}
	if (!export_name_is(e, name, len)) {
		shim_info("%s: no export \"%.*s\" (serving \"%s\"); closing",
			  c->peer, (int)len, name, e->name);
		return -1;
	}
	c->st = zeroos_attach(c);
	if (!c->st)
		return -1;
	return neg_export_name_reply(c, e->size,
				    ZEROOS_TFLAGS | e->extra_tflags,
				    c->no_zeroes);
}

/*
 * INFO or GO, parsed as 0-Disk does: field by field from the stream, in
 * the pre-standard order, whatever the option length says. Returns 1 when
 * GO succeeded (transmission follows), 0 to read the next option, -1 to
 * drop the connection.
 */
static int zeroos_info_go(struct peer *c, uint32_t opt, uint32_t optlen)
{
	struct export *e = c->exp;
	struct store *st;
	const uint8_t *p;
	uint32_t ninfo, namelen, used;
	bool known;

	p = peer_read(c, 2);
	if (!p)
		return -1;
	ninfo = get_be16(p);
	/* the info requests only matter for BLOCK_SIZE_REQD, never sent
	 * since the minimum block size is 1 */
	if (peer_skip(c, 2 * ninfo))
		return -1;
	p = peer_read(c, 4);
	if (!p)
		return -1;
	namelen = get_be32(p);
	used = 2 + 2 * ninfo + 4;
	if (namelen > ZEROOS_MAX_NAME) {
		shim_info("%s: %s: Name is too long (%u: the option was not in 0-Disk's pre-standard field order); closing",
			  c->peer, nbd_opt_name(opt), namelen);
		/* 0-Disk hangs up on the rest of the option: a reset */
		if (optlen > used)
			peer_reset(c);
		return -1;
	}
	p = peer_read(c, namelen);
	if (!p)
		return -1;
	used += namelen;
	if (optlen < used) {
		shim_info("%s: Option length too short; closing", c->peer);
		return -1;
	}
	/* the empty name is the default export, and nbdserver has none */
	known = export_name_is(e, p, namelen) && namelen;
	if (!known)
		shim_info("%s: %s: no export \"%.*s\" (%u bytes)", c->peer,
			  nbd_opt_name(opt), (int)namelen, p, namelen);
	if (peer_skip(c, optlen - used))
		return -1;
	/* 0-Disk connects the store for INFO too, and lets it go */
	st = known ? zeroos_attach(c) : NULL;
	if (!st)
		return neg_reply(c, opt, NBD_REP_ERR_UNKNOWN);
	if (neg_reply_info_export(c, opt, e->size,
				 ZEROOS_TFLAGS | e->extra_tflags) ||
	    neg_reply_info_text(c, opt, NBD_INFO_NAME, e->name) ||
	    neg_reply_info_text(c, opt, NBD_INFO_DESCRIPTION,
			       ZEROOS_DESCRIPTION) ||
	    neg_reply_info_block_size(c, opt, e->min_block, e->pref_block,
				     e->max_block) ||
	    neg_reply(c, opt, NBD_REP_ACK)) {
		zeroos_detach(c, st);
		return -1;
	}
	if (opt != NBD_OPT_GO) {
		zeroos_detach(c, st);
		return 0;
	}
	c->st = st;
	return 1;
}

static int zeroos_negotiate(struct peer *c)
{
	uint32_t cflags, opt, len;
	int ret;

	if (neg_greeting(c, ZEROOS_HFLAGS) || neg_client_flags(c, &cflags))
		return -1;
	c->no_zeroes = cflags & NBD_FLAG_C_NO_ZEROES;
	for (;;) {
		if (neg_option(c, &opt, &len))
			return -1;
		if (len > ZEROOS_MAX_OPTION) {
			shim_info("%s: Option is too long (%u); closing",
				  c->peer, len);
			peer_reset(c);
			return -1;
		}
		switch (opt) {
		case NBD_OPT_EXPORT_NAME:
			return zeroos_export_name(c, len);
		case NBD_OPT_INFO:
		case NBD_OPT_GO:
			ret = zeroos_info_go(c, opt, len);
			if (ret)
				return ret < 0 ? -1 : 0;
			break;
		case NBD_OPT_LIST:
			if (neg_reply_server(c, opt, c->exp->name) ||
			    neg_reply(c, opt, NBD_REP_ACK))
				return -1;
			break;
		case NBD_OPT_STARTTLS:
			if (neg_reply(c, opt, NBD_REP_ERR_UNSUP))
				return -1;
			break;
		case NBD_OPT_ABORT:
			return neg_abort(c, opt);
		default:
			if (neg_refuse(c, opt, len))
				return -1;
			break;
		}
	}
}

static int zeroos_check(struct peer *c, const struct nbd_request *req)
{
	const struct export *e = c->exp;

	switch (req->type) {
	case NBD_CMD_READ:
	case NBD_CMD_WRITE:
	case NBD_CMD_TRIM:
	case NBD_CMD_WRITE_ZEROES:
		if (!req->length || req->offset > e->size ||
		    req->length > e->size - req->offset) {
			shim_info("%s: bad offset or length (%s offset %llu length %u, size %llu); closing",
				  c->peer, nbd_cmd_name(req->type),
				  (unsigned long long)req->offset,
				  req->length, (unsigned long long)e->size);
			return REQ_CLOSE;
		}
		if (req->length > e->max_block) {
			shim_info("%s: %s of %u bytes is over the %u-byte maximum block size; closing",
				  c->peer, nbd_cmd_name(req->type),
				  req->length, e->max_block);
			return REQ_CLOSE;
		}
		return 0;
	case NBD_CMD_FLUSH:
	case NBD_CMD_DISC:
		return 0;
	default:
		shim_info("%s: unknown command %u; closing", c->peer,
			  req->type);
		return REQ_CLOSE;
	}
}

/* The header is committed before the data is read, as in 0-Disk. */
static int zeroos_read(struct peer *c, const struct nbd_request *req)
{
	uint8_t *p = peer_reserve(c, NBD_SIMPLE_REPLY_LEN + req->length);
	int ret;

	if (!p)
		return REQ_CLOSE;
	nbd_encode_simple_reply(p, 0, req->cookie);
	ret = store_pread(c->st, p + NBD_SIMPLE_REPLY_LEN, req->length,
			  req->offset);
	if (ret) {
		shim_info("%s: read I/O error: %s; closing", c->peer,
			  strerror(-ret));
		peer_unreserve(c, req->length);
		peer_flush(c);
		return REQ_CLOSE;
	}
	return REQ_NEXT;
}

static int zeroos_request(struct peer *c, const struct nbd_request *req,
			  const uint8_t *payload)
{
	struct store *st = c->st;
	bool fua = req->flags & NBD_CMD_FLAG_FUA;
	int ret = 0;

	switch (req->type) {
	case NBD_CMD_READ:
		return zeroos_read(c, req);
	case NBD_CMD_WRITE:
		ret = store_pwrite(st, payload, req->length, req->offset);
		if (!ret && fua)
			ret = store_flush(st);
		break;
	case NBD_CMD_WRITE_ZEROES:
		ret = store_zero(st, req->length, req->offset);
		if (!ret && fua)
			ret = store_flush(st);
		break;
	case NBD_CMD_FLUSH:
		ret = store_flush(st);
		break;
	case NBD_CMD_TRIM:
		ret = -EIO;	/* 0-Disk's stores cannot trim */
		break;
	case NBD_CMD_DISC:
		if (store_flush(st))
			shim_info("%s: cannot flush store", c->peer);
		return REQ_DISC;
	}
	if (ret && req->type != NBD_CMD_TRIM)
		shim_info("%s: %s I/O error: %s", c->peer,
			  nbd_cmd_name(req->type), strerror(-ret));
	return reply_simple(c, req->cookie, ret ? NBD_EIO : 0) ?
	       REQ_CLOSE : REQ_NEXT;
}

const struct profile profile_zeroos = {
	.name = "zeroos",
	.default_export = "default",
	.default_block_size = 4096,
	.max_payload = 32u << 20,
	.default_poll_us = 0,
	.pipelined = false,
	.negotiate = zeroos_negotiate,
	.check = zeroos_check,
	.request = zeroos_request,
};
