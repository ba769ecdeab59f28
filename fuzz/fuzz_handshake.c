// SPDX-License-Identifier: GPL-2.0-only
/*
 * The client handshake machine (proto/nbd/nbd_handshake.h) driven as the
 * engine's connect loop drives it, by whatever a server sends.
 *
 * Input:
 *   byte 0     bits 0-1 mode (auto, go, export-name; 3 is auto again),
 *              bit 2 structured replies, bits 3-4 export name ("",
 *              "disk", 4096 bytes, 4097 bytes), bit 5 feed one byte too
 *              many once (the machine must fail, not read past it)
 *   bytes 1-2  where the first connection ends (big-endian): the server
 *              closes it there, and in auto mode the bytes after it are
 *              the second connection's (the RECONNECT path)
 *   bytes 3-6  seed of the read sizes
 *   the rest   the server's bytes
 *
 * Checked: everything the client sends is a well-formed option that its
 * mode allows, client flags are only ones the server offered, the machine
 * always asks for 1 to NBD_HS_REPLY_MAX bytes, a failure says why, and
 * what it learned is consistent.
 */
#include <string.h>

#include "fuzz.h"
#include "nbd_handshake.h"
#include "nbd_proto.h"

#define HDR_LEN		7

static char long_name[NBD_HS_NAME_MAX + 2];

struct client_view {
	const struct nbd_hs_config *cfg;
	bool greeted;			/* the client flags went out */
	bool reconnected;
	bool sent_go, sent_export_name;
};

/* One option request from the client: header, then exactly len bytes. */
static size_t check_option(struct client_view *v, const struct nbd_hs *hs,
			   const uint8_t *p, size_t len)
{
	const char *name = v->cfg->export_name;
	struct nbd_go_request go;
	uint32_t opt, dlen;
	bool fixed = hs->exp.hflags & NBD_FLAG_FIXED_NEWSTYLE;

	FUZZ_CHECK(nbd_decode_option(p, len, &opt, &dlen) ==
		   NBD_OPTION_HDR_LEN);
	FUZZ_CHECK(dlen <= len - NBD_OPTION_HDR_LEN);
	p += NBD_OPTION_HDR_LEN;

	switch (opt) {
	case NBD_OPT_EXPORT_NAME:
		FUZZ_CHECK(v->cfg->mode != NBD_HS_MODE_GO);
		FUZZ_CHECK(dlen == strlen(name) && !memcmp(p, name, dlen));
		v->sent_export_name = true;
		break;
	case NBD_OPT_GO:
		FUZZ_CHECK(v->cfg->mode != NBD_HS_MODE_EXPORT_NAME);
		FUZZ_CHECK(!v->reconnected && fixed);
		FUZZ_CHECK(nbd_decode_go(p, dlen, &go) == (int)dlen);
		FUZZ_CHECK(go.namelen == strlen(name) &&
			   !memcmp(go.name, name, go.namelen));
		v->sent_go = true;
		break;
	case NBD_OPT_STRUCTURED_REPLY:
		FUZZ_CHECK(v->cfg->structured_replies && fixed && !dlen);
		FUZZ_CHECK(v->cfg->mode != NBD_HS_MODE_EXPORT_NAME);
		break;
	default:
		FUZZ_CHECK(!"the client sent an option it never should");
	}
	return NBD_OPTION_HDR_LEN + dlen;
}

/* What the machine queued to send: checked, then "sent". */
static void check_out(struct client_view *v, struct nbd_hs *hs,
		      bool after_hflags)
{
	const uint8_t *p = hs->out;
	size_t len = hs->outlen;
	uint32_t cflags, offered;

	FUZZ_CHECK(len <= sizeof(hs->out));
	if (after_hflags && len) {
		FUZZ_CHECK(len >= 4);
		cflags = get_be32(p);
		offered = hs->exp.hflags & (NBD_FLAG_C_FIXED_NEWSTYLE |
					    NBD_FLAG_C_NO_ZEROES);
		FUZZ_CHECK(!(cflags & ~offered));
		v->greeted = true;
		p += 4;
		len -= 4;
	}
	while (len) {
		size_t n = check_option(v, hs, p, len);

		p += n;
		len -= n;
	}
	hs->outlen = 0;
}

static void check_end(const struct client_view *v, const struct nbd_hs *hs)
{
	const struct nbd_export *e = &hs->exp;

	if (hs->state == NBD_HS_FAILED) {
		FUZZ_CHECK(hs->errmsg[0]);
		FUZZ_CHECK(strnlen(hs->errmsg, sizeof(hs->errmsg)) <
			   sizeof(hs->errmsg));
		return;
	}
	FUZZ_CHECK(hs->state == NBD_HS_DONE);
	FUZZ_CHECK(!hs->want);
	if (!e->block_size_known)
		FUZZ_CHECK(e->min_block == 1 && e->pref_block == 4096 &&
			   e->max_block == 32u << 20);
	else
		FUZZ_CHECK(e->min_block && e->min_block <= e->pref_block &&
			   e->pref_block <= e->max_block);
	FUZZ_CHECK(!e->structured_replies || v->cfg->structured_replies);
	FUZZ_CHECK(e->fell_back == v->reconnected);
	if (e->oldstyle)
		return;
	FUZZ_CHECK(v->greeted);
	/* Done through the option it sent last. */
	FUZZ_CHECK(e->via_export_name ? v->sent_export_name : v->sent_go);
	if (!e->via_export_name)
		FUZZ_CHECK(e->tflags & NBD_FLAG_HAS_FLAGS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum nbd_hs_mode modes[] = {
		NBD_HS_MODE_AUTO, NBD_HS_MODE_GO, NBD_HS_MODE_EXPORT_NAME,
		NBD_HS_MODE_AUTO,
	};
	const char *names[] = { "", "disk", long_name + 1, long_name };
	struct nbd_hs_config cfg;
	struct client_view v = { .cfg = &cfg };
	struct fuzz_rng rng;
	struct nbd_hs *hs;
	size_t pos, conn_end, have, n;
	bool misfeed, after_hflags = false;
	uint8_t *buf;

	if (size < HDR_LEN)
		return 0;
	memset(long_name, 'x', sizeof(long_name) - 1);
	cfg.mode = modes[data[0] & 3];
	cfg.structured_replies = data[0] & 4;
	cfg.export_name = names[(data[0] >> 3) & 3];
	misfeed = data[0] & 0x20;
	conn_end = HDR_LEN + get_be16(data + 1);
	fuzz_rng_init(&rng, get_be32(data + 3));
	pos = HDR_LEN;
	if (conn_end > size)
		conn_end = size;

	hs = malloc(sizeof(*hs));
	nbd_hs_start(hs, &cfg);
	for (;;) {
		check_out(&v, hs, after_hflags);
		if (hs->state == NBD_HS_DONE || hs->state == NBD_HS_FAILED)
			break;
		if (hs->state == NBD_HS_RECONNECT) {
			FUZZ_CHECK(cfg.mode == NBD_HS_MODE_AUTO);
			FUZZ_CHECK(!v.reconnected);
			FUZZ_CHECK(!hs->outlen);
			nbd_hs_restart(hs);
			v.reconnected = true;
			v.greeted = false;
			after_hflags = false;
			conn_end = size;
			continue;
		}
		FUZZ_CHECK(hs->want >= 1 && hs->want <= NBD_HS_REPLY_MAX);

		/* A buffer of exactly what is fed: ASan sees any overread. */
		n = hs->want + (misfeed ? 1 : 0);
		buf = malloc(n);
		have = 0;
		while (have < n && pos < conn_end) {
			size_t k = fuzz_split(&rng, conn_end - pos);

			if (k > n - have)
				k = n - have;
			memcpy(buf + have, data + pos, k);
			pos += k;
			have += k;
		}
		after_hflags = hs->state == NBD_HS_HFLAGS;
		if (have < n) {
			/* The server closed (or reset) the connection. */
			nbd_hs_closed(hs);
			pos = conn_end;
		} else {
			nbd_hs_feed(hs, buf, n);
			if (misfeed) {
				FUZZ_CHECK(hs->state == NBD_HS_FAILED);
				misfeed = false;
			}
		}
		free(buf);
	}
	check_end(&v, hs);
	free(hs);
	return 0;
}
