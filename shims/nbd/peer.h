/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A peer: one client connection as the server sees it (the client side
 * calls its sockets connections; "peer" keeps the two apart): a receive buffer parsed in place, and a reply
 * queue (a staging buffer plus iovecs, some pointing straight into the
 * store) sent with one sendmsg per batch. Buffers are allocated when the
 * connection opens and only grow when a request is larger than any before,
 * so the request path does not allocate.
 *
 * The rule that keeps batching safe: peer_need() sends whatever is queued
 * before it blocks waiting for input, so a client never waits on a reply
 * the server is sitting on.
 *
 * During the handshake (until transmit() starts) input is read exactly as
 * asked, never ahead: coreos-torus and 0-Disk read their options field by field
 * from the socket, so what they leave unread when they hang up is still
 * in the kernel, and the client sees a reset instead of a close.
 */
#ifndef SHIM_PEER_H
#define SHIM_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "timeline_rec.h"

#define CONN_IOV_MAX		1024
#define CONN_IN_SIZE		(1u << 20)
#define CONN_OUT_SIZE		(2u << 20)

struct server;
struct export;
struct profile;

/* A timeline record whose reply waits in iov[0, iov_end) (stamps.c). */
struct peer_pend {
	struct tl_rec rec;
	int iov_end;
};

struct peer {
	int fd;
	char peer[128];
	unsigned long id;		/* the N of "connection N" */
	struct server *srv;
	struct export *exp;
	const struct profile *prof;
	/*
	 * The store this connection uses, once it chose the export (zeroos:
	 * its own view, see store_session()); the export's own otherwise.
	 */
	struct store *st;

	uint8_t *in;			/* received, [in_pos, in_end) unparsed */
	size_t in_cap, in_pos, in_end;
	bool exact;			/* read only what is needed (handshake) */

	uint8_t *out;			/* staging for headers and copied data */
	size_t out_cap, out_used;
	struct iovec iov[CONN_IOV_MAX];
	int niov;
	bool out_refs_store;		/* an iovec points into the store */
	uint64_t due_ns;		/* shaping: send all no earlier */

	/*
	 * Shaping on a pipelined profile: where each reply ends in iov and
	 * when it is due, so that replies go out as they fall due while new
	 * requests keep being read.
	 */
	struct peer_mark {
		int iov_end;
		uint64_t due;
	} marks[CONN_IOV_MAX];
	int nmarks;
	int merge_floor;		/* iovecs below are closed replies */
	bool send_when_due;

	/* negotiated */
	bool no_zeroes;
	bool structured;
	bool holds_export;		/* coreos: this connection has the lock */

	/* --timeline (stamps.c); tl NULL: off, and nothing below is used */
	struct tl_writer *tl;
	uint64_t recv_ns;		/* when the last receive returned */
	struct tl_rec tl_cur;		/* the request being executed */
	bool tl_busy;
	struct peer_pend *tl_pend;	/* queued replies' records, in order */
	unsigned int tl_npend;
	uint64_t tl_unsent;		/* written before their reply went */
};

/* How long to poll for input before sleeping (--poll-us). */
extern unsigned int peer_spin_us;
int peer_init(struct peer *c, int fd, struct server *srv);
void peer_free(struct peer *c);

/* Make n unparsed bytes available; -1 on EOF or error. */
int peer_need(struct peer *c, size_t n);

static inline size_t peer_avail(const struct peer *c)
{
	return c->in_end - c->in_pos;
}

static inline const uint8_t *peer_data(const struct peer *c)
{
	return c->in + c->in_pos;
}

static inline void peer_consume(struct peer *c, size_t n)
{
	c->in_pos += n;
}

/* Read exactly n bytes: a pointer valid until the next peer_need. */
const uint8_t *peer_read(struct peer *c, size_t n);
/* Discard n bytes of input. */
int peer_skip(struct peer *c, uint64_t n);

/*
 * Queue len bytes of reply in the staging buffer and return where to write
 * them; contiguous reservations share one iovec. NULL on a send error.
 */
uint8_t *peer_reserve(struct peer *c, size_t len);
/* Give back the last n bytes of the last reservation. */
void peer_unreserve(struct peer *c, size_t n);
/* Queue bytes that stay valid until the next peer_flush (no copy). */
int peer_queue_ref(struct peer *c, const void *p, size_t len);
/*
 * Shaping: the reply queued since the last mark is due at due. With
 * send_when_due, peer_need sends replies as they fall due instead of all
 * at once after the last is due.
 */
int peer_mark(struct peer *c, uint64_t due);
/* Send everything queued (after waiting for due_ns); -1 on error. */
int peer_flush(struct peer *c);
/*
 * Send what is queued, then make the coming close a TCP reset (SO_LINGER
 * 0), as when the real server hangs up on input it has not read. On a
 * Unix socket the peer sees ECONNRESET only if input is left unread.
 */
void peer_reset(struct peer *c);

#endif /* SHIM_PEER_H */
