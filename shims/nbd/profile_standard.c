// SPDX-License-Identifier: GPL-2.0-only
/*
 * The standard profile: a conformant NBD server (NetworkBlockDevice/nbd
 * doc/proto.md) for comparisons, built to be fast:
 *
 * - fixed newstyle with NO_ZEROES; EXPORT_NAME, INFO and GO (with
 *   NBD_INFO_EXPORT and NBD_INFO_BLOCK_SIZE, and NAME on request),
 *   STRUCTURED_REPLY, LIST, ABORT; ERR_UNSUP for the rest;
 * - READ, WRITE, FLUSH, TRIM, WRITE_ZEROES with FUA, DISC; multi-conn;
 *   structured replies for READ when agreed;
 * - replies batched: one send per receive, reads pointing straight into
 *   the memory or null store.
 */
#include <string.h>

#include "store_ops.h"
#include "peer.h"
#include "export.h"
#include "negotiate.h"
#include "log.h"
#include "profile.h"
#include "reply.h"

#define STD_HFLAGS	(NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES)
#define STD_CFLAGS	(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES)
#define STD_TFLAGS	(NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | \
			 NBD_FLAG_SEND_FUA | NBD_FLAG_SEND_TRIM | \
			 NBD_FLAG_SEND_WRITE_ZEROES | NBD_FLAG_CAN_MULTI_CONN)
#define STD_MAX_OPTION	(64u << 10)
#define STD_CMD_FLAGS	(NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE)

static int std_export_name(struct peer *c, uint32_t len)
{
	struct export *e = c->exp;
	const uint8_t *name = peer_read(c, len);

	if (!name)
		return -1;
	if (len && !export_name_is(e, name, len)) {
		shim_info("%s: EXPORT_NAME: no export \"%.*s\" (serving \"%s\"); closing",
			  c->peer, (int)len, name, e->name);
		return -1;
	}
	return neg_export_name_reply(c, e->size, STD_TFLAGS | e->extra_tflags,
				     c->no_zeroes);
}

/* 1: GO succeeded, 0: next option, -1: close. */
static int std_info_go(struct peer *c, uint32_t opt, uint32_t len)
{
	struct export *e = c->exp;
	struct nbd_go_request go;
	const uint8_t *p;
	bool want_name = false;
	uint16_t i;

	p = peer_read(c, len);
	if (!p)
		return -1;
	if (nbd_decode_go(p, len, &go) < 0)
		return neg_reply(c, opt, NBD_REP_ERR_INVALID);
	if (go.namelen && !export_name_is(e, go.name, go.namelen)) {
		shim_info("%s: %s: no export \"%.*s\"", c->peer,
			  nbd_opt_name(opt), (int)go.namelen, go.name);
		return neg_reply(c, opt, NBD_REP_ERR_UNKNOWN);
	}
	for (i = 0; i < go.ninfo; i++)
		if (get_be16(go.info + 2 * i) == NBD_INFO_NAME)
			want_name = true;
	if (neg_reply_info_export(c, opt, e->size,
				  STD_TFLAGS | e->extra_tflags) ||
	    neg_reply_info_block_size(c, opt, e->min_block, e->pref_block,
				     e->max_block) ||
	    (want_name && neg_reply_info_text(c, opt, NBD_INFO_NAME, e->name)) ||
	    neg_reply(c, opt, NBD_REP_ACK))
		return -1;
	return opt == NBD_OPT_GO ? 1 : 0;
}

static int std_negotiate(struct peer *c)
{
	uint32_t cflags, opt, len;
	int ret;

	if (neg_greeting(c, STD_HFLAGS) || neg_client_flags(c, &cflags))
		return -1;
	if (cflags & ~STD_CFLAGS) {
		shim_info("%s: unknown client flags 0x%x; closing", c->peer,
			  cflags);
		return -1;
	}
	c->no_zeroes = cflags & NBD_FLAG_C_NO_ZEROES;
	for (;;) {
		if (neg_option(c, &opt, &len))
			return -1;
		if (len > STD_MAX_OPTION) {
			shim_info("%s: option of %u bytes; closing", c->peer,
				  len);
			return -1;
		}
		switch (opt) {
		case NBD_OPT_EXPORT_NAME:
			return std_export_name(c, len);
		case NBD_OPT_INFO:
		case NBD_OPT_GO:
			ret = std_info_go(c, opt, len);
			if (ret)
				return ret < 0 ? -1 : 0;
			break;
		case NBD_OPT_STRUCTURED_REPLY:
			if (len) {
				ret = peer_skip(c, len) ||
				      neg_reply(c, opt, NBD_REP_ERR_INVALID);
			} else {
				c->structured = true;
				ret = neg_reply(c, opt, NBD_REP_ACK);
			}
			if (ret)
				return -1;
			break;
		case NBD_OPT_LIST:
			if (len)
				ret = peer_skip(c, len) ||
				      neg_reply(c, opt, NBD_REP_ERR_INVALID);
			else
				ret = neg_reply_server(c, opt, c->exp->name) ||
				      neg_reply(c, opt, NBD_REP_ACK);
			if (ret)
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

static int std_check(struct peer *c, const struct nbd_request *req)
{
	const struct export *e = c->exp;

	if (req->flags & ~STD_CMD_FLAGS)
		return NBD_EINVAL;
	switch (req->type) {
	case NBD_CMD_WRITE:
	case NBD_CMD_TRIM:
	case NBD_CMD_WRITE_ZEROES:
		if (e->st->read_only)
			return NBD_EPERM;
		/* fall through */
	case NBD_CMD_READ:
		if (!req->length || req->length > e->max_block)
			return NBD_EINVAL;
		if (req->offset > e->size ||
		    req->length > e->size - req->offset)
			return req->type == NBD_CMD_READ ? NBD_EINVAL :
							    NBD_ENOSPC;
		return 0;
	case NBD_CMD_FLUSH:
	case NBD_CMD_DISC:
		return 0;
	default:
		return NBD_EINVAL;
	}
}

static int std_request(struct peer *c, const struct nbd_request *req,
		       const uint8_t *payload)
{
	struct store *st = c->exp->st;
	int ret = 0;

	switch (req->type) {
	case NBD_CMD_READ:
		if (reply_read(c, req, st, &ret))
			return REQ_CLOSE;
		if (!ret)
			return REQ_NEXT;
		break;
	case NBD_CMD_WRITE:
		if (reply_fence(c))
			return REQ_CLOSE;
		ret = store_pwrite(st, payload, req->length, req->offset);
		break;
	case NBD_CMD_WRITE_ZEROES:
		if (reply_fence(c))
			return REQ_CLOSE;
		ret = store_zero(st, req->length, req->offset);
		break;
	case NBD_CMD_TRIM:
		if (reply_fence(c))
			return REQ_CLOSE;
		ret = store_trim(st, req->length, req->offset);
		break;
	case NBD_CMD_FLUSH:
		ret = store_flush(st);
		break;
	case NBD_CMD_DISC:
		store_flush(st);
		return REQ_DISC;
	}
	if (!ret && (req->flags & NBD_CMD_FLAG_FUA))
		ret = store_flush(st);
	if (ret) {
		shim_info("%s: %s offset %llu length %u: %s", c->peer,
			  nbd_cmd_name(req->type),
			  (unsigned long long)req->offset, req->length,
			  strerror(-ret));
		ret = reply_error(c, req, nbd_errno_to_error(-ret),
				  strerror(-ret));
	} else {
		ret = reply_simple(c, req->cookie, 0);
	}
	return ret ? REQ_CLOSE : REQ_NEXT;
}

const struct profile profile_standard = {
	.name = "standard",
	.default_export = "",
	.default_block_size = 4096,
	.max_payload = 32u << 20,
	.default_poll_us = 0,
	.pipelined = true,
	.negotiate = std_negotiate,
	.check = std_check,
	.request = std_request,
};
