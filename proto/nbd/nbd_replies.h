/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The client's side of the transmission phase: a stream of reply bytes in,
 * finished requests out. No I/O: the owner receives the bytes and feeds
 * them here, so a unit test or a fuzzer can drive it from a buffer.
 *
 * Everything a server sends is checked before it is used: a reply must
 * name an outstanding request, a chunk must lie inside its request (the
 * arithmetic cannot wrap), chunks of one read must not overlap, and a
 * structured read completes successfully only when every byte of it was
 * sent as data or as a hole.
 *
 * A read payload is copied to the request's buffer as far as it has
 * arrived; the owner may then receive the rest in place
 * (nbd_rx_payload_dst() and nbd_rx_payload_received()).
 */
#ifndef TORUS_NBD_REPLIES_H
#define TORUS_NBD_REPLIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nbd_proto.h"

/* Disjoint runs of a structured read that may arrive before it is whole. */
#define NBD_RX_MAX_EXTENTS	16

struct nbd_rx_extent {
	uint32_t start, end;		/* [start, end) from the request start */
};

/* One outstanding request, as the parser sees it; lives with the owner. */
struct nbd_rx_req {
	uint8_t *buf;			/* READ: where the data goes */
	uint64_t offset;
	uint32_t len;
	uint16_t type;			/* NBD_CMD_* */
	/* Parser state; nbd_rx_req_init() resets it. */
	int error;			/* first error, a positive errno */
	unsigned int nextents;
	struct nbd_rx_extent ext[NBD_RX_MAX_EXTENTS];
};

struct nbd_rx_ops {
	/* The outstanding request with this cookie, or NULL. */
	struct nbd_rx_req *(*lookup)(void *owner, uint64_t cookie);
	/* The request is finished: error 0 or a positive errno. */
	void (*complete)(void *owner, struct nbd_rx_req *req, int error);
	/*
	 * A request failed because of what the server sent, but the stream
	 * is intact (e.g. a structured read that left bytes out); msg says
	 * what, for the owner to report. Optional.
	 */
	void (*notice)(void *owner, const char *msg);
};

enum nbd_rx_state {
	NBD_RX_HEADER,		/* waiting for a reply header */
	NBD_RX_PAYLOAD,		/* read data going to req->buf */
	NBD_RX_DATA_OFFSET,	/* waiting for OFFSET_DATA's u64 offset */
	NBD_RX_CHUNK_BODY,	/* waiting for a whole non-data chunk body */
};

struct nbd_rx {
	const struct nbd_rx_ops *ops;
	void *owner;
	bool structured;		/* structured replies were negotiated */
	uint32_t max_body;		/* largest non-data chunk body buffered */

	enum nbd_rx_state state;
	struct nbd_rx_req *req;		/* the request being answered */
	struct nbd_reply rep;		/* its current reply header */
	uint8_t *dst;			/* NBD_RX_PAYLOAD: next byte goes here */
	uint32_t left;			/* NBD_RX_PAYLOAD: bytes still due */
	char errmsg[256];		/* after a violation: what it was */
};

/*
 * max_body is the largest chunk body the owner can present whole in one
 * nbd_rx_feed() call (its receive buffer, less room for a header).
 */
void nbd_rx_init(struct nbd_rx *rx, const struct nbd_rx_ops *ops, void *owner,
		 bool structured, uint32_t max_body);

/* Before a request is sent: clears its parser state. */
static inline void nbd_rx_req_init(struct nbd_rx_req *req)
{
	req->error = 0;
	req->nextents = 0;
}

/*
 * Parses buf[0..len). Returns the bytes consumed: the rest is the start of
 * a message to be presented again with more bytes behind it. Returns -1
 * after a protocol violation (errmsg says what); the stream cannot be
 * trusted after that, and the owner fails what is outstanding.
 */
long nbd_rx_feed(struct nbd_rx *rx, const uint8_t *buf, size_t len);

/*
 * While read data is due: its destination and the number of bytes due
 * there (0 when no payload is due). The owner may receive up to that many
 * bytes straight into dst and then call nbd_rx_payload_received().
 */
static inline uint32_t nbd_rx_payload_dst(const struct nbd_rx *rx,
					  uint8_t **dst)
{
	if (rx->state != NBD_RX_PAYLOAD)
		return 0;
	*dst = rx->dst;
	return rx->left;
}

/* n (at most what nbd_rx_payload_dst() said) bytes arrived in place. */
void nbd_rx_payload_received(struct nbd_rx *rx, uint32_t n);

#endif /* TORUS_NBD_REPLIES_H */
