// SPDX-License-Identifier: GPL-2.0-only
/*
 * pipe-probe: a lean pipelined NBD client that measures how many requests a
 * server answers, with no engine in the way. It keeps DEPTH reads (or
 * writes) in flight on one Unix-socket or TCP connection, sends new
 * requests in batches as replies arrive, and prints IOPS.
 *
 *   pipe-probe unix:PATH|tcp:HOST:PORT [-e EXPORT] [-q DEPTH] [-b BS]
 *              [-t SECONDS] [-s SIZE] [-w] [-m READ%] [-p] [-u] [-B N]
 *
 * -t: over 0, at most 3600, may be fractional (default 5).
 *
 * -m mixes reads and writes as fio's rwmixread does (each request a read
 * with that chance); -w is -m 0. Sending and receiving never wait for each
 * other (a non-blocking socket, poll() on both), so requests that carry
 * data do not stall while the server's replies fill the socket. Nothing
 * is copied in user space but what the socket hands over: writes go out
 * from one buffer by iovec, read payloads are drained as they arrive.
 *
 * -p busy-polls the socket instead of sleeping in read: with -q 1, the
 * lowest latency any client can see from the server (no wake-up on the
 * client's side, no fio), a floor for the engine's poll_us.
 *
 * -B N sends new requests only once N slots are free (fio's
 * iodepth_batch_complete_min), fewer and larger batches.
 *
 * -u drives the socket through io_uring as the engine does: a receive
 * always armed, the batch's sendmsg, one io_uring_enter that submits and
 * waits. Same requests, same parsing; only the system calls differ.
 *
 * Handshake: the project's state machine in auto mode, no structured
 * replies, so it works with every shim profile and nbdkit.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "nbd_connect.h"
#include "nbd_proto.h"
#include "torus_clock.h"

#define MAX_DEPTH	1024
#define IN_LEN		(1 << 20)

/*
 * The project's NBD client connects (client/nbd/nbd_connect.h) in auto
 * mode: OPT_GO, or EXPORT_NAME on a new connection for the legacy
 * profiles. Returns the connected socket, or -1.
 */
static int handshake(const char *where, const char *name, uint64_t *size)
{
	struct nbd_hs_config cfg = {
		.export_name = name,
		.mode = NBD_HS_MODE_AUTO,
	};
	struct nbd_connect_limits lim = { .timeout_s = 10 };
	struct nbd_export exp;
	struct nbd_uri u = { 0 };
	char err[1024], *port;
	int fd;

	snprintf(u.export_name, sizeof(u.export_name), "%s", name);
	if (!strncmp(where, "unix:", 5)) {
		u.unix_socket = true;
		snprintf(u.socket, sizeof(u.socket), "%s", where + 5);
	} else if (!strncmp(where, "tcp:", 4) &&
		   (port = strrchr(where + 4, ':'))) {
		snprintf(u.host, sizeof(u.host), "%.*s",
			 (int)(port - where - 4), where + 4);
		snprintf(u.port, sizeof(u.port), "%s", port + 1);
	} else {
		fprintf(stderr, "pipe-probe: %s: expected unix:PATH or tcp:HOST:PORT\n",
			where);
		return -1;
	}
	fd = nbd_connect_export(&u, &cfg, &lim, &exp, err, sizeof(err));
	if (fd < 0) {
		fprintf(stderr, "pipe-probe: %s\n", err);
		return -1;
	}
	*size = exp.size;
	return fd;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * What is unsent: a header per request and, for a write, the one shared
 * buffer of data (no copy per request, as the engine sends from fio's
 * buffers). Partial sends advance the first iovec.
 */
struct sendq {
	struct iovec iov[2 * MAX_DEPTH];
	unsigned int head, tail;
};

static void sendq_add(struct sendq *q, void *base, size_t len)
{
	if (q->tail == 2 * MAX_DEPTH) {
		memmove(q->iov, q->iov + q->head,
			(q->tail - q->head) * sizeof(q->iov[0]));
		q->tail -= q->head;
		q->head = 0;
	}
	q->iov[q->tail++] = (struct iovec){ .iov_base = base, .iov_len = len };
}

/* Advances the send queue past n bytes sent. */
static void sent(struct sendq *q, size_t n)
{
	while (n > 0) {
		struct iovec *v = &q->iov[q->head];

		if (n < v->iov_len) {
			v->iov_base = (uint8_t *)v->iov_base + n;
			v->iov_len -= n;
			break;
		}
		n -= v->iov_len;
		q->head++;
	}
	if (q->head == q->tail)
		q->head = q->tail = 0;
}

/* msg: what is unsent, at most 1024 iovecs of it. */
static void sendq_msg(struct sendq *q, struct msghdr *msg)
{
	memset(msg, 0, sizeof(*msg));
	msg->msg_iov = q->iov + q->head;
	msg->msg_iovlen = q->tail - q->head;
	if (msg->msg_iovlen > 1024)
		msg->msg_iovlen = 1024;
}

/* Returns -1 on a broken connection, 0 otherwise. */
static int sendq_send(struct sendq *q, int fd)
{
	struct msghdr msg;
	ssize_t n;

	if (q->head == q->tail)
		return 0;
	sendq_msg(q, &msg);
	n = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		fprintf(stderr, "pipe-probe: sendmsg: %s\n", strerror(errno));
		return -1;
	}
	sent(q, n);
	return 0;
}

struct probe {
	int fd;
	unsigned int depth, bs, mix, batch;
	uint64_t seed, blocks, done, inflight, deadline;
	uint8_t hdr[MAX_DEPTH][NBD_REQUEST_LEN];
	struct sendq sq;
	uint8_t *in, *wdata;
	/* Cookies are slots; a reply's length comes from its request's type. */
	uint32_t freeslots[MAX_DEPTH], nfree;
	bool is_read[MAX_DEPTH];
	/* in[0, have): received, unparsed; skip: payload bytes still to drain */
	size_t have, skip;
};

/* Before the deadline, every free slot gets a request; false after. */
static bool fill(struct probe *p)
{
	if (now_ns() >= p->deadline)
		return false;
	/* -B: wait for that many free slots (fio's iodepth_batch_complete_min) */
	if (p->inflight && p->depth - p->inflight < p->batch)
		return true;
	while (p->inflight < p->depth) {
		uint32_t slot = p->freeslots[--p->nfree];
		bool rd = p->mix == 100 ||
			  (p->mix && rnd(&p->seed) % 100 < p->mix);
		struct nbd_request q = {
			.type = rd ? NBD_CMD_READ : NBD_CMD_WRITE,
			.cookie = slot,
			.offset = rnd(&p->seed) % p->blocks * p->bs,
			.length = p->bs,
		};

		p->is_read[slot] = rd;
		nbd_encode_request(p->hdr[slot], &q);
		sendq_add(&p->sq, p->hdr[slot], NBD_REQUEST_LEN);
		if (!rd)
			sendq_add(&p->sq, p->wdata, p->bs);
		p->inflight++;
	}
	return true;
}

/* n more bytes arrived in p->in: the replies in them. -1: a bad reply. */
static int parse(struct probe *p, size_t n)
{
	struct nbd_reply rep;
	size_t off;

	p->have += n;
	off = p->skip < p->have ? p->skip : p->have;
	p->skip -= off;
	while (!p->skip && p->have - off >= NBD_SIMPLE_REPLY_LEN) {
		size_t rlen;
		int r = nbd_decode_reply(p->in + off, p->have - off, &rep);

		if (r <= 0) {
			fprintf(stderr, "pipe-probe: bad reply: not an NBD simple reply (decode %d)\n",
				r);
			return -1;
		}
		if (rep.structured || rep.error || rep.cookie >= p->depth) {
			fprintf(stderr, "pipe-probe: bad reply (structured %d, error %u, cookie %llu of %u)\n",
				rep.structured, rep.error,
				(unsigned long long)rep.cookie, p->depth);
			return -1;
		}
		rlen = p->is_read[rep.cookie] ? p->bs : 0;
		off += NBD_SIMPLE_REPLY_LEN;
		/* the payload is drained as it comes, never moved */
		p->skip = rlen < p->have - off ? 0 : rlen - (p->have - off);
		off += rlen - p->skip;
		p->freeslots[p->nfree++] = rep.cookie;
		p->inflight--;
		p->done++;
	}
	/* at most a partial header is kept */
	memmove(p->in, p->in + off, p->have - off);
	p->have -= off;
	return 0;
}

/* poll(), sendmsg(), recv(): one system call each per turn. */
static int run_poll(struct probe *p, bool busy_poll)
{
	for (;;) {
		ssize_t n;

		if (!fill(p) && !p->inflight)
			return 0;
		if (!busy_poll) {
			struct pollfd pfd = {
				.fd = p->fd,
				.events = POLLIN | (p->sq.head < p->sq.tail ? POLLOUT : 0),
			};

			if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
				fprintf(stderr, "pipe-probe: poll: %s\n", strerror(errno));
				return -1;
			}
		}
		if (sendq_send(&p->sq, p->fd) < 0)
			return -1;
		n = recv(p->fd, p->in + p->have, IN_LEN - p->have, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			fprintf(stderr, "pipe-probe: recv: %s\n",
				n ? strerror(errno) : "the server closed the connection");
			return -1;
		}
		if (n > 0 && parse(p, n))
			return -1;
	}
}

/* The send in flight on the ring: what it carries. */
static struct msghdr uring_msg;

static void uring_send(struct io_uring *ring, struct probe *p)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	sendq_msg(&p->sq, &uring_msg);
	io_uring_prep_sendmsg(sqe, p->fd, &uring_msg, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, 1);
}

static void uring_recv(struct io_uring *ring, struct probe *p)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_recv(sqe, p->fd, p->in + p->have, IN_LEN - p->have, 0);
	io_uring_sqe_set_data64(sqe, 2);
}

/*
 * io_uring, as the engine drives its socket: a receive armed while replies
 * are due, the queued requests sent in one sendmsg when no send
 * is in flight (sendq_add may not move the iovecs under it: the send is
 * only made with the queue's tail fixed until it completes).
 */
static int run_uring(struct probe *p)
{
	struct io_uring ring;
	bool sending = false, receiving = false;
	int ret;

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0) {
		fprintf(stderr, "pipe-probe: io_uring_queue_init: %s\n",
			strerror(-ret));
		return -1;
	}
	fill(p);
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;

		if (!sending && p->sq.head < p->sq.tail) {
			uring_send(&ring, p);
			sending = true;
		}
		if (!receiving && p->inflight) {
			uring_recv(&ring, p);
			receiving = true;
		}
		if (!p->inflight && !sending)
			break;
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0 && ret != -EINTR) {
			fprintf(stderr, "pipe-probe: io_uring_submit_and_wait: %s\n",
				strerror(-ret));
			goto broken;
		}
		io_uring_for_each_cqe(&ring, head, cqe) {
			seen++;
			if (cqe->res <= 0 && cqe->res != -EAGAIN &&
			    cqe->res != -EINTR) {
				bool send = io_uring_cqe_get_data64(cqe) == 1;

				fprintf(stderr, "pipe-probe: %s: %s\n",
					send ? "send" : "recv",
					cqe->res ? strerror(-cqe->res) :
					send ? "nothing sent" :
					"the server closed the connection");
				goto broken;
			}
			if (io_uring_cqe_get_data64(cqe) == 1) {
				sending = false;
				if (cqe->res > 0)
					sent(&p->sq, cqe->res);
				continue;
			}
			receiving = false;
			if (cqe->res > 0 && parse(p, cqe->res))
				goto broken;
		}
		io_uring_cq_advance(&ring, seen);
		/* New requests only into an idle queue: the iovecs stay put. */
		if (!sending)
			fill(p);
	}
	io_uring_queue_exit(&ring);
	return 0;
broken:
	io_uring_queue_exit(&ring);
	return -1;
}

int main(int argc, char **argv)
{
	const char *name = "", *where;
	static struct probe p = {
		.depth = 64, .bs = 4096, .mix = 100, .batch = 1,
		.seed = 88172645463325252ULL,
	};
	double secs = 5;
	uint64_t size = 0, t0;
	bool busy_poll = false, uring = false;
	int opt, ret;

	while ((opt = getopt(argc, argv, "e:q:b:t:s:wm:puB:")) != -1) {
		switch (opt) {
		case 'e': name = optarg; break;
		case 'q': p.depth = atoi(optarg); break;
		case 'b': p.bs = atoi(optarg); break;
		case 't': secs = atof(optarg); break;
		case 's': size = strtoull(optarg, NULL, 0); break;
		case 'w': p.mix = 0; break;
		case 'm': p.mix = atoi(optarg); break;
		case 'p': busy_poll = true; break;
		case 'u': uring = true; break;
		case 'B': p.batch = atoi(optarg); break;
		default: return 2;
		}
	}
	if (optind >= argc || p.depth < 1 || p.depth > MAX_DEPTH ||
	    p.batch < 1 || p.batch > p.depth ||
	    p.mix > 100 || (busy_poll && uring) || !(secs > 0 && secs <= 3600)) {
		fprintf(stderr, "usage: pipe-probe unix:PATH|tcp:HOST:PORT [-e EXPORT] [-q DEPTH] [-b BS] [-t SECONDS (over 0, at most 3600, may be fractional)] [-s SIZE] [-w] [-m READ%% (0 to 100)] [-p | -u] [-B N (1 to DEPTH)]\n");
		return 2;
	}
	where = argv[optind];
	p.fd = handshake(where, name, size ? &(uint64_t){0} : &size);
	if (p.fd < 0)
		return 1;
	if (!size) {
		fprintf(stderr, "pipe-probe: export size unknown\n");
		return 1;
	}
	if (!uring &&
	    fcntl(p.fd, F_SETFL, fcntl(p.fd, F_GETFL) | O_NONBLOCK) < 0)
		return 1;
	p.blocks = size / p.bs;
	p.in = malloc(IN_LEN);
	p.wdata = calloc(1, p.bs);
	if (!p.in || !p.wdata)
		return 1;
	for (p.nfree = 0; p.nfree < p.depth; p.nfree++)
		p.freeslots[p.nfree] = p.depth - 1 - p.nfree;

	t0 = now_ns();
	p.deadline = t0 + (uint64_t)(secs * 1e9);
	ret = uring ? run_uring(&p) : run_poll(&p, busy_poll);
	if (ret) {
		fprintf(stderr, "pipe-probe: connection broken or bad reply after %llu replies\n",
			(unsigned long long)p.done);
		return 1;
	}
	printf("%.0f\n", p.done * 1e9 / (now_ns() - t0));
	return 0;
}
