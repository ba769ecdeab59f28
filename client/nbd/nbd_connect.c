// SPDX-License-Identifier: GPL-2.0-only
/*
 * Opening and closing NBD connections (see nbd_connect.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nbd_connect.h"
#include "nbd_proto.h"
#include "tcmu_attach.h"
#include "torus_clock.h"

const char *nbd_uri_label(const struct nbd_uri *uri, char *buf, size_t len)
{
	if (uri->unix_socket)
		snprintf(buf, len, "nbd+unix:///%s?socket=%s",
			 uri->export_name, uri->socket);
	else if (strchr(uri->host, ':'))
		snprintf(buf, len, "nbd://[%s]:%s/%s", uri->host, uri->port,
			 uri->export_name);
	else
		snprintf(buf, len, "nbd://%s:%s/%s", uri->host, uri->port,
			 uri->export_name);
	return buf;
}

/* Waits are cut into slices so that a stop request is seen quickly. */
#define WAIT_SLICE_MS	100

/*
 * Waits for events on fd until the deadline (0: none). Returns 0, or
 * -ETIMEDOUT, or -EINTR when the job was told to stop.
 */
static int wait_fd(int fd, short events, const struct nbd_connect_limits *lim,
		   uint64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	uint64_t now;
	int ms, ret;

	for (;;) {
		if (lim->stop && *lim->stop)
			return -EINTR;
		ms = WAIT_SLICE_MS;
		if (deadline) {
			now = now_ms();
			if (now >= deadline)
				return -ETIMEDOUT;
			if (deadline - now < (uint64_t)ms)
				ms = deadline - now;
		}
		ret = poll(&pfd, 1, ms);
		if (ret > 0)
			return 0;
		if (ret < 0 && errno != EINTR)
			return -errno;
	}
}

/* Connects the non-blocking socket fd; 0 or -errno. */
static int connect_fd(int fd, const struct sockaddr *sa, socklen_t salen,
		      const struct nbd_connect_limits *lim, uint64_t deadline)
{
	socklen_t len = sizeof(int);
	int ret, soerr = 0;

	if (!connect(fd, sa, salen))
		return 0;
	if (errno != EINPROGRESS && errno != EAGAIN)
		return -errno;
	ret = wait_fd(fd, POLLOUT, lim, deadline);
	if (ret)
		return ret;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		return -errno;
	return -soerr;
}

static void connect_failed(const char *what, int ret,
			   const struct nbd_connect_limits *lim, char *err,
			   size_t errlen)
{
	if (ret == -ETIMEDOUT && lim->timeout_s)
		snprintf(err, errlen,
			 "cannot connect to %s: no answer within %u s (request_timeout=%u; is the address right?)",
			 what, lim->timeout_s, lim->timeout_s);
	else if (ret == -EINTR)
		snprintf(err, errlen, "connecting to %s: interrupted", what);
	else
		snprintf(err, errlen,
			 "cannot connect to %s: %s (is the NBD server running?)",
			 what, strerror(-ret));
}

static int open_unix(const struct nbd_uri *uri,
		     const struct nbd_connect_limits *lim, uint64_t deadline,
		     char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char what[200];
	int fd, ret;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	memcpy(sun.sun_path, uri->socket, strlen(uri->socket));
	ret = connect_fd(fd, (struct sockaddr *)&sun, sizeof(sun), lim,
			 deadline);
	if (ret) {
		snprintf(what, sizeof(what), "Unix socket %s", uri->socket);
		connect_failed(what, ret, lim, err, errlen);
		close(fd);
		return -1;
	}
	return fd;
}

static int open_tcp(const struct nbd_uri *uri,
		    const struct nbd_connect_limits *lim, uint64_t deadline,
		    char *err, size_t errlen)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	};
	struct addrinfo *res, *ai;
	int fd = -1, ret, saved = -ECONNREFUSED, one = 1;
	char what[320];

	ret = getaddrinfo(uri->host, uri->port, &hints, &res);
	if (ret) {
		snprintf(err, errlen, "cannot resolve host '%s': %s", uri->host,
			 gai_strerror(ret));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family,
			    ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0) {
			saved = -errno;
			continue;
		}
		saved = connect_fd(fd, ai->ai_addr, ai->ai_addrlen, lim,
				   deadline);
		if (!saved)
			break;
		close(fd);
		fd = -1;
		if (saved == -EINTR || saved == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(what, sizeof(what), "%s port %s", uri->host, uri->port);
		connect_failed(what, saved, lim, err, errlen);
		return -1;
	}
	/* Requests are batched by the engine; do not let Nagle delay them. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int open_socket(const struct nbd_uri *uri,
		       const struct nbd_connect_limits *lim, uint64_t deadline,
		       char *err, size_t errlen)
{
	return uri->unix_socket ? open_unix(uri, lim, deadline, err, errlen) :
				  open_tcp(uri, lim, deadline, err, errlen);
}

/*
 * Sends (out) or receives all of buf on the non-blocking socket, waiting
 * within the deadline. Returns 0, -ECONNRESET when the peer closed or
 * reset the connection, or another -errno.
 */
static int xfer_all(int fd, uint8_t *buf, size_t len, bool out,
		    const struct nbd_connect_limits *lim, uint64_t deadline)
{
	ssize_t n;
	int ret;

	while (len) {
		n = out ? send(fd, buf, len, MSG_NOSIGNAL) : recv(fd, buf, len, 0);
		if (n == 0 && !out)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECONNRESET || errno == EPIPE)
				return -ECONNRESET;
			if (errno != EAGAIN)
				return -errno;
			ret = wait_fd(fd, out ? POLLOUT : POLLIN, lim, deadline);
			if (ret)
				return ret;
			continue;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/* The I/O path waits in io_uring: back to a plain blocking socket. */
static void set_blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

/*
 * A TCMU handler host greets a client that waits with its hello (or, after
 * its --timeout, a refusal; tcmu_attach.h): the socket is a tcmu-shim's,
 * and the job wants the TCMU transport.
 */
static bool tcmu_host_said(const uint8_t *buf, size_t len)
{
	enum tcmu_attach_magic m = tcmu_attach_magic(buf, len);

	return m == TCMU_MAGIC_HELLO || m == TCMU_MAGIC_REPLY;
}

static void tcmu_host(const struct nbd_uri *uri, const char *label, char *err,
		      size_t errlen)
{
	snprintf(err, errlen,
		 "%s: that socket is a TCMU handler host (tcmu-shim), not an NBD server: use uri=tcmu+unix:///?socket=%s (transport=tcmu)",
		 label, uri->unix_socket ? uri->socket : "PATH");
}

int nbd_connect_export(const struct nbd_uri *uri,
		       const struct nbd_hs_config *cfg,
		       const struct nbd_connect_limits *lim,
		       struct nbd_export *exp, char *err, size_t errlen)
{
	uint64_t deadline = lim->timeout_s ?
			    now_ms() + lim->timeout_s * 1000ULL : 0;
	uint8_t *inbuf;
	struct nbd_hs hs;
	char label[512];
	int fd, ret;

	nbd_uri_label(uri, label, sizeof(label));
	/* Not static: jobs may connect concurrently with thread=1. */
	inbuf = malloc(NBD_HS_REPLY_MAX);
	if (!inbuf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	fd = open_socket(uri, lim, deadline, err, errlen);
	if (fd < 0)
		goto out_free;

	nbd_hs_start(&hs, cfg);
	for (;;) {
		if (hs.outlen) {
			ret = xfer_all(fd, hs.out, hs.outlen, true, lim,
				       deadline);
			hs.outlen = 0;
			/* A closed peer shows up here or as EOF below. */
			if (ret && ret != -ECONNRESET)
				goto io_failed;
		}
		if (hs.state == NBD_HS_DONE || hs.state == NBD_HS_FAILED)
			break;
		ret = xfer_all(fd, inbuf, hs.want, false, lim, deadline);
		if (ret == -ECONNRESET)
			nbd_hs_closed(&hs);
		else if (ret)
			goto io_failed;
		else if (hs.state == NBD_HS_MAGIC &&
			 tcmu_host_said(inbuf, hs.want)) {
			tcmu_host(uri, label, err, errlen);
			goto fail;
		} else
			nbd_hs_feed(&hs, inbuf, hs.want);
		if (hs.state == NBD_HS_RECONNECT) {
			close(fd);
			fd = open_socket(uri, lim, deadline, err, errlen);
			if (fd < 0)
				goto out_free;
			nbd_hs_restart(&hs);
		}
	}
	if (hs.state == NBD_HS_FAILED) {
		snprintf(err, errlen, "%s: %s", label, hs.errmsg);
		goto fail;
	}
	*exp = hs.exp;
	set_blocking(fd);
	free(inbuf);
	return fd;
io_failed:
	if (ret == -ETIMEDOUT)
		snprintf(err, errlen,
			 "%s: the handshake did not finish within %u s (request_timeout=%u): the server stopped answering or answers too slowly",
			 label, lim->timeout_s, lim->timeout_s);
	else if (ret == -EINTR)
		snprintf(err, errlen, "%s: interrupted during the handshake",
			 label);
	else
		snprintf(err, errlen, "%s: handshake: %s", label,
			 strerror(-ret));
fail:
	close(fd);
out_free:
	free(inbuf);
	return -1;
}

void nbd_disconnect(int fd)
{
	struct nbd_request req = { .type = NBD_CMD_DISC };
	uint8_t buf[NBD_REQUEST_LEN];
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	/* A server that stopped reading must not hold the job up. */
	struct timeval tv = { .tv_sec = 1 };

	nbd_encode_request(buf, &req);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (send(fd, buf, sizeof(buf), MSG_NOSIGNAL) == sizeof(buf)) {
		/*
		 * Wait (briefly) for the server to close its end, so that a
		 * server allowing one connection per export (coreos-torus) has let
		 * go of it before the next connection arrives.
		 */
		shutdown(fd, SHUT_WR);
		while (poll(&pfd, 1, 1000) > 0) {
			uint8_t sink[4096];

			if (recv(fd, sink, sizeof(sink), 0) <= 0)
				break;
		}
	}
	close(fd);
}
