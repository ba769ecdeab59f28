// SPDX-License-Identifier: GPL-2.0-only
/*
 * Pipelined NBD client over io_uring (see nbd_client.h).
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
#include <errno.h>
#include <liburing.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nbd_client.h"
#include "nbd_connect.h"
#include "nbd_proto.h"
#include "nbd_replies.h"
#include "torus_clock.h"

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
	struct io_uring ring;
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
	unsigned int send_batch;	/* most requests held back per conn */

	unsigned int timeout_s;	/* request timeout; 0: none */
	uint64_t timeout_ns;
	uint64_t next_check;	/* next scan for expired requests */
};

/* At most this many outstanding requests, waiting is latency-bound. */
#define POLL_MAX_OUTSTANDING	2

/* Below this depth nothing is held back (see start_sends()). */
#define HOLD_MIN_DEPTH	16

#define UD_RECV		1ULL
#define ud_conn(ud)	((ud) >> 1)

/* Cookies carry the slot in the low half and its use count in the high. */
#define COOKIE_SLOT(cookie)	((uint32_t)(cookie))
#define COOKIE_GEN(cookie)	((uint32_t)((cookie) >> 32))

/* Timed-out requests are looked for this often (at most). */
#define TIMEOUT_CHECK_MAX_NS	(1000 * 1000000ULL)

/* Server faults reported per connection before going quiet. */
#define MAX_NOTICES	5

/* A request that went on the wire: its stamps, keyed by its cookie. */
static void stamp_slot(struct nbd_client *c, const struct nbd_slot *s)
{
	struct torus_wire_stamps w = {
		.key = (uint64_t)s->gen << 32 | (uint32_t)(s - c->slots),
		.offset = s->rq.offset,
		.len = s->rq.len,
		.stream = s->conn->idx,
		.t = { s->t[0], s->t[1], s->t[2] },
	};

	c->stamp.fn(c->stamp.arg, s->user, &w);
}

/* The one hand-off of a finished request: straight to the completer. */
static void complete_slot(struct nbd_client *c, struct nbd_slot *s, int error)
{
	if (c->stamp.fn && s->sent)
		stamp_slot(c, s);
	s->busy = false;
	s->sent = false;
	s->conn->inflight--;
	s->conn->big_reads -= s->big;
	c->free_slots[c->nfree++] = s;
	c->completed++;
	c->done.fn(c->done.arg, s->user, error);
}

/*
 * Closes a connection and fails everything outstanding on it with error;
 * the other connections carry on. The caller has said why.
 */
static void drop_conn(struct nbd_conn *cn, int error)
{
	struct nbd_client *c = cn->client;
	unsigned int i;

	if (cn->dead)
		return;
	cn->dead = true;
	c->live_conns--;
	/* Queued-but-unsent requests are failed with the sent ones. */
	cn->inflight += cn->npending;
	cn->npending = 0;
	cn->nr_marks = 0;
	for (i = 0; i < c->depth; i++) {
		struct nbd_slot *s = &c->slots[i];

		if (s->busy && s->conn == cn)
			complete_slot(c, s, error);
	}
	nbd_rx_init(&cn->rx, cn->rx.ops, cn, cn->rx.structured,
		    cn->rx.max_body);
	/* Ends any send or receive still in flight on it. */
	shutdown(cn->fd, SHUT_RDWR);
}

/* Fails every request on a lost connection with EIO, saying why once. */
static void conn_lost(struct nbd_conn *cn, const char *fmt, ...)
{
	struct nbd_client *c = cn->client;
	char why[320];
	va_list ap;

	if (cn->dead)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	fprintf(stderr,
		"torus: %s: connection %u lost: %s; its %u outstanding requests fail with EIO\n",
		c->label, cn->idx + 1, why, cn->inflight + cn->npending);
	drop_conn(cn, EIO);
}

static struct nbd_rx_req *rx_lookup(void *owner, uint64_t cookie)
{
	struct nbd_conn *cn = owner;
	struct nbd_client *c = cn->client;
	uint32_t i = COOKIE_SLOT(cookie);
	struct nbd_slot *s;

	if (i >= c->depth)
		return NULL;
	s = &c->slots[i];
	if (!s->busy || !s->sent || s->conn != cn || s->gen != COOKIE_GEN(cookie))
		return NULL;
	/* The parser looks a reply up as soon as its header is in. */
	if (c->stamp.fn && !s->t[1])
		s->t[1] = c->rx_now;
	return &s->rq;
}

static void rx_complete(void *owner, struct nbd_rx_req *rq, int error)
{
	struct nbd_conn *cn = owner;
	struct nbd_slot *s = (struct nbd_slot *)rq;

	if (cn->client->stamp.fn)
		s->t[2] = cn->client->rx_now;
	complete_slot(cn->client, s, error);
}

static void rx_notice(void *owner, const char *msg)
{
	struct nbd_conn *cn = owner;

	if (cn->notices++ >= MAX_NOTICES)
		return;
	fprintf(stderr, "torus: %s: connection %u: %s%s\n", cn->client->label,
		cn->idx + 1, msg,
		cn->notices == MAX_NOTICES ? " (further such messages suppressed)" : "");
}

static const struct nbd_rx_ops rx_ops = {
	.lookup = rx_lookup,
	.complete = rx_complete,
	.notice = rx_notice,
};

/* Timeline: s goes in the send being built, after what is there. */
static void mark_send(struct nbd_conn *cn, struct nbd_slot *s)
{
	uint64_t end = cn->nr_marks ? cn->marks[cn->nr_marks - 1].end : 0;

	end += NBD_REQUEST_LEN;
	if (s->rq.type == NBD_CMD_WRITE)
		end += s->rq.len;
	cn->marks[cn->nr_marks++] = (struct nbd_send_mark){
		.slot = s, .gen = s->gen, .end = end,
	};
}

/*
 * Timeline: bytes more of the send went; the requests whose last byte
 * was among them are done with (their stamp stays).
 */
static void mark_sent(struct nbd_conn *cn, uint64_t bytes)
{
	cn->send_done += bytes;
	while (cn->nr_marked < cn->nr_marks &&
	       cn->marks[cn->nr_marked].end <= cn->send_done)
		cn->nr_marked++;
}

/*
 * Timeline: the sends about to be submitted may carry the last bytes of
 * the requests not yet all gone: their sent stamp is now, just before the
 * kernel copies them to the socket (it returns once they are accepted,
 * or a few microseconds later). Read after the system call, the stamp
 * would come after the server's own receive whenever this thread is
 * preempted in between. A slot finished and reused meanwhile (the
 * connection dropped) is left alone.
 */
static void stamp_sends(struct nbd_client *c)
{
	uint64_t now = 0;
	unsigned int k, i;

	for (k = 0; k < c->nconns && c->sends_prepped; k++) {
		struct nbd_conn *cn = &c->conns[k];

		if (!cn->send_prepped)
			continue;
		cn->send_prepped = false;
		c->sends_prepped--;
		for (i = cn->nr_marked; i < cn->nr_marks; i++) {
			struct nbd_send_mark *m = &cn->marks[i];

			if (!m->slot->busy || m->slot->gen != m->gen)
				continue;
			if (!now)
				now = now_ns();
			m->slot->t[0] = now;
		}
	}
}

/* Every submission goes through here, so that sends are stamped. */
static int submit(struct nbd_client *c)
{
	if (c->sends_prepped)
		stamp_sends(c);
	return io_uring_submit(&c->ring);
}

static struct io_uring_sqe *get_sqe(struct nbd_client *c)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);

	if (!sqe) {
		/* The ring holds two entries per connection: never full. */
		submit(c);
		sqe = io_uring_get_sqe(&c->ring);
	}
	return sqe;
}

static void prep_send(struct nbd_conn *cn)
{
	struct io_uring_sqe *sqe = get_sqe(cn->client);
	unsigned int n = cn->iov_cnt - cn->iov_pos;

	if (n > MAX_SEND_IOV)
		n = MAX_SEND_IOV;
	memset(&cn->msg, 0, sizeof(cn->msg));
	cn->msg.msg_iov = &cn->iov[cn->iov_pos];
	cn->msg.msg_iovlen = n;
	io_uring_prep_sendmsg(sqe, cn->idx, &cn->msg, MSG_NOSIGNAL);
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data64(sqe, (uint64_t)cn->idx << 1);
	cn->sending = true;
	if (cn->client->stamp.fn && !cn->send_prepped) {
		cn->send_prepped = true;
		cn->client->sends_prepped++;
	}
}

/* Moves the pending requests into one send: headers back to back. */
static void start_send(struct nbd_conn *cn)
{
	struct nbd_client *c = cn->client;
	uint64_t now = c->timeout_ns ? now_ns() : 0;
	uint8_t *hdr = cn->hdrbuf;
	struct iovec *run = NULL;
	unsigned int i;

	cn->iov_cnt = 0;
	cn->iov_pos = 0;
	cn->nr_marks = 0;
	cn->nr_marked = 0;
	cn->send_done = 0;
	for (i = 0; i < cn->npending; i++) {
		struct nbd_slot *s = cn->pending[i];
		struct nbd_request req = {
			.flags = s->flags,
			.type = s->rq.type,
			.cookie = (uint64_t)++s->gen << 32 | (s - c->slots),
			.offset = s->rq.offset,
			.length = s->rq.len,
		};

		s->sent = true;
		s->sent_ns = now;
		nbd_encode_request(hdr, &req);
		if (run) {
			run->iov_len += NBD_REQUEST_LEN;
		} else {
			run = &cn->iov[cn->iov_cnt++];
			run->iov_base = hdr;
			run->iov_len = NBD_REQUEST_LEN;
		}
		hdr += NBD_REQUEST_LEN;
		if (s->rq.type == NBD_CMD_WRITE) {
			cn->iov[cn->iov_cnt].iov_base = s->rq.buf;
			cn->iov[cn->iov_cnt].iov_len = s->rq.len;
			cn->iov_cnt++;
			run = NULL;
		}
		if (c->stamp.fn)
			mark_send(cn, s);
	}
	cn->inflight += cn->npending;
	cn->npending = 0;
	prep_send(cn);
}

/* Lays out the next receive of a connection in cn->rmsg. */
static void prep_recv(struct nbd_conn *cn)
{
	unsigned int n = 0;
	uint8_t *dst;
	uint32_t due;

	cn->riov_direct = 0;
	/* The rest of a read payload goes straight to its buffer. */
	due = nbd_rx_payload_dst(&cn->rx, &dst);
	if (due) {
		cn->riov[n].iov_base = dst;
		cn->riov[n].iov_len = due;
		n++;
		cn->riov_direct = 1;
	}
	cn->riov[n].iov_base = cn->rbuf + cn->rlen;
	cn->riov[n].iov_len = RBUF_SIZE - cn->rlen;
	if (cn->big_reads && cn->riov[n].iov_len > RECV_WINDOW)
		cn->riov[n].iov_len = RECV_WINDOW;
	n++;
	memset(&cn->rmsg, 0, sizeof(cn->rmsg));
	cn->rmsg.msg_iov = cn->riov;
	cn->rmsg.msg_iovlen = n;
}

static bool recv_due(struct nbd_conn *cn)
{
	return !cn->receiving && !cn->dead && cn->inflight;
}

static void arm_recv(struct nbd_conn *cn)
{
	struct io_uring_sqe *sqe;

	if (!recv_due(cn))
		return;
	prep_recv(cn);
	sqe = get_sqe(cn->client);
	io_uring_prep_recvmsg(sqe, cn->idx, &cn->rmsg, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data64(sqe, (uint64_t)cn->idx << 1 | UD_RECV);
	cn->receiving = true;
}

/*
 * Receives are armed here, from ->getevents, and not again as soon as one
 * completes: replies that arrive while fio is busy then wait in the socket
 * and come in with one receive, rather than each waking a receive armed
 * for it (task work here, a wake-up for the server as its buffer drains).
 * With the staging alignment below it saves CPU per I/O at 4 KiB QD64
 * (docs/performance-history.md).
 */
static void arm_recvs(struct nbd_client *c)
{
	unsigned int i;

	for (i = 0; i < c->nconns; i++)
		arm_recv(&c->conns[i]);
}

/* Parses everything complete in the staging buffer. */
static void parse_replies(struct nbd_conn *cn)
{
	long used = nbd_rx_feed(&cn->rx, cn->rbuf, cn->rlen);
	uint8_t *base;

	if (used < 0) {
		conn_lost(cn, "%s", cn->rx.errmsg);
		return;
	}
	cn->rlen -= used;
	base = cn->rbuf_mem + ((RBUF_SKEW - cn->rlen) & 63);
	if (base != cn->rbuf + used)
		memmove(base, cn->rbuf + used, cn->rlen);
	cn->rbuf = base;
}

static void handle_recv(struct nbd_conn *cn, int res)
{
	size_t n = res;

	cn->receiving = false;
	if (cn->dead)
		return;
	if (res <= 0) {
		conn_lost(cn, "%s", res ? strerror(-res) : "server closed the connection");
		return;
	}
	/* Timeline: the replies in this receive are parsed now. */
	if (cn->client->stamp.fn)
		cn->client->rx_now = now_ns();
	if (cn->riov_direct) {
		size_t direct = n < cn->riov[0].iov_len ? n : cn->riov[0].iov_len;

		nbd_rx_payload_received(&cn->rx, direct);
		n -= direct;
	}
	cn->rlen += n;
	parse_replies(cn);
}

/*
 * A receive without io_uring, for busy-polling: whatever the socket holds
 * now, or nothing.
 */
static void poll_recv(struct nbd_conn *cn)
{
	ssize_t n;

	if (!recv_due(cn))
		return;
	prep_recv(cn);
	n = recvmsg(cn->fd, &cn->rmsg, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	cn->receiving = true;
	handle_recv(cn, n < 0 ? -errno : (int)n);
}

static void handle_send(struct nbd_conn *cn, int res)
{
	size_t n = res;

	cn->sending = false;
	if (cn->dead)
		return;
	if (res < 0) {
		conn_lost(cn, "send: %s", strerror(-res));
		return;
	}
	if (cn->client->stamp.fn)
		mark_sent(cn, n);
	/* Skip what went out; a short send continues where it stopped. */
	while (n && cn->iov_pos < cn->iov_cnt) {
		struct iovec *v = &cn->iov[cn->iov_pos];

		if (n >= v->iov_len) {
			n -= v->iov_len;
			cn->iov_pos++;
		} else {
			v->iov_base = (uint8_t *)v->iov_base + n;
			v->iov_len -= n;
			n = 0;
		}
	}
	if (cn->iov_pos < cn->iov_cnt)
		prep_send(cn);
	else if (cn->npending)
		start_send(cn);
}

static void process_cqes(struct nbd_client *c)
{
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0;

	io_uring_for_each_cqe(&c->ring, head, cqe) {
		uint64_t ud = io_uring_cqe_get_data64(cqe);
		struct nbd_conn *cn = &c->conns[ud_conn(ud)];

		if (ud & UD_RECV)
			handle_recv(cn, cqe->res);
		else
			handle_send(cn, cqe->res);
		seen++;
	}
	io_uring_cq_advance(&c->ring, seen);
}

int nbd_client_queue(struct nbd_client *c, uint16_t type, uint16_t flags,
		     uint64_t offset, uint32_t len, void *buf, void *user)
{
	struct nbd_conn *cn = NULL;
	struct nbd_slot *s;
	unsigned int i;

	if (!c->live_conns)
		return -ENOTCONN;
	if (!c->nfree)
		return -EBUSY;

	/* Round robin over the live connections. */
	for (i = 0; i < c->nconns; i++) {
		cn = &c->conns[c->next_conn];
		c->next_conn = (c->next_conn + 1) % c->nconns;
		if (!cn->dead)
			break;
	}

	s = c->free_slots[--c->nfree];
	s->user = user;
	s->conn = cn;
	s->rq.buf = buf;
	s->rq.offset = offset;
	s->rq.len = len;
	s->rq.type = type;
	nbd_rx_req_init(&s->rq);
	s->flags = flags;
	s->busy = true;
	if (c->stamp.fn)
		memset(s->t, 0, sizeof(s->t));
	s->big = type == NBD_CMD_READ && len >= BIG_READ;
	cn->big_reads += s->big;
	cn->pending[cn->npending++] = s;
	return 0;
}

/*
 * Starts the sends that are due. With hold set, new requests stay queued
 * while the connection is busy anyway: the server has a quarter of the
 * depth to work on, or fio has completions to take (fio then calls
 * ->getevents again, which sends them). Up to half the depth is held; it
 * then goes out in one message, often with the wait for replies. At depth
 * 64 this turns about one io_uring_enter and one socket send per request
 * into one per batch, and the server, too, wakes once per batch. Half and
 * a quarter rather than an eighth and 8: less CPU per I/O at every depth
 * measured (docs/performance-history.md). Below HOLD_MIN_DEPTH nothing is held.
 */
static void start_sends(struct nbd_client *c, bool hold)
{
	unsigned int i;

	for (i = 0; i < c->nconns; i++) {
		struct nbd_conn *cn = &c->conns[i];

		if (cn->npending && !cn->sending && !cn->dead &&
		    !(hold && cn->npending < c->send_batch &&
		      (cn->inflight >= c->depth / 4 || c->completed)))
			start_send(cn);
	}
}

int nbd_client_submit(struct nbd_client *c)
{
	int ret;

	start_sends(c, true);
	if (!io_uring_sq_ready(&c->ring))
		return 0;
	do {
		ret = submit(c);
	} while (ret == -EINTR);
	return ret < 0 ? ret : 0;
}

void nbd_client_set_stamper(struct nbd_client *c,
			    const struct torus_stamper *stamp)
{
	c->stamp = *stamp;
}

int nbd_client_fd(const struct nbd_client *c)
{
	return c->ring.ring_fd;
}

int nbd_client_send_all(struct nbd_client *c)
{
	int ret;

	start_sends(c, false);
	arm_recvs(c);
	if (!io_uring_sq_ready(&c->ring))
		return 0;
	do {
		ret = submit(c);
	} while (ret == -EINTR);
	return ret < 0 ? ret : 0;
}

/* Requests sent or queued whose reply has not completed (slots in use). */
static unsigned int outstanding(struct nbd_client *c)
{
	return c->depth - c->nfree;
}

/* Completions the kernel holds until we enter it (IORING_SETUP_TASKRUN_FLAG). */
static bool task_work_pending(struct nbd_client *c)
{
	return IO_URING_READ_ONCE(*c->ring.sq.kflags) & IORING_SQ_TASKRUN;
}

/* Whether this wait spins first (see busy_poll()). */
static bool polling(struct nbd_client *c)
{
	return c->poll_ns && outstanding(c) &&
	       outstanding(c) <= POLL_MAX_OUTSTANDING;
}

static void poll_recvs(struct nbd_client *c)
{
	unsigned int i;

	for (i = 0; i < c->nconns; i++)
		poll_recv(&c->conns[i]);
}

/*
 * With one or two requests in flight the wait is pure latency, and on a
 * VM waking an idle vCPU can cost more than the round trip itself. Spin
 * for a bounded time first, receiving from the sockets directly. Not by
 * watching for io_uring's task work behind an armed receive: on 6.x
 * kernels that spin saw its reply late, later the longer it spun
 * (docs/performance-history.md). The io_uring receive is armed when the spin
 * gives up.
 */
static void busy_poll(struct nbd_client *c, unsigned int min)
{
	uint64_t deadline;

	if (io_uring_sq_ready(&c->ring))
		submit(c);
	deadline = now_ns() + c->poll_ns;
	while (c->completed < min && now_ns() < deadline) {
		/* Sends complete as task work too. */
		if (task_work_pending(c))
			io_uring_get_events(&c->ring);
		if (io_uring_cq_ready(&c->ring))
			process_cqes(c);
		poll_recvs(c);
	}
}

/*
 * Fails the oldest expired request with ETIMEDOUT and closes its
 * connection (the stream cannot be trusted once a reply is missing); the
 * connection's other requests fail with EIO.
 */
static void check_timeouts(struct nbd_client *c, uint64_t now)
{
	unsigned int i;

	for (i = 0; i < c->depth; i++) {
		struct nbd_slot *s = &c->slots[i];
		struct nbd_conn *cn = s->conn;

		if (!s->busy || !s->sent || now - s->sent_ns < c->timeout_ns ||
		    cn->dead)
			continue;
		fprintf(stderr,
			"torus: %s: connection %u: no reply for %u s to %s of %u bytes at offset %llu (request_timeout=%u); closing the connection, its %u other outstanding requests fail with EIO\n",
			c->label, cn->idx + 1, c->timeout_s,
			nbd_cmd_name(s->rq.type), s->rq.len,
			(unsigned long long)s->rq.offset, c->timeout_s,
			cn->inflight + cn->npending - 1);
		complete_slot(c, s, ETIMEDOUT);
		drop_conn(cn, EIO);
	}
	c->next_check = now + (c->timeout_ns / 8 < TIMEOUT_CHECK_MAX_NS ?
			       c->timeout_ns / 8 : TIMEOUT_CHECK_MAX_NS);
}

void nbd_client_cancel(struct nbd_client *c, int error)
{
	unsigned int i, n = outstanding(c);

	if (!n)
		return;
	fprintf(stderr,
		"torus: %s: %u requests still outstanding as the job stops; they fail with %s\n",
		c->label, n, strerror(error));
	for (i = 0; i < c->nconns; i++)
		if (c->conns[i].inflight || c->conns[i].npending)
			drop_conn(&c->conns[i], error);
}

int nbd_client_reap(struct nbd_client *c, unsigned int min,
		    const struct timespec *timeout)
{
	struct __kernel_timespec kts, *tsp;
	struct io_uring_cqe *cqe;
	uint64_t deadline = 0, now, wait;
	unsigned int n;
	bool spin;
	int ret;

	c->completed = 0;
	/*
	 * A call that may not wait still lets the kernel post what it has
	 * (task work is only run on entry); one that may wait enters anyway
	 * once the posted completions run out.
	 */
	if (!min && task_work_pending(c))
		io_uring_get_events(&c->ring);
	process_cqes(c);
	/* A poller receives by itself (busy_poll()) before arming. */
	spin = polling(c);
	if (!spin)
		arm_recvs(c);
	else if (c->completed >= min)
		poll_recvs(c);
	if (c->completed < min) {
		/* About to wait: everything held goes out with the wait. */
		start_sends(c, false);
		if (spin)
			busy_poll(c, min);
	} else if (!min && c->timeout_ns && outstanding(c)) {
		/* Pollers never wait here: look for expired requests anyway. */
		now = now_ns();
		if (now >= c->next_check)
			check_timeouts(c, now);
	}
	while (c->completed < min && outstanding(c)) {
		now = now_ns();
		if (c->timeout_ns && now >= c->next_check) {
			check_timeouts(c, now);
			continue;
		}
		/* The timeout bounds the whole call, not each wait. */
		if (timeout && !deadline)
			deadline = now + (uint64_t)timeout->tv_sec * 1000000000ULL +
				   timeout->tv_nsec;
		if (timeout && now >= deadline)
			break;
		wait = timeout ? deadline - now : UINT64_MAX;
		if (c->timeout_ns && c->next_check - now < wait)
			wait = c->next_check - now;
		tsp = NULL;
		if (wait != UINT64_MAX) {
			kts.tv_sec = wait / 1000000000ULL;
			kts.tv_nsec = wait % 1000000000ULL;
			tsp = &kts;
		}
		arm_recvs(c);
		if (c->sends_prepped)
			stamp_sends(c);
		ret = io_uring_submit_and_wait_timeout(&c->ring, &cqe, 1, tsp,
						       NULL);
		if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EAGAIN) {
			c->completed = 0;
			return ret;
		}
		process_cqes(c);
	}
	/* Sends due or re-armed while parsing go out now. */
	nbd_client_submit(c);
	/* Outside reap() nothing is waiting to be taken (start_sends()). */
	n = c->completed;
	c->completed = 0;
	return n;
}

static int setup_ring(struct nbd_client *c, const int *fds, char *err,
		      size_t errlen)
{
	struct io_uring_params p = { 0 };
	unsigned int entries = 2 * c->nconns + 2;
	int ret;

	/*
	 * One job thread owns the ring; completions need not interrupt it
	 * (5.19+). Not DEFER_TASKRUN: it also defers the kernel's retries of
	 * partial socket sends and receives until the next enter, which
	 * stalls large transfers (64 KiB randrw lost a third of its
	 * efficiency). A plain ring on older kernels.
	 */
	static const unsigned int tries[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN |
			IORING_SETUP_TASKRUN_FLAG,
		0,
	};
	unsigned int i;

	for (i = 0, ret = -EINVAL; i < 2 && ret == -EINVAL; i++) {
		memset(&p, 0, sizeof(p));
		p.flags = tries[i];
		ret = io_uring_queue_init_params(entries, &c->ring, &p);
	}
	if (ret < 0) {
		snprintf(err, errlen, "io_uring_queue_init: %s%s", strerror(-ret),
			 ret == -EPERM ? " (io_uring disabled by sysctl kernel.io_uring_disabled?)" : "");
		return -1;
	}
	/* Saves a file table lookup on every io_uring_enter; optional. */
	io_uring_register_ring_fd(&c->ring);
	ret = io_uring_register_files(&c->ring, fds, c->nconns);
	if (ret < 0) {
		snprintf(err, errlen, "io_uring_register_files: %s",
			 strerror(-ret));
		io_uring_queue_exit(&c->ring);
		return -1;
	}
	return 0;
}

static void free_client(struct nbd_client *c)
{
	unsigned int i;

	if (!c)
		return;
	for (i = 0; c->conns && i < c->nconns; i++) {
		free(c->conns[i].pending);
		free(c->conns[i].hdrbuf);
		free(c->conns[i].iov);
		free(c->conns[i].rbuf_mem);
		free(c->conns[i].marks);
	}
	free(c->conns);
	free(c->slots);
	free(c->free_slots);
	free(c);
}

struct nbd_client *nbd_client_new(const int *fds, unsigned int nconns,
				  unsigned int depth,
				  const struct nbd_export *exp,
				  unsigned int poll_us, unsigned int timeout_s,
				  const struct torus_completer *done,
				  const char *label, char *err, size_t errlen)
{
	struct nbd_client *c;
	unsigned int i;

	c = calloc(1, sizeof(*c));
	if (!c)
		goto oom;
	c->nconns = nconns;
	c->live_conns = nconns;
	c->depth = depth;
	c->poll_ns = (uint64_t)poll_us * 1000;
	c->send_batch = depth >= HOLD_MIN_DEPTH ? depth / 2 : 0;
	c->timeout_s = timeout_s;
	c->timeout_ns = (uint64_t)timeout_s * 1000000000ULL;
	c->done = *done;
	snprintf(c->label, sizeof(c->label), "%s", label);
	c->conns = calloc(nconns, sizeof(*c->conns));
	c->slots = calloc(depth, sizeof(*c->slots));
	c->free_slots = calloc(depth, sizeof(*c->free_slots));
	if (!c->conns || !c->slots || !c->free_slots)
		goto oom;
	for (i = 0; i < depth; i++)
		c->free_slots[i] = &c->slots[depth - 1 - i];
	c->nfree = depth;

	for (i = 0; i < nconns; i++) {
		struct nbd_conn *cn = &c->conns[i];

		cn->client = c;
		cn->idx = i;
		cn->pending = calloc(depth, sizeof(*cn->pending));
		cn->hdrbuf = malloc((size_t)depth * NBD_REQUEST_LEN);
		cn->iov = calloc(2 * (size_t)depth, sizeof(*cn->iov));
		cn->rbuf_mem = aligned_alloc(64, RBUF_SIZE + 64);
		cn->marks = calloc(depth, sizeof(*cn->marks));
		if (!cn->pending || !cn->hdrbuf || !cn->iov || !cn->rbuf_mem ||
		    !cn->marks)
			goto oom;
		cn->rbuf = cn->rbuf_mem + RBUF_SKEW;
		nbd_rx_init(&cn->rx, &rx_ops, cn, exp->structured_replies,
			    MAX_CHUNK_BODY);
	}
	if (setup_ring(c, fds, err, errlen))
		goto fail;
	for (i = 0; i < nconns; i++)
		c->conns[i].fd = fds[i];
	return c;
oom:
	snprintf(err, errlen, "out of memory allocating the NBD client");
fail:
	for (i = 0; i < nconns; i++)
		close(fds[i]);
	free_client(c);
	return NULL;
}

void nbd_client_free(struct nbd_client *c)
{
	struct io_uring_cqe *cqe;
	unsigned int i;
	bool busy;

	if (!c)
		return;
	/* Nothing may still point into our buffers when they are freed. */
	for (;;) {
		busy = false;
		for (i = 0; i < c->nconns; i++) {
			struct nbd_conn *cn = &c->conns[i];

			if (cn->sending || cn->receiving) {
				if (!cn->dead) {
					cn->dead = true;
					shutdown(cn->fd, SHUT_RDWR);
				}
				busy = true;
			}
		}
		if (!busy || io_uring_wait_cqe(&c->ring, &cqe))
			break;
		process_cqes(c);
	}
	for (i = 0; i < c->nconns; i++) {
		if (c->conns[i].dead)
			close(c->conns[i].fd);
		else
			nbd_disconnect(c->conns[i].fd);
	}
	io_uring_queue_exit(&c->ring);
	free_client(c);
}
