// SPDX-License-Identifier: GPL-2.0-only
/*
 * The transmission phase, common to every profile: take each request from
 * the receive buffer, let the profile check it, read its payload, shape it,
 * let the profile execute it. A pipelined profile's replies pile up and go
 * out in one send when the receive buffer runs dry (peer_need); a serial
 * profile sends each reply before it looks at the next request.
 */
#include "config.h"
#include "peer.h"
#include "log.h"
#include "profile.h"
#include "reply.h"
#include "server.h"
#include "shape.h"
#include "stamps.h"
#include "torus_util.h"

/* Bytes a request moves over the link, for bandwidth shaping. */
static uint64_t request_bytes(const struct nbd_request *req)
{
	if (req->type == NBD_CMD_READ || req->type == NBD_CMD_WRITE)
		return req->length;
	return 0;
}

int transmit(struct peer *c)
{
	const struct profile *prof = c->prof;
	struct shaper *sh = &c->srv->shaper;
	bool shaping = shaper_active(sh) && !c->srv->cfg->shape_storage;
	const uint8_t *payload;
	struct nbd_request req;
	uint64_t due = 0;
	uint32_t plen;
	int ret;

	c->send_when_due = shaping && prof->pipelined;
	c->exact = false;	/* requests are read in batches */
	for (;;) {
		if (peer_need(c, NBD_REQUEST_LEN))
			return 0;
		ret = nbd_decode_request(peer_data(c), peer_avail(c), &req);
		if (ret < 0) {
			shim_info("%s: bad request magic; closing", c->peer);
			return -1;
		}
		peer_consume(c, ret);
		shim_debug("%s: %s offset %llu length %u flags 0x%x", c->peer,
			   nbd_cmd_name(req.type),
			   (unsigned long long)req.offset, req.length,
			   req.flags);

		plen = req.type == NBD_CMD_WRITE ? req.length : 0;
		ret = prof->check(c, &req);
		if (ret < 0)
			return -1;
		if (plen > prof->max_payload) {
			shim_info("%s: %s of %u bytes is larger than %u; closing",
				  c->peer, nbd_cmd_name(req.type), plen,
				  prof->max_payload);
			return -1;
		}
		if (ret > 0) {
			if (peer_skip(c, plen))
				return -1;
			if (c->tl)
				stamps_begin(c, &req, false);
			if (reply_error(c, &req, ret, "invalid request"))
				return -1;
			if (c->tl)
				stamps_end(c, true);
			continue;
		}
		if (peer_need(c, plen))
			return -1;
		payload = peer_data(c);
		peer_consume(c, plen);

		if (shaping) {
			due = shaper_due(sh, now_ns(), request_bytes(&req));
			c->due_ns = max_u64(c->due_ns, due);
		}
		if (c->tl)
			stamps_begin(c, &req, true);
		ret = prof->request(c, &req, payload);
		if (c->tl)
			stamps_end(c, ret == REQ_NEXT);
		if (ret != REQ_NEXT) {
			peer_flush(c);
			return ret == REQ_DISC ? 0 : -1;
		}
		if (c->send_when_due && peer_mark(c, due))
			return -1;
		if (!prof->pipelined && peer_flush(c))
			return -1;
	}
}
