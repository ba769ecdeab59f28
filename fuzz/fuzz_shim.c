// SPDX-License-Identifier: GPL-2.0-only
/*
 * One nbd-shim connection run in-process, from the greeting through the
 * options to the transmission phase, fed arbitrary client bytes: each
 * profile's option parsing (torus, zeroos, standard) and the request
 * parsing they share (transmit.c).
 *
 * The connection runs exactly as a connection thread of the server does
 * (server.c: negotiate, transmit, give back the torus lock, free), on one
 * end of a socketpair. A client thread writes the input to the other end,
 * shuts its writing side and reads and drops every reply until the shim
 * closes. The export's store is wrapped in one that checks every
 * operation lies inside the export, and fails some on demand so that the
 * profiles' error paths run too.
 *
 * Input:
 *   byte 0     bits 0-2 the configuration, from the table below;
 *              bit 3 the store offers no zero-copy peek (replies are
 *              copied, as from a file); bit 4 the client hangs up as soon
 *              as it has written everything, replies unread; bits 5-7
 *              f: with f > 0, every f-th store operation fails with EIO
 *   the rest   the client's bytes
 *
 * The shim's messages are dropped; FUZZ_SHIM_LOG=1 shows them, and its
 * --verbose lines.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "store_ops.h"
#include "config.h"
#include "peer.h"
#include "export.h"
#include "fuzz.h"
#include "log.h"
#include "profile.h"
#include "server.h"

/* Command lines, as main() would parse them (argv[0] is added). */
static const char *const configs[8][15] = {
	{ "--profile", "coreos", "--size", "1M", "--block-size", "4096" },
	{ "--profile", "coreos", "--store", "null", "--size", "1M",
	  "--replicas", "2", "--latency-us", "1", "--shape-at", "storage" },
	{ "--profile", "zeroos", "--size", "1M" },
	{ "--profile", "zeroos", "--store", "null", "--size", "1T",
	  "--advertise-trim" },
	{ "--profile", "standard", "--size", "1M" },
	{ "--profile", "standard", "--store", "null", "--size", "1T",
	  "--export", "disk", "--poll-us", "5" },
	{ "--profile", "standard", "--size", "64K", "--latency-us", "1" },
	{ "--profile", "zeroos", "--size", "64K", "--block-size", "512",
	  "--latency-us", "1" },
};

struct shim {
	struct shim_config cfg;
	struct server srv;
	bool ready;
};

static struct shim shims[8];
static bool show_log;

/* log.c's interface, quiet: bad input makes the shim talk a lot. */
int shim_verbose;

static void fuzz_log(const char *fmt, va_list ap)
{
	if (show_log) {
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

void shim_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fuzz_log(fmt, ap);
	va_end(ap);
}

void shim_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fuzz_log(fmt, ap);
	va_end(ap);
}

void shim_debug_line(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fuzz_log(fmt, ap);
	va_end(ap);
}

/* ---- a store that checks the export's bounds ---------------------- */

struct checked {
	struct store st;
	struct store *inner;
	bool no_peek;
	unsigned int fail_every;	/* 0: never */
	unsigned int ops;
};

static struct checked *checked(struct store *st, size_t len, uint64_t off)
{
	FUZZ_CHECK(off <= st->size && len <= st->size - off);
	return (struct checked *)st;
}

/* This operation fails (it is the fail_every-th since the last). */
static bool fault(struct checked *ck)
{
	return ck->fail_every && ++ck->ops % ck->fail_every == 0;
}

static int ck_pread(struct store *st, void *buf, size_t len, uint64_t off)
{
	struct checked *ck = checked(st, len, off);

	return fault(ck) ? -EIO : store_pread(ck->inner, buf, len, off);
}

static int ck_pwrite(struct store *st, const void *buf, size_t len,
		     uint64_t off)
{
	struct checked *ck = checked(st, len, off);

	return fault(ck) ? -EIO : store_pwrite(ck->inner, buf, len, off);
}

static int ck_zero(struct store *st, size_t len, uint64_t off)
{
	struct checked *ck = checked(st, len, off);

	return fault(ck) ? -EIO : store_zero(ck->inner, len, off);
}

static int ck_trim(struct store *st, size_t len, uint64_t off)
{
	struct checked *ck = checked(st, len, off);

	return fault(ck) ? -EIO : store_trim(ck->inner, len, off);
}

static int ck_flush(struct store *st)
{
	struct checked *ck = checked(st, 0, 0);

	return fault(ck) ? -EIO : store_flush(ck->inner);
}

static const void *ck_peek(struct store *st, size_t len, uint64_t off)
{
	struct checked *ck = checked(st, len, off);

	return ck->no_peek ? NULL : store_peek(ck->inner, len, off);
}

static void ck_close(struct store *st)
{
	store_close(checked(st, 0, 0)->inner);
	free(st);
}

static const struct store_ops checked_ops = {
	.name = "checked",
	.pread = ck_pread,
	.pwrite = ck_pwrite,
	.zero = ck_zero,
	.trim = ck_trim,
	.flush = ck_flush,
	.peek = ck_peek,
	.close = ck_close,
};

/* ---- the server, once per configuration ------------------------------ */

static struct shim *shim_get(unsigned int i)
{
	struct shim *s = &shims[i];
	char *argv[16] = { "nbd-shim" };
	struct checked *ck;
	char err[512];
	int argc = 1;

	if (s->ready)
		return s;
	show_log = getenv("FUZZ_SHIM_LOG") != NULL;
	shim_verbose = show_log;
	while (configs[i][argc - 1])
		argv[argc] = (char *)configs[i][argc - 1], argc++;
	optind = 0;		/* args_parse uses getopt */
	FUZZ_CHECK(!args_parse(argc, argv, &s->cfg));

	/* server_init() without the listening socket. */
	memset(&s->srv, 0, sizeof(s->srv));
	s->srv.cfg = &s->cfg;
	s->srv.prof = s->cfg.profile;
	s->srv.lfd = -1;
	pthread_mutex_init(&s->srv.lock, NULL);
	pthread_cond_init(&s->srv.idle, NULL);
	shaper_init(&s->srv.shaper, s->cfg.latency_us, s->cfg.bandwidth);
	if (export_open(&s->srv.exp, &s->cfg, &s->srv.shaper, err,
			sizeof(err))) {
		fprintf(stderr, "fuzz_shim: config %u: %s\n", i, err);
		abort();
	}
	ck = calloc(1, sizeof(*ck));
	ck->st.ops = &checked_ops;
	ck->st.size = s->srv.exp.st->size;
	ck->inner = s->srv.exp.st;
	s->srv.exp.st = &ck->st;
	s->ready = true;
	return s;
}

/* ---- the client end ---------------------------------------------------- */

struct client {
	int fd;
	const uint8_t *data;
	size_t len;
	bool hang_up;		/* close as soon as all is written */
};

/*
 * Writes the input, reading replies meanwhile (the shim may not read more
 * until it has sent them), then reads the rest until the shim closes, or
 * hangs up at once.
 */
static void *client_run(void *arg)
{
	struct client *cl = arg;
	struct pollfd pfd = { .fd = cl->fd };
	static uint8_t sink[256 << 10];	/* one client at a time */
	size_t off = 0;
	ssize_t n;

	if (!cl->len && cl->hang_up)
		goto out;
	if (!cl->len)
		shutdown(cl->fd, SHUT_WR);
	for (;;) {
		pfd.events = POLLIN | (off < cl->len ? POLLOUT : 0);
		if (poll(&pfd, 1, -1) < 0) {
			FUZZ_CHECK(errno == EINTR);
			continue;
		}
		if (off < cl->len && (pfd.revents & (POLLOUT | POLLERR))) {
			n = send(cl->fd, cl->data + off, cl->len - off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0)
				off += n;
			else if (n < 0 && errno != EAGAIN && errno != EINTR)
				off = cl->len;	/* the shim hung up */
			if (off == cl->len && cl->hang_up)
				break;
			if (off == cl->len)
				shutdown(cl->fd, SHUT_WR);
		}
		if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
			n = recv(cl->fd, sink, sizeof(sink), MSG_DONTWAIT);
			if (!n || (n < 0 && errno != EAGAIN && errno != EINTR))
				break;
		}
	}
out:
	close(cl->fd);
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct client cl;
	pthread_attr_t attr;
	struct checked *ck;
	struct shim *s;
	struct peer *c;
	pthread_t th;
	int sv[2];

	if (!size)
		return 0;
	s = shim_get(data[0] & 7);
	ck = (struct checked *)s->srv.exp.st;
	ck->no_peek = data[0] & 8;
	ck->fail_every = data[0] >> 5;
	ck->ops = 0;
	peer_spin_us = s->cfg.poll_us >= 0 ? s->cfg.poll_us :
		       s->srv.prof->default_poll_us;
	FUZZ_CHECK(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	cl.fd = sv[0];
	cl.data = data + 1;
	cl.len = size - 1;
	cl.hang_up = data[0] & 16;
	/*
	 * A small stack: ASan clears the shadow of a thread's whole stack
	 * when it starts and ends, and 8 MiB of it cost more than the rest.
	 */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	FUZZ_CHECK(!pthread_create(&th, &attr, client_run, &cl));
	pthread_attr_destroy(&attr);

	/* server.c's server_accept() and peer_thread(), on this thread. */
	c = malloc(sizeof(*c));
	FUZZ_CHECK(!peer_init(c, sv[1], &s->srv));
	c->exp = &s->srv.exp;
	c->prof = s->srv.prof;
	snprintf(c->peer, sizeof(c->peer), "fuzz connection");
	if (!s->srv.prof->negotiate(c))
		transmit(c);
	if (c->holds_export)
		export_unlock(&s->srv.exp);
	FUZZ_CHECK(!s->srv.exp.busy);
	peer_free(c);
	free(c);
	close(sv[1]);
	pthread_join(th, NULL);
	return 0;
}
