// SPDX-License-Identifier: GPL-2.0-only
/*
 * Attaching a ring over the socket and serving it (see attach.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach.h"
#include "log.h"
#include "ring.h"
#include "tcmu_attach.h"
#include "torus_clock.h"

struct client {
	int sock;
	int fds[TCMU_ATTACH_NFDS];
	int nfds;
	char name[64];
	uint8_t *region;
	uint64_t region_size;
};

/* Keep the first three fds that came with the request, close any more. */
static void take_fds(struct client *c, struct msghdr *msg)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		size_t n, i;
		int fd;

		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
			if (c->nfds < TCMU_ATTACH_NFDS)
				c->fds[c->nfds] = fd;
			else
				close(fd);
			c->nfds++;
		}
	}
}

/* The 32-byte request and its fds, within the timeout: 0 or -errno. */
static int recv_request(struct client *c, uint8_t *buf, unsigned int timeout_s)
{
	uint64_t deadline = timeout_s ? now_ns() + timeout_s * 1000000000ull : 0;
	size_t got = 0;

	while (got < TCMU_ATTACH_REQ_LEN) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * 8)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {
			.iov_base = buf + got,
			.iov_len = TCMU_ATTACH_REQ_LEN - got,
		};
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctl.buf,
			.msg_controllen = sizeof(ctl.buf),
		};
		struct pollfd pfd = { .fd = c->sock, .events = POLLIN };
		int ms = -1;
		ssize_t n;

		if (deadline) {
			uint64_t now = now_ns();

			if (now >= deadline)
				return -ETIMEDOUT;
			ms = (deadline - now + 999999) / 1000000;
		}
		n = poll(&pfd, 1, ms);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		n = recvmsg(c->sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		take_fds(c, &msg);
		if (n == 0)
			return -ECONNRESET;
		got += n;
	}
	return 0;
}

static void send_reply(struct client *c, int status, const char *msg)
{
	struct tcmu_attach_reply rep = {
		.version = TCMU_ATTACH_VERSION,
		.status = status,
	};
	uint8_t buf[TCMU_ATTACH_REPLY_LEN];

	snprintf(rep.msg, sizeof(rep.msg), "%s", msg);
	tcmu_attach_reply_encode(buf, &rep);
	/* 256 bytes into a fresh socket's empty buffer: all or nothing. */
	if (send(c->sock, buf, sizeof(buf), MSG_NOSIGNAL) != sizeof(buf))
		shim_debug("%s: the reply did not go out: %s", c->name,
			   strerror(errno));
}

/* Refuse the ring: the client reads why, our log says it too. */
static void refuse(struct client *c, int status, const char *msg)
{
	shim_err("%s: attach refused: %s", c->name, msg);
	send_reply(c, status, msg);
}

static bool is_eventfd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return true;	/* no /proc: let the first read tell */
	target[n] = '\0';
	return !strcmp(target, "anon_inode:[eventfd]");
}

/* The request, the fds and the region: 0, or -1 after refusing. */
static int check_and_map(struct client *c, const uint8_t *buf)
{
	struct tcmu_attach_req req;
	char msg[TCMU_ATTACH_MSG_MAX];
	const char *why;
	struct stat st;

	if (tcmu_attach_req_decode(buf, TCMU_ATTACH_REQ_LEN, &req, &why)) {
		refuse(c, EPROTO, why);
		return -1;
	}
	if (c->nfds != TCMU_ATTACH_NFDS) {
		snprintf(msg, sizeof(msg),
			 "the attach request carried %d fds; it needs 3 (the region's memfd, the kick eventfd, the done eventfd)",
			 c->nfds);
		refuse(c, EINVAL, msg);
		return -1;
	}
	if (!is_eventfd(c->fds[TCMU_FD_KICK]) ||
	    !is_eventfd(c->fds[TCMU_FD_DONE])) {
		refuse(c, EINVAL,
		       "the second and third fds of the attach request must be eventfds (kick, done)");
		return -1;
	}
	if (fstat(c->fds[TCMU_FD_REGION], &st)) {
		snprintf(msg, sizeof(msg), "cannot stat the region's fd: %s",
			 strerror(errno));
		refuse(c, errno, msg);
		return -1;
	}
	if (req.region_size < TCMU_MB_SIZE ||
	    (uint64_t)st.st_size < req.region_size) {
		snprintf(msg, sizeof(msg),
			 "the region is %llu bytes but the request says %llu (at least %u)",
			 (unsigned long long)st.st_size,
			 (unsigned long long)req.region_size, TCMU_MB_SIZE);
		refuse(c, EINVAL, msg);
		return -1;
	}
	c->region = mmap(NULL, req.region_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, c->fds[TCMU_FD_REGION], 0);
	if (c->region == MAP_FAILED) {
		c->region = NULL;
		snprintf(msg, sizeof(msg), "cannot map the %llu-byte region: %s",
			 (unsigned long long)req.region_size, strerror(errno));
		refuse(c, errno, msg);
		return -1;
	}
	c->region_size = req.region_size;
	return 0;
}

/* After the ring stopped on the socket: a close, or bytes we never expect. */
static void socket_event(struct client *c)
{
	char b;
	ssize_t n = recv(c->sock, &b, 1, MSG_DONTWAIT | MSG_PEEK);

	if (n > 0)
		shim_err("%s: the client sent bytes after attaching; detaching",
			 c->name);
	else
		shim_debug("%s: the client closed its socket: detached",
			   c->name);
}

static void serve(struct client *c, const struct scsi_target *t,
		  struct backend *be)
{
	char err[256] = "";
	struct backend *sess;
	struct ring ring;
	int ret;

	sess = backend_session(be, err, sizeof(err));
	if (!sess) {
		refuse(c, EIO, err);
		return;
	}
	ret = ring_init(&ring, c->name, c->region, c->region_size, t, sess,
			err, sizeof(err));
	if (ret) {
		refuse(c, -ret, err);
		goto out;
	}
	ring.wait_fd = c->fds[TCMU_FD_KICK];
	ring.notify_fd = c->fds[TCMU_FD_DONE];
	send_reply(c, 0, "attached");
	shim_debug("%s: attached (%llu-byte region, ring %u bytes)", c->name,
		   (unsigned long long)c->region_size, ring.hdl.cmdr_size);

	ret = ring_run(&ring, c->sock);
	if (ret == 1)
		socket_event(c);
	else if (ret == -EPROTO)
		shim_err("%s: the client broke the ring (an entry or cmd_head that cannot be walked); detaching",
			 c->name);
	else
		shim_err("%s: waiting on or waking the client failed: %s; detaching",
			 c->name, strerror(-ret));
	ring_report(&ring);
	ring_free(&ring);
out:
	if (sess != be)
		backend_close(sess);
}

void attach_serve(int sock, unsigned long id, const struct shim_config *cfg,
		  const struct scsi_target *t, struct backend *be)
{
	uint8_t buf[TCMU_ATTACH_REQ_LEN];
	struct client c = { .sock = sock };
	int i, ret;

	snprintf(c.name, sizeof(c.name), "ring %lu", id);
	for (i = 0; i < TCMU_ATTACH_NFDS; i++)
		c.fds[i] = -1;
	ret = recv_request(&c, buf, cfg->timeout_s);
	if (ret == -ECONNRESET)
		shim_debug("%s: closed before attaching", c.name);
	else if (ret == -ETIMEDOUT)
		refuse(&c, ETIMEDOUT,
		       "no complete attach request within --timeout");
	else if (ret)
		shim_err("%s: reading the attach request: %s", c.name,
			 strerror(-ret));
	else if (!check_and_map(&c, buf))
		serve(&c, t, be);

	if (c.region)
		munmap(c.region, c.region_size);
	for (i = 0; i < TCMU_ATTACH_NFDS && i < c.nfds; i++)
		close(c.fds[i]);
}
