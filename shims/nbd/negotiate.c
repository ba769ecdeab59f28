// SPDX-License-Identifier: GPL-2.0-only
/*
 * Server handshake messages, encoded by proto/ and queued on the
 * connection; see handshake.h.
 */
#include <string.h>

#include "peer.h"
#include "negotiate.h"
#include "log.h"
#include "nbd_proto.h"

int neg_greeting(struct peer *c, uint16_t hflags)
{
	uint8_t *p = peer_reserve(c, NBD_GREETING_LEN);

	if (!p)
		return -1;
	nbd_encode_greeting(p, hflags);
	return 0;
}

int neg_client_flags(struct peer *c, uint32_t *cflags)
{
	const uint8_t *p = peer_read(c, 4);

	if (!p)
		return -1;
	*cflags = get_be32(p);
	return 0;
}

int neg_option(struct peer *c, uint32_t *opt, uint32_t *len)
{
	int ret;

	if (peer_need(c, NBD_OPTION_HDR_LEN))
		return -1;
	ret = nbd_decode_option(peer_data(c), peer_avail(c), opt, len);
	if (ret < 0) {
		shim_info("%s: bad option magic; closing", c->peer);
		return -1;
	}
	peer_consume(c, ret);
	shim_debug("%s: option %s (%u), %u bytes", c->peer, nbd_opt_name(*opt),
		   *opt, *len);
	return 0;
}

static uint8_t *neg_reserve(struct peer *c, uint32_t opt, uint32_t type,
			   uint32_t len)
{
	uint8_t *p = peer_reserve(c, NBD_OPTION_REPLY_HDR_LEN + len);

	if (!p)
		return NULL;
	return p + nbd_encode_option_reply(p, opt, type, len);
}

int neg_reply(struct peer *c, uint32_t opt, uint32_t type)
{
	return neg_reserve(c, opt, type, 0) ? 0 : -1;
}

int neg_abort(struct peer *c, uint32_t opt)
{
	neg_reply(c, opt, NBD_REP_ACK);
	peer_flush(c);
	return -1;
}

int neg_refuse(struct peer *c, uint32_t opt, uint32_t len)
{
	return peer_skip(c, len) || neg_reply(c, opt, NBD_REP_ERR_UNSUP) ? -1 : 0;
}

int neg_reply_server(struct peer *c, uint32_t opt, const char *name)
{
	size_t n = strlen(name);
	uint8_t *p = neg_reserve(c, opt, NBD_REP_SERVER,
				NBD_REP_SERVER_LEN + n);

	if (!p)
		return -1;
	nbd_encode_rep_server(p, name, n);
	return 0;
}

int neg_reply_info_export(struct peer *c, uint32_t opt, uint64_t size,
			 uint16_t tflags)
{
	uint8_t *p = neg_reserve(c, opt, NBD_REP_INFO, NBD_INFO_EXPORT_LEN);

	if (!p)
		return -1;
	nbd_encode_info_export(p, size, tflags);
	return 0;
}

int neg_reply_info_block_size(struct peer *c, uint32_t opt, uint32_t min,
			     uint32_t pref, uint32_t max)
{
	uint8_t *p = neg_reserve(c, opt, NBD_REP_INFO, NBD_INFO_BLOCK_SIZE_LEN);

	if (!p)
		return -1;
	nbd_encode_info_block_size(p, min, pref, max);
	return 0;
}

int neg_reply_info_text(struct peer *c, uint32_t opt, uint16_t type,
		       const char *text)
{
	size_t n = strlen(text);
	uint8_t *p = neg_reserve(c, opt, NBD_REP_INFO, NBD_INFO_TEXT_LEN + n);

	if (!p)
		return -1;
	nbd_encode_info_text(p, type, text, n);
	return 0;
}

int neg_export_name_reply(struct peer *c, uint64_t size, uint16_t tflags,
			 bool no_zeroes)
{
	uint8_t *p = peer_reserve(c, NBD_EXPORT_NAME_REPLY_LEN +
				  (no_zeroes ? 0 : NBD_ZEROES_LEN));

	if (!p)
		return -1;
	nbd_encode_export_name_reply(p, size, tflags, no_zeroes);
	return 0;
}
