// SPDX-License-Identifier: GPL-2.0-only
/*
 * Transmission replies; see reply.h.
 */
#include <string.h>

#include "store_ops.h"
#include "peer.h"
#include "nbd_proto.h"
#include "reply.h"

int reply_simple(struct peer *c, uint64_t cookie, uint32_t error)
{
	uint8_t *p = peer_reserve(c, NBD_SIMPLE_REPLY_LEN);

	if (!p)
		return -1;
	nbd_encode_simple_reply(p, error, cookie);
	return 0;
}

int reply_error(struct peer *c, const struct nbd_request *req,
		uint32_t error, const char *msg)
{
	size_t n = strlen(msg);
	uint8_t *p;

	if (!c->structured || req->type != NBD_CMD_READ)
		return reply_simple(c, req->cookie, error);
	p = peer_reserve(c, NBD_STRUCTURED_REPLY_LEN + NBD_CHUNK_ERROR_LEN + n);
	if (!p)
		return -1;
	nbd_encode_chunk_error(p, NBD_REPLY_FLAG_DONE, req->cookie, error,
			       msg, n);
	return 0;
}

static size_t read_header(const struct peer *c, uint8_t *p,
			  const struct nbd_request *req)
{
	if (c->structured)
		return nbd_encode_chunk_offset_data(p, NBD_REPLY_FLAG_DONE,
						    req->cookie, req->offset,
						    req->length);
	return nbd_encode_simple_reply(p, NBD_SUCCESS, req->cookie);
}

int reply_read(struct peer *c, const struct nbd_request *req,
	       struct store *st, int *err)
{
	size_t hlen = c->structured ? NBD_CHUNK_OFFSET_DATA_HDR_LEN :
				      NBD_SIMPLE_REPLY_LEN;
	const void *data;
	uint8_t *p;

	*err = 0;
	data = store_peek(st, req->length, req->offset);
	if (data) {
		p = peer_reserve(c, hlen);
		if (!p)
			return -1;
		read_header(c, p, req);
		return peer_queue_ref(c, data, req->length);
	}
	p = peer_reserve(c, hlen + req->length);
	if (!p)
		return -1;
	*err = store_pread(st, p + hlen, req->length, req->offset);
	if (*err) {
		peer_unreserve(c, hlen + req->length);
		return 0;
	}
	read_header(c, p, req);
	return 0;
}

int reply_fence(struct peer *c)
{
	return c->out_refs_store ? peer_flush(c) : 0;
}
