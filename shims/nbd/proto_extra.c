// SPDX-License-Identifier: GPL-2.0-only
/*
 * Server-side NBD encoders missing from proto/; see proto_extra.h.
 */
#include <string.h>

#include "proto_extra.h"

size_t nbd_encode_rep_server(uint8_t *buf, const char *name, size_t namelen)
{
	nbd_put32(buf, namelen);
	memcpy(buf + 4, name, namelen);
	return 4 + namelen;
}

size_t nbd_encode_info_text(uint8_t *buf, uint16_t type, const char *text,
			    size_t len)
{
	nbd_put16(buf, type);
	memcpy(buf + 2, text, len);
	return 2 + len;
}

size_t nbd_encode_chunk_offset_data(uint8_t *buf, uint16_t flags,
				    uint64_t cookie, uint64_t offset,
				    uint32_t datalen)
{
	size_t n;

	n = nbd_encode_structured_reply(buf, flags, NBD_REPLY_TYPE_OFFSET_DATA,
					cookie, NBD_CHUNK_OFFSET_LEN + datalen);
	nbd_put64(buf + n, offset);
	return n + NBD_CHUNK_OFFSET_LEN;
}

size_t nbd_encode_chunk_error(uint8_t *buf, uint16_t flags, uint64_t cookie,
			      uint32_t error, const char *msg,
			      uint16_t msglen)
{
	size_t n;

	n = nbd_encode_structured_reply(buf, flags, NBD_REPLY_TYPE_ERROR,
					cookie, NBD_CHUNK_ERROR_LEN + msglen);
	nbd_put32(buf + n, error);
	nbd_put16(buf + n + 4, msglen);
	memcpy(buf + n + NBD_CHUNK_ERROR_LEN, msg, msglen);
	return n + NBD_CHUNK_ERROR_LEN + msglen;
}
