// SPDX-License-Identifier: GPL-2.0-only
/*
 * NBD client handshake state machine (see nbd_handshake.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nbd_handshake.h"
#include "nbd_proto.h"

/* Defaults when the server gives no NBD_INFO_BLOCK_SIZE (proto.md). */
#define DEFAULT_MIN_BLOCK	1
#define DEFAULT_PREF_BLOCK	4096
#define DEFAULT_MAX_BLOCK	(32U << 20)

static void hs_fail(struct nbd_hs *hs, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hs->errmsg, sizeof(hs->errmsg), fmt, ap);
	va_end(ap);
	hs->state = NBD_HS_FAILED;
	hs->want = 0;
}

static const char *export_label(const struct nbd_hs *hs)
{
	return hs->cfg.export_name[0] ? hs->cfg.export_name : "(default)";
}

const char *nbd_hs_mode_name(enum nbd_hs_mode mode)
{
	switch (mode) {
	case NBD_HS_MODE_AUTO:
		return "auto";
	case NBD_HS_MODE_GO:
		return "go";
	case NBD_HS_MODE_EXPORT_NAME:
		return "export-name";
	}
	return "?";
}

static void queue_option(struct nbd_hs *hs, uint32_t opt, const uint8_t *data,
			 size_t len)
{
	hs->outlen += nbd_encode_option(hs->out + hs->outlen, opt, len);
	if (len)	/* data is NULL for an empty option: no memcpy(NULL) */
		memcpy(hs->out + hs->outlen, data, len);
	hs->outlen += len;
	hs->pending_opt = opt;
}

static void send_export_name(struct nbd_hs *hs)
{
	queue_option(hs, NBD_OPT_EXPORT_NAME,
		     (const uint8_t *)hs->cfg.export_name,
		     strlen(hs->cfg.export_name));
	hs->exp.via_export_name = true;
	hs->state = NBD_HS_EXPORT_REPLY;
	/* Only the size and flags matter; the zeroes are read and dropped. */
	hs->want = NBD_EXPORT_NAME_REPLY_LEN + (hs->no_zeroes ? 0 : NBD_ZEROES_LEN);
}

static void send_go(struct nbd_hs *hs)
{
	static const uint16_t info[] = { NBD_INFO_BLOCK_SIZE };
	uint8_t payload[4 + NBD_HS_NAME_MAX + 2 + 2 * 1];
	size_t len;

	len = nbd_encode_go(payload, hs->cfg.export_name,
			    strlen(hs->cfg.export_name), info, 1);
	queue_option(hs, NBD_OPT_GO, payload, len);
	hs->state = NBD_HS_OPTREP_HDR;
	hs->want = NBD_OPTION_REPLY_HDR_LEN;
}

/* First option after the client flags, depending on the current mode. */
static void send_first_option(struct nbd_hs *hs)
{
	bool fixed = hs->exp.hflags & NBD_FLAG_FIXED_NEWSTYLE;

	if (hs->mode == NBD_HS_MODE_EXPORT_NAME) {
		send_export_name(hs);
		return;
	}
	if (!fixed) {
		/* Only NBD_OPT_EXPORT_NAME is safe without fixed newstyle. */
		if (hs->mode == NBD_HS_MODE_GO) {
			hs_fail(hs, "server does not offer fixed newstyle negotiation, so it cannot take NBD_OPT_GO; use handshake=auto or handshake=export-name");
			return;
		}
		send_export_name(hs);
		return;
	}
	if (hs->cfg.structured_replies) {
		queue_option(hs, NBD_OPT_STRUCTURED_REPLY, NULL, 0);
		hs->state = NBD_HS_OPTREP_HDR;
		hs->want = NBD_OPTION_REPLY_HDR_LEN;
		return;
	}
	send_go(hs);
}

static void read_greeting_flags(struct nbd_hs *hs, uint16_t hflags)
{
	uint32_t cflags;
	uint8_t buf[4];

	hs->exp.hflags = hflags;
	/* Never set a client flag the server did not offer. */
	cflags = hflags & (NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
	hs->no_zeroes = cflags & NBD_FLAG_C_NO_ZEROES;
	put_be32(buf, cflags);
	memcpy(hs->out, buf, 4);
	hs->outlen = 4;
	send_first_option(hs);
}

static void hs_done(struct nbd_hs *hs)
{
	struct nbd_export *e = &hs->exp;

	if (!e->block_size_known) {
		e->min_block = DEFAULT_MIN_BLOCK;
		e->pref_block = DEFAULT_PREF_BLOCK;
		e->max_block = DEFAULT_MAX_BLOCK;
	}
	hs->state = NBD_HS_DONE;
	hs->want = 0;
}

static void go_error(struct nbd_hs *hs, uint32_t type, const uint8_t *msg,
		     size_t msglen)
{
	char text[256] = "";

	if (msglen) {
		if (msglen > sizeof(text) - 4)
			msglen = sizeof(text) - 4;
		text[0] = ':';
		text[1] = ' ';
		memcpy(text + 2, msg, msglen);
		text[2 + msglen] = 0;
	}

	switch (type) {
	case NBD_REP_ERR_UNSUP:
		if (hs->mode == NBD_HS_MODE_GO) {
			hs_fail(hs, "server does not support NBD_OPT_GO (NBD_REP_ERR_UNSUP); use handshake=auto or handshake=export-name");
			return;
		}
		/* An old conformant server: EXPORT_NAME on this connection. */
		send_export_name(hs);
		return;
	case NBD_REP_ERR_UNKNOWN:
		hs_fail(hs, "server has no export named '%s'%s; check the export name in uri",
			export_label(hs), text);
		return;
	case NBD_REP_ERR_TLS_REQD:
		hs_fail(hs, "server requires TLS for export '%s'%s; this engine does not speak TLS: configure the server without TLS",
			export_label(hs), text);
		return;
	default:
		hs_fail(hs, "server refused export '%s' with %s%s",
			export_label(hs), nbd_rep_name(type), text);
		return;
	}
}

static void handle_option_reply(struct nbd_hs *hs, const uint8_t *data,
				size_t len)
{
	uint32_t type = hs->rep_type;
	struct nbd_info info;
	int ret;

	if (hs->pending_opt == NBD_OPT_STRUCTURED_REPLY) {
		if (type == NBD_REP_ACK)
			hs->exp.structured_replies = true;
		else if (!(type & NBD_REP_FLAG_ERROR)) {
			hs_fail(hs, "server answered NBD_OPT_STRUCTURED_REPLY with %s (%#x), which is not allowed",
				nbd_rep_name(type), type);
			return;
		}
		/* Refused: simple replies it is. */
		send_go(hs);
		return;
	}

	/* NBD_OPT_GO */
	if (type == NBD_REP_INFO) {
		ret = nbd_decode_info(data, len, &info);
		if (ret < 0) {
			hs_fail(hs, "server sent a malformed NBD_REP_INFO (%s)",
				nbd_proto_strerror(ret));
			return;
		}
		if (info.type == NBD_INFO_EXPORT) {
			hs->exp.size = info.size;
			hs->exp.tflags = info.tflags;
		} else if (info.type == NBD_INFO_BLOCK_SIZE) {
			hs->exp.block_size_known = true;
			hs->exp.min_block = info.min_block;
			hs->exp.pref_block = info.pref_block;
			hs->exp.max_block = info.max_block;
		}
		hs->state = NBD_HS_OPTREP_HDR;
		hs->want = NBD_OPTION_REPLY_HDR_LEN;
		return;
	}
	if (type == NBD_REP_ACK) {
		if (!(hs->exp.tflags & NBD_FLAG_HAS_FLAGS)) {
			hs_fail(hs, "server acknowledged NBD_OPT_GO without sending NBD_INFO_EXPORT");
			return;
		}
		hs_done(hs);
		return;
	}
	if (type & NBD_REP_FLAG_ERROR) {
		go_error(hs, type, data, len);
		return;
	}
	hs_fail(hs, "server answered NBD_OPT_GO with unexpected %s (%#x)",
		nbd_rep_name(type), type);
}

void nbd_hs_start(struct nbd_hs *hs, const struct nbd_hs_config *cfg)
{
	memset(hs, 0, sizeof(*hs));
	hs->cfg = *cfg;
	hs->mode = cfg->mode;
	if (strlen(cfg->export_name) > NBD_HS_NAME_MAX) {
		hs_fail(hs, "export name is longer than %d bytes",
			NBD_HS_NAME_MAX);
		return;
	}
	hs->state = NBD_HS_MAGIC;
	hs->want = 16;
}

void nbd_hs_restart(struct nbd_hs *hs)
{
	struct nbd_hs_config cfg = hs->cfg;

	nbd_hs_start(hs, &cfg);
	hs->mode = NBD_HS_MODE_EXPORT_NAME;
	hs->exp.fell_back = true;
}

void nbd_hs_feed(struct nbd_hs *hs, const uint8_t *buf, size_t len)
{
	uint32_t opt, type, dlen;
	uint16_t hflags;
	bool oldstyle;
	int ret;

	if (len != hs->want) {
		hs_fail(hs, "internal error: fed %zu bytes, %zu expected", len,
			hs->want);
		return;
	}

	switch (hs->state) {
	case NBD_HS_MAGIC:
		/* NBDMAGIC, then IHAVEOPT (newstyle) or the oldstyle magic. */
		if (nbd_decode_greeting(buf, len, &oldstyle, &hflags) < 0) {
			hs_fail(hs, "not an NBD server: the greeting has the wrong magic (is the uri's host and port an NBD server?)");
			return;
		}
		if (oldstyle) {
			hs->exp.oldstyle = true;
			hs->state = NBD_HS_OLDSTYLE;
			hs->want = NBD_OLDSTYLE_TAIL_LEN;
		} else {
			hs->state = NBD_HS_HFLAGS;
			hs->want = 2;
		}
		return;

	case NBD_HS_HFLAGS:
		read_greeting_flags(hs, get_be16(buf));
		return;

	case NBD_HS_OLDSTYLE:
		nbd_decode_oldstyle_tail(buf, len, &hs->exp.size,
					 &hs->exp.tflags);
		hs->exp.via_export_name = true;
		hs_done(hs);
		return;

	case NBD_HS_OPTREP_HDR:
		ret = nbd_decode_option_reply(buf, len, &opt, &type, &dlen);
		if (ret < 0) {
			hs_fail(hs, "server sent a malformed reply to %s (bad magic)",
				nbd_opt_name(hs->pending_opt));
			return;
		}
		if (opt != hs->pending_opt) {
			hs_fail(hs, "server replied to %s while %s was pending",
				nbd_opt_name(opt), nbd_opt_name(hs->pending_opt));
			return;
		}
		if (dlen > NBD_HS_REPLY_MAX) {
			hs_fail(hs, "server sent a %u-byte reply to %s (limit %d)",
				dlen, nbd_opt_name(opt), NBD_HS_REPLY_MAX);
			return;
		}
		hs->rep_type = type;
		if (dlen) {
			hs->state = NBD_HS_OPTREP_DATA;
			hs->want = dlen;
			return;
		}
		handle_option_reply(hs, NULL, 0);
		return;

	case NBD_HS_OPTREP_DATA:
		handle_option_reply(hs, buf, len);
		return;

	case NBD_HS_EXPORT_REPLY:
		nbd_decode_export_name_reply(buf, len, &hs->exp.size,
					     &hs->exp.tflags);
		hs_done(hs);
		return;

	default:
		hs_fail(hs, "internal error: data fed in state %d", hs->state);
		return;
	}
}

void nbd_hs_closed(struct nbd_hs *hs)
{
	switch (hs->state) {
	case NBD_HS_OPTREP_HDR:
	case NBD_HS_OPTREP_DATA:
		/*
		 * torus closes on any option but EXPORT_NAME and LIST; 0-Disk
		 * resets after misparsing OPT_GO. Retry the old way.
		 */
		if (hs->mode == NBD_HS_MODE_AUTO) {
			hs->state = NBD_HS_RECONNECT;
			hs->want = 0;
			return;
		}
		hs_fail(hs, "server closed the connection in answer to %s; it may be a legacy server (torus, 0-Disk): use handshake=auto or handshake=export-name",
			nbd_opt_name(hs->pending_opt));
		return;
	case NBD_HS_EXPORT_REPLY:
		hs_fail(hs, "server closed the connection in answer to NBD_OPT_EXPORT_NAME '%s': the export does not exist, or it takes one connection only (as coreos-torus does) and is in use",
			export_label(hs));
		return;
	default:
		hs_fail(hs, "server closed the connection during the handshake, before the greeting completed");
		return;
	}
}
