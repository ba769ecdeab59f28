// SPDX-License-Identifier: GPL-2.0-only
/*
 * pipe-probe: a lean pipelined NBD client that measures how many requests a
 * server answers, with no engine in the way. It keeps DEPTH reads (or
 * writes) in flight on one Unix-socket or TCP connection, sends new
 * requests in batches as replies arrive, and prints IOPS.
 *
 *   pipe-probe unix:PATH|tcp:HOST:PORT [-e EXPORT] [-q DEPTH] [-b BS]
 *              [-t SECONDS] [-s SIZE] [-w] [-m READ%] [-p]
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
 * Handshake: the project's state machine in auto mode, no structured
 * replies, so it works with every shim profile and nbdkit.
 */
#include <errno.h>
#include <fcntl.h>
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

/* Returns -1 on a broken connection, 0 otherwise. */
static int sendq_send(struct sendq *q, int fd)
{
	struct msghdr msg = { 0 };
	ssize_t n;

	if (q->head == q->tail)
		return 0;
	msg.msg_iov = q->iov + q->head;
	msg.msg_iovlen = q->tail - q->head;
	if (msg.msg_iovlen > 1024)
		msg.msg_iovlen = 1024;
	n = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	while (n > 0) {
		struct iovec *v = &q->iov[q->head];

		if ((size_t)n < v->iov_len) {
			v->iov_base = (uint8_t *)v->iov_base + n;
			v->iov_len -= n;
			break;
		}
		n -= v->iov_len;
		q->head++;
	}
	if (q->head == q->tail)
		q->head = q->tail = 0;
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = "", *where;
	unsigned int depth = 64, bs = 4096, secs = 5, mix = 100;
	uint64_t size = 0, seed = 88172645463325252ULL, done = 0;
	uint64_t t0, deadline, inflight = 0, blocks;
	bool busy_poll = false;
	static uint8_t hdr[MAX_DEPTH][NBD_REQUEST_LEN];
	static struct sendq sq;
	uint8_t *in, *wdata;
	/* Cookies are slots; a reply's length comes from its request's type. */
	uint32_t freeslots[MAX_DEPTH], nfree;
	bool is_read[MAX_DEPTH];
	/* in[0, have): received, unparsed; skip: payload bytes still to drain */
	size_t have = 0, skip = 0;
	int fd, opt;

	while ((opt = getopt(argc, argv, "e:q:b:t:s:wm:p")) != -1) {
		switch (opt) {
		case 'e': name = optarg; break;
		case 'q': depth = atoi(optarg); break;
		case 'b': bs = atoi(optarg); break;
		case 't': secs = atoi(optarg); break;
		case 's': size = strtoull(optarg, NULL, 0); break;
		case 'w': mix = 0; break;
		case 'm': mix = atoi(optarg); break;
		case 'p': busy_poll = true; break;
		default: return 2;
		}
	}
	if (optind >= argc || depth < 1 || depth > MAX_DEPTH || mix > 100) {
		fprintf(stderr, "usage: pipe-probe unix:PATH|tcp:HOST:PORT [-e EXPORT] [-q DEPTH] [-b BS] [-t SECONDS] [-s SIZE] [-w] [-m READ%% (0 to 100)] [-p]\n");
		return 2;
	}
	where = argv[optind];
	fd = handshake(where, name, size ? &(uint64_t){0} : &size);
	if (fd < 0)
		return 1;
	if (!size) {
		fprintf(stderr, "pipe-probe: export size unknown\n");
		return 1;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		return 1;
	blocks = size / bs;
	in = malloc(IN_LEN);
	wdata = calloc(1, bs);
	if (!in || !wdata)
		return 1;
	for (nfree = 0; nfree < depth; nfree++)
		freeslots[nfree] = depth - 1 - nfree;

	t0 = now_ns();
	deadline = t0 + (uint64_t)secs * 1000000000ULL;
	for (;;) {
		struct nbd_reply rep;
		size_t off;
		ssize_t n;
		int r;

		if (now_ns() < deadline) {
			while (inflight < depth) {
				uint32_t slot = freeslots[--nfree];
				bool rd = mix == 100 ||
					  (mix && rnd(&seed) % 100 < mix);
				struct nbd_request q = {
					.type = rd ? NBD_CMD_READ : NBD_CMD_WRITE,
					.cookie = slot,
					.offset = rnd(&seed) % blocks * bs,
					.length = bs,
				};

				is_read[slot] = rd;
				nbd_encode_request(hdr[slot], &q);
				sendq_add(&sq, hdr[slot], NBD_REQUEST_LEN);
				if (!rd)
					sendq_add(&sq, wdata, bs);
				inflight++;
			}
		} else if (!inflight) {
			break;
		}
		if (!busy_poll) {
			struct pollfd pfd = {
				.fd = fd,
				.events = POLLIN | (sq.head < sq.tail ? POLLOUT : 0),
			};

			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				goto broken;
		}
		if (sendq_send(&sq, fd) < 0)
			goto broken;
		n = recv(fd, in + have, IN_LEN - have, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			goto broken;
		if (n < 0)
			continue;
		have += n;
		off = skip < have ? skip : have;
		skip -= off;
		while (!skip && have - off >= NBD_SIMPLE_REPLY_LEN) {
			size_t rlen;

			r = nbd_decode_reply(in + off, have - off, &rep);
			if (r <= 0 || rep.structured || rep.error ||
			    rep.cookie >= depth)
				goto broken;
			rlen = is_read[rep.cookie] ? bs : 0;
			off += NBD_SIMPLE_REPLY_LEN;
			/* the payload is drained as it comes, never moved */
			skip = rlen < have - off ? 0 : rlen - (have - off);
			off += rlen - skip;
			freeslots[nfree++] = rep.cookie;
			inflight--;
			done++;
		}
		/* at most a partial header is kept */
		memmove(in, in + off, have - off);
		have -= off;
	}
	printf("%.0f\n", done * 1e9 / (now_ns() - t0));
	return 0;
broken:
	fprintf(stderr, "pipe-probe: connection broken or bad reply after %llu replies\n",
		(unsigned long long)done);
	return 1;
}
