/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The NBD client's state, shared by its files, each using only those
 * listed after it: nbd_client.c makes and frees it; nbd_reap.c receives,
 * parses replies and waits; nbd_send.c queues and sends (and holds
 * requests for a batch); nbd_complete.c hands a finished request on, or
 * fails a lost connection's; nbd_uring.c is the io_uring both sides
 * prepare their SQEs on, which hands each completion to the op in its
 * user data (see nbd_client.h).
 *
 * Each connection has at most one SENDMSG and one RECVMSG in flight. A send
 * carries every request queued on that connection since the last one: the
 * headers are encoded back to back so a run of reads costs one iovec, and
 * write payloads are sent from the caller's buffer. Replies are received
 * into a staging buffer and parsed there; when a read payload is only
 * partly in, the next receive targets the caller's buffer directly, with
 * the staging buffer behind it to catch the replies that follow. A request
 * is handed to the caller's completer the moment its reply is parsed.
 */
#ifndef TORUS_NBD_CLIENT_INT_H
#define TORUS_NBD_CLIENT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "nbd_client.h"
#include "nbd_replies.h"
#include "nbd_uring.h"

#define RBUF_SIZE	(256 * 1024)
/*
 * Where in a cache line a receive into staging starts. The kernel's copy
 * into it uses "rep movsb" too (see copy_payload()), from socket buffers
 * that start on a line: the first reply of a receive then puts its payload
 * 32 bytes into a line, clear of the slow offsets 8 to 31. The part of a
 * reply left over from the last receive is moved to end there.
 */
#define RBUF_SKEW	16
#define MAX_SEND_IOV	1024		/* UIO_MAXIOV */
/* Non-data structured chunks are parsed whole from the staging buffer. */
#define MAX_CHUNK_BODY	(RBUF_SIZE / 2)
/*
 * While a read of BIG_READ bytes or more is in flight on a connection, a
 * receive asks for at most RECV_WINDOW bytes beyond the payload it is
 * filling in place: enough for a run of write replies and the next reply's
 * header. Most of a large payload then arrives in fio's page-aligned
 * buffer at the offset it has in the socket buffer's pages, where the
 * kernel's copy is fast, instead of at whatever offset the stream gives it
 * in staging (see RBUF_SKEW) and a second copy: it saves CPU per I/O at
 * 64 KiB (docs/performance-history.md). Small reads keep the whole staging buffer,
 * where many replies come in with one receive.
 */
#define BIG_READ	(32 * 1024)
#define RECV_WINDOW	4096

struct nbd_slot {
	struct nbd_rx_req rq;	/* what the reply parser checks against */
	void *user;
	struct nbd_conn *conn;
	uint64_t sent_ns;	/* when its send started (timeouts) */
	uint64_t t[3];		/* timeline: sent, header, payload */
	uint32_t gen;		/* cookie's upper half: catches stale replies */
	uint16_t flags;
	bool busy;
	bool sent;
	bool big;		/* a read of BIG_READ or more */
};

/*
 * Timeline: where a request's last byte lies in the send in flight, so
 * that each submission of the send stamps the requests not yet all gone.
 */
struct nbd_send_mark {
	struct nbd_slot *slot;
	uint32_t gen;		/* the slot's use: a reused slot is not stamped */
	uint64_t end;		/* bytes of the message up to its last byte */
};

struct nbd_conn {
	struct nbd_client *client;
	unsigned int idx;	/* registered file index */
	int fd;
	bool dead;

	/* Queued, not yet handed to a send. */
	struct nbd_slot **pending;
	unsigned int npending;

	/* The send in flight. */
	struct nbd_uring_op send_op;	/* its completion: nbdc_send_done() */
	bool sending;
	uint8_t *hdrbuf;	/* depth * NBD_REQUEST_LEN */
	struct iovec *iov;	/* 2 * depth */
	unsigned int iov_cnt, iov_pos;
	struct msghdr msg;
	/* Timeline only: the send's requests, and bytes gone so far. */
	struct nbd_send_mark *marks;	/* depth */
	unsigned int nr_marks, nr_marked;
	uint64_t send_done;
	bool send_prepped;		/* a send is in the SQ, not submitted */

	/* Sent (or being sent), reply not complete yet. */
	unsigned int inflight;
	unsigned int big_reads;	/* of them, reads of BIG_READ or more */

	/* Receive side: replies are parsed by proto/nbd/nbd_replies.c. */
	struct nbd_uring_op recv_op;	/* its completion: nbdc_recv_done() */
	bool receiving;
	uint8_t *rbuf_mem;
	uint8_t *rbuf;		/* in rbuf_mem, so that rbuf + rlen is RBUF_SKEW into a line */
	size_t rlen;
	struct iovec riov[2];
	unsigned int riov_direct;	/* 1 when riov[0] is slot memory */
	struct msghdr rmsg;
	struct nbd_rx rx;
	unsigned int notices;	/* server faults reported on stderr */
};

struct nbd_client {
	struct nbd_uring uring;
	struct nbd_conn *conns;
	unsigned int nconns, next_conn, live_conns;
	unsigned int depth;
	char label[512];

	struct nbd_slot *slots;
	struct nbd_slot **free_slots;
	unsigned int nfree;

	/* Where finished requests go, and how many went in this reap(). */
	struct torus_completer done;
	/* Timeline: where stamps go (fn NULL: off); the receive's time. */
	struct torus_stamper stamp;
	uint64_t rx_now;
	unsigned int sends_prepped;	/* connections with send_prepped */
	unsigned int completed;
	uint64_t poll_ns;	/* busy-poll budget at low depth */
	unsigned int hold_max;		/* most requests held back per conn */

	unsigned int timeout_s;	/* request timeout; 0: none */
	uint64_t timeout_ns;
	uint64_t next_check;	/* next scan for expired requests */
};

/* At most this many outstanding requests, waiting is latency-bound. */
#define POLL_MAX_OUTSTANDING	2

/* Below this depth nothing is held back (see nbdc_start_sends()). */
#define HOLD_MIN_DEPTH	16

/* Cookies carry the slot in the low half and its use count in the high. */
#define COOKIE_SLOT(cookie)	((uint32_t)(cookie))
#define COOKIE_GEN(cookie)	((uint32_t)((cookie) >> 32))

/* Timed-out requests are looked for this often (at most). */
#define TIMEOUT_CHECK_MAX_NS	(1000 * 1000000ULL)

/* Server faults reported per connection before going quiet. */
#define MAX_NOTICES	5

/* Requests sent or queued whose reply has not completed (slots in use). */
static inline unsigned int nbdc_outstanding(const struct nbd_client *c)
{
	return c->depth - c->nfree;
}

/* nbd_complete.c: a request's end, alone or with its connection's. */
void nbdc_complete_slot(struct nbd_client *c, struct nbd_slot *s, int error);
void nbdc_drop_conn(struct nbd_conn *cn, int error);
void nbdc_conn_lost(struct nbd_conn *cn, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* nbd_send.c: the submission side. */
void nbdc_stamp_sends(void *client);	/* the uring's before_submit */
void nbdc_send_done(struct nbd_uring_op *op, int res);
void nbdc_start_sends(struct nbd_client *c, bool hold);

/* nbd_reap.c: the receiving side. */
extern const struct nbd_rx_ops nbdc_rx_ops;
void nbdc_recv_done(struct nbd_uring_op *op, int res);

#endif /* TORUS_NBD_CLIENT_INT_H */
