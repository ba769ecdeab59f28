// SPDX-License-Identifier: GPL-2.0-only
/*
 * pipe-probe: a lean pipelined NBD client that measures how many requests a
 * server answers, with no engine in the way. It keeps DEPTH reads (or
 * writes) in flight on one Unix-socket or TCP connection, sends new
 * requests in batches as replies arrive, and prints IOPS.
 *
 *   pipe-probe unix:PATH|tcp:HOST:PORT [-e EXPORT] [-q DEPTH] [-b BS]
 *              [-t SECONDS] [-s SIZE] [-w] [-p]
 *
 * -p busy-polls the socket instead of sleeping in read: with -q 1, the
 * lowest latency any client can see from the server (no wake-up on the
 * client's side, no fio), a floor for the engine's poll_us.
 *
 * Handshake: the project's state machine in auto mode, no structured
 * replies, so it works with every shim profile and nbdkit.
 */
#include <errno.h>
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

static int write_full(int fd, const void *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n <= 0)
			return -1;
		buf = (const char *)buf + n;
		len -= n;
	}
	return 0;
}

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

int main(int argc, char **argv)
{
	const char *name = "", *where;
	unsigned int depth = 64, bs = 4096, secs = 5;
	uint64_t size = 0, seed = 88172645463325252ULL, done = 0;
	uint64_t t0, deadline, inflight = 0, blocks;
	bool writes = false, poll = false;
	uint8_t *in, *req, *wdata;
	size_t have = 0, reqlen;
	int fd, opt;

	while ((opt = getopt(argc, argv, "e:q:b:t:s:wp")) != -1) {
		switch (opt) {
		case 'e': name = optarg; break;
		case 'q': depth = atoi(optarg); break;
		case 'b': bs = atoi(optarg); break;
		case 't': secs = atoi(optarg); break;
		case 's': size = strtoull(optarg, NULL, 0); break;
		case 'w': writes = true; break;
		case 'p': poll = true; break;
		default: return 2;
		}
	}
	if (optind >= argc || depth < 1 || depth > MAX_DEPTH) {
		fprintf(stderr, "usage: pipe-probe unix:PATH|tcp:HOST:PORT [-e EXPORT] [-q DEPTH] [-b BS] [-t SECONDS] [-s SIZE] [-w] [-p]\n");
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
	blocks = size / bs;
	reqlen = NBD_REQUEST_LEN + (writes ? bs : 0);
	in = malloc(1 << 22);
	req = malloc((size_t)MAX_DEPTH * reqlen);
	wdata = calloc(1, bs);
	if (!in || !req || !wdata)
		return 1;

	t0 = now_ns();
	deadline = t0 + (uint64_t)secs * 1000000000ULL;
	for (;;) {
		size_t nreq = 0, off, rlen = writes ? 0 : bs;
		struct nbd_reply rep;
		ssize_t n;
		int r;

		/* top up to depth in one write */
		if (now_ns() < deadline) {
			while (inflight < depth) {
				struct nbd_request q = {
					.type = writes ? NBD_CMD_WRITE :
							 NBD_CMD_READ,
					.cookie = inflight,
					.offset = rnd(&seed) % blocks * bs,
					.length = bs,
				};
				uint8_t *p = req + nreq * reqlen;

				nbd_encode_request(p, &q);
				if (writes)
					memcpy(p + NBD_REQUEST_LEN, wdata, bs);
				nreq++;
				inflight++;
			}
			if (nreq && write_full(fd, req, nreq * reqlen))
				goto broken;
		} else if (!inflight) {
			break;
		}
		do {
			n = recv(fd, in + have, (1 << 22) - have,
				 poll ? MSG_DONTWAIT : 0);
		} while (n < 0 && poll && errno == EAGAIN);
		if (n <= 0)
			goto broken;
		have += n;
		off = 0;
		while (have - off >= NBD_SIMPLE_REPLY_LEN) {
			r = nbd_decode_reply(in + off, have - off, &rep);
			if (r <= 0 || rep.structured || rep.error)
				goto broken;
			if (have - off < NBD_SIMPLE_REPLY_LEN + rlen)
				break;
			off += NBD_SIMPLE_REPLY_LEN + rlen;
			inflight--;
			done++;
		}
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
