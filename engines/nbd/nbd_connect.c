// SPDX-License-Identifier: GPL-2.0-only
/*
 * Opening and closing NBD connections (see nbd_connect.h).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "nbd_connect.h"
#include "nbd_proto.h"

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

static void set_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = NBD_CONNECT_TIMEOUT };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int open_unix(const struct nbd_uri *uri, char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	memcpy(sun.sun_path, uri->socket, strlen(uri->socket));
	set_timeouts(fd);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		snprintf(err, errlen,
			 "cannot connect to Unix socket %s: %s (is the NBD server running?)",
			 uri->socket, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int open_tcp(const struct nbd_uri *uri, char *err, size_t errlen)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	};
	struct addrinfo *res, *ai;
	int fd = -1, ret, saved = 0, one = 1;

	ret = getaddrinfo(uri->host, uri->port, &hints, &res);
	if (ret) {
		snprintf(err, errlen, "cannot resolve host '%s': %s", uri->host,
			 gai_strerror(ret));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		set_timeouts(fd);
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen,
			 "cannot connect to %s port %s: %s (is the NBD server running?)",
			 uri->host, uri->port, strerror(saved));
		return -1;
	}
	/* Requests are batched by the engine; do not let Nagle delay them. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int open_socket(const struct nbd_uri *uri, char *err, size_t errlen)
{
	return uri->unix_socket ? open_unix(uri, err, errlen) :
				  open_tcp(uri, err, errlen);
}

static int send_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/* Returns 0, -ECONNRESET for EOF or reset, or another -errno. */
static int recv_all(int fd, uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = recv(fd, buf, len, 0);

		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECONNRESET || errno == EPIPE)
				return -ECONNRESET;
			return -errno;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

int nbd_connect_export(const struct nbd_uri *uri,
		       const struct nbd_hs_config *cfg, struct nbd_export *exp,
		       char *err, size_t errlen)
{
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
	fd = open_socket(uri, err, errlen);
	if (fd < 0)
		goto out_free;

	nbd_hs_start(&hs, cfg);
	for (;;) {
		if (hs.outlen) {
			ret = send_all(fd, hs.out, hs.outlen);
			hs.outlen = 0;
			/* A closed peer shows up as EPIPE here or EOF below. */
			if (ret && ret != -EPIPE && ret != -ECONNRESET) {
				snprintf(err, errlen, "%s: send: %s", label,
					 strerror(-ret));
				goto fail;
			}
		}
		if (hs.state == NBD_HS_DONE || hs.state == NBD_HS_FAILED)
			break;
		ret = recv_all(fd, inbuf, hs.want);
		if (ret == -ECONNRESET) {
			nbd_hs_closed(&hs);
		} else if (ret == -EAGAIN || ret == -EWOULDBLOCK) {
			snprintf(err, errlen,
				 "%s: no answer from the server within %d s during the handshake",
				 label, NBD_CONNECT_TIMEOUT);
			goto fail;
		} else if (ret) {
			snprintf(err, errlen, "%s: recv: %s", label,
				 strerror(-ret));
			goto fail;
		} else {
			nbd_hs_feed(&hs, inbuf, hs.want);
		}
		if (hs.state == NBD_HS_RECONNECT) {
			close(fd);
			fd = open_socket(uri, err, errlen);
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
	/* The I/O path has its own timeouts: return to plain blocking. */
	{
		struct timeval tv = { 0 };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	free(inbuf);
	return fd;
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

	nbd_encode_request(buf, &req);
	if (!send_all(fd, buf, sizeof(buf))) {
		/*
		 * Wait (briefly) for the server to close its end, so that a
		 * server allowing one connection per export (torus) has let
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
