/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One client connection: a receive buffer parsed in place, and a reply
 * queue (a staging buffer plus iovecs, some pointing straight into the
 * backend) sent with one sendmsg per batch. Buffers are allocated when the
 * connection opens and only grow when a request is larger than any before,
 * so the request path does not allocate.
 *
 * The rule that keeps batching safe: conn_need() sends whatever is queued
 * before it blocks waiting for input, so a client never waits on a reply
 * the server is sitting on.
 *
 * During the handshake (until transmit() starts) input is read exactly as
 * asked, never ahead: torus and 0-Disk read their options field by field
 * from the socket, so what they leave unread when they hang up is still
 * in the kernel, and the client sees a reset instead of a close.
 */
#ifndef SHIM_CONN_H
#define SHIM_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define CONN_IOV_MAX		1024
#define CONN_IN_SIZE		(1u << 20)
#define CONN_OUT_SIZE		(2u << 20)

struct server;
struct export;
struct profile;

struct conn {
	int fd;
	char peer[128];
	struct server *srv;
	struct export *exp;
	const struct profile *prof;
	/*
	 * The backend this connection uses, once it chose the export (zeroos:
	 * its own view, see backend_session()); the export's own otherwise.
	 */
	struct backend *be;

	uint8_t *in;			/* received, [in_pos, in_end) unparsed */
	size_t in_cap, in_pos, in_end;
	bool exact;			/* read only what is needed (handshake) */

	uint8_t *out;			/* staging for headers and copied data */
	size_t out_cap, out_used;
	struct iovec iov[CONN_IOV_MAX];
	int niov;
	bool out_refs_backend;		/* an iovec points into the backend */
	uint64_t due_ns;		/* shaping: send all no earlier */

	/*
	 * Shaping on a pipelined profile: where each reply ends in iov and
	 * when it is due, so that replies go out as they fall due while new
	 * requests keep being read.
	 */
	struct conn_mark {
		int iov_end;
		uint64_t due;
	} marks[CONN_IOV_MAX];
	int nmarks;
	int merge_floor;		/* iovecs below are closed replies */
	bool send_when_due;

	/* negotiated */
	bool no_zeroes;
	bool structured;
	bool holds_export;		/* torus: this connection has the lock */
};

/* How long to poll for input before sleeping (--poll-us). */
extern unsigned int conn_spin_us;
int conn_init(struct conn *c, int fd, struct server *srv);
void conn_free(struct conn *c);

/* Make n unparsed bytes available; -1 on EOF or error. */
int conn_need(struct conn *c, size_t n);

static inline size_t conn_avail(const struct conn *c)
{
	return c->in_end - c->in_pos;
}

static inline const uint8_t *conn_data(const struct conn *c)
{
	return c->in + c->in_pos;
}

static inline void conn_consume(struct conn *c, size_t n)
{
	c->in_pos += n;
}

/* Read exactly n bytes: a pointer valid until the next conn_need. */
const uint8_t *conn_read(struct conn *c, size_t n);
/* Discard n bytes of input. */
int conn_skip(struct conn *c, uint64_t n);

/*
 * Queue len bytes of reply in the staging buffer and return where to write
 * them; contiguous reservations share one iovec. NULL on a send error.
 */
uint8_t *conn_reserve(struct conn *c, size_t len);
/* Give back the last n bytes of the last reservation. */
void conn_unreserve(struct conn *c, size_t n);
/* Queue bytes that stay valid until the next conn_flush (no copy). */
int conn_queue_ref(struct conn *c, const void *p, size_t len);
/*
 * Shaping: the reply queued since the last mark is due at due. With
 * send_when_due, conn_need sends replies as they fall due instead of all
 * at once after the last is due.
 */
int conn_mark(struct conn *c, uint64_t due);
/* Send everything queued (after waiting for due_ns); -1 on error. */
int conn_flush(struct conn *c);
/*
 * Send what is queued, then make the coming close a TCP reset (SO_LINGER
 * 0), as when the real server hangs up on input it has not read. On a
 * Unix socket the peer sees ECONNRESET only if input is left unread.
 */
void conn_reset(struct conn *c);

#endif /* SHIM_CONN_H */
