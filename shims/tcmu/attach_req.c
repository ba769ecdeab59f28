// SPDX-License-Identifier: GPL-2.0-only
/*
 * A client's attach request (see attach_req.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach_req.h"
#include "log.h"
#include "tcmu_ring.h"
#include "torus_clock.h"

/* A client silent for TCMU_ATTACH_HELLO_MS is told what this socket is. */
static void send_hello(struct client *c)
{
	uint8_t buf[TCMU_ATTACH_HELLO_LEN];

	tcmu_attach_hello_encode(buf, TCMU_ATTACH_VERSION);
	c->helloed = true;
	if (send(c->sock, buf, sizeof(buf), MSG_NOSIGNAL) != sizeof(buf))
		shim_debug("%s: the hello did not go out: %s", c->name,
			   strerror(errno));
	else
		shim_debug("%s: nothing from the client within %u ms: sent the host's hello",
			   c->name, TCMU_ATTACH_HELLO_MS);
}

/*
 * The 32-byte request and its fds, within the timeout: 0, -EPROTO as soon
 * as its first 16 bytes are not the request's magic, or another -errno.
 */
static int recv_request(struct client *c, uint8_t *buf, unsigned int timeout_s)
{
	uint64_t start = now_ns();
	uint64_t deadline = timeout_s ? start + timeout_s * 1000000000ull : 0;
	uint64_t hello = start + TCMU_ATTACH_HELLO_MS * 1000000ull;

	while (c->got < TCMU_ATTACH_REQ_LEN) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * 8)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {
			.iov_base = buf + c->got,
			.iov_len = TCMU_ATTACH_REQ_LEN - c->got,
		};
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctl.buf,
			.msg_controllen = sizeof(ctl.buf),
		};
		struct pollfd pfd = { .fd = c->sock, .events = POLLIN };
		uint64_t now = now_ns(), until = deadline;
		int ms = -1;
		ssize_t n;

		if (deadline && now >= deadline)
			return -ETIMEDOUT;
		if (!c->got && !c->helloed) {
			if (now >= hello) {
				send_hello(c);
				continue;
			}
			if (!until || hello < until)
				until = hello;
		}
		if (until)
			ms = (until - now + 999999) / 1000000;
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
		tcmu_attach_take_fds(&msg, c->fds, TCMU_SHARED_NFDS, &c->nfds);
		if (n == 0)
			return -ECONNRESET;
		c->got += n;
		if (c->got >= TCMU_ATTACH_MAGIC_LEN &&
		    tcmu_attach_magic(buf, c->got) != TCMU_MAGIC_REQ)
			return -EPROTO;
	}
	return 0;
}

void attach_reply(struct client *c, int status, const char *msg)
{
	struct tcmu_attach_reply rep = {
		.version = c->version,
		.status = status,
		.flags = !status && c->bell ? TCMU_REPLY_DOORBELL : 0,
	};
	uint8_t buf[TCMU_ATTACH_REPLY_LEN];

	snprintf(rep.msg, sizeof(rep.msg), "%s", msg);
	tcmu_attach_reply_encode(buf, &rep);
	/* 256 bytes into a fresh socket's empty buffer: all or nothing. */
	if (send(c->sock, buf, sizeof(buf), MSG_NOSIGNAL) != sizeof(buf))
		shim_debug("%s: the reply did not go out: %s", c->name,
			   strerror(errno));
}

void attach_refuse(struct client *c, int status, const char *msg)
{
	shim_err("%s: attach refused: %s", c->name, msg);
	attach_reply(c, status, msg);
}

/* Up to 16 bytes as a quoted C string, for the log. */
static void show_bytes(const uint8_t *buf, size_t len, char *out, size_t size)
{
	size_t i, o = 0;

	o += snprintf(out + o, size - o, "\"");
	for (i = 0; i < len && i < TCMU_ATTACH_MAGIC_LEN && o < size; i++) {
		uint8_t b = buf[i];

		if (b == '"' || b == '\\')
			o += snprintf(out + o, size - o, "\\%c", b);
		else if (b >= 0x20 && b < 0x7f)
			o += snprintf(out + o, size - o, "%c", b);
		else
			o += snprintf(out + o, size - o, "\\x%02x", b);
	}
	if (o < size)
		snprintf(out + o, size - o, "\"%s", len > i ? "..." : "");
}

/*
 * A peer that is not a TCMU client: say what it sent (nothing, for an NBD
 * client, which closes on the hello) and that its connection is closed.
 */
static void stranger(struct client *c, const uint8_t *buf, bool closed)
{
	char seen[80];

	if (!c->got) {
		shim_err("%s: not a TCMU client: it sent nothing in %u ms, had the host's hello and closed the connection (an NBD client? a job on this socket needs uri=tcmu+unix:///?socket=PATH)",
			 c->name, TCMU_ATTACH_HELLO_MS);
		return;
	}
	show_bytes(buf, c->got, seen, sizeof(seen));
	shim_err("%s: not a TCMU client: it sent %s (%zu bytes), not an attach request; %s",
		 c->name, seen, c->got,
		 closed ? "it closed the connection" : "refused and closed");
	if (!closed)
		attach_reply(c, EPROTO, "not a TCMU attach request (is the client this project's engine?)");
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

/*
 * The doorbell's page, when the client made the memfd long enough for it
 * (tcmu_attach.h); without it, or when it cannot be mapped, the client is
 * not told of one and kicks every time.
 */
static void map_bell(struct client *c, uint64_t fd_size)
{
	uint64_t off = tcmu_doorbell_off(c->region_size);
	void *p;

	if (c->version == TCMU_ATTACH_V1 || fd_size < off ||
	    fd_size - off < TCMU_DOORBELL_SIZE)
		return;
	p = mmap(NULL, TCMU_DOORBELL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 c->fds[TCMU_FD_REGION], off);
	if (p == MAP_FAILED) {
		shim_debug("%s: the doorbell's page cannot be mapped (%s): the client will kick every time",
			   c->name, strerror(errno));
		return;
	}
	c->bell = p;
}

void attach_bell_unmap(struct tcmu_doorbell *bell)
{
	if (bell)
		munmap(bell, TCMU_DOORBELL_SIZE);
}

/* The request, the fds and the region: 0, or -1 after refusing. */
static int check_and_map(struct client *c, const uint8_t *buf)
{
	struct tcmu_attach_req req;
	char msg[TCMU_ATTACH_MSG_MAX];
	const char *why;
	struct stat st;

	if (tcmu_attach_req_decode(buf, TCMU_ATTACH_REQ_LEN, &req, &why)) {
		attach_refuse(c, EPROTO, why);
		return -1;
	}
	c->version = req.version;
	c->kind = req.version == TCMU_ATTACH_V1 ? TCMU_ATTACH_PRIVATE :
		  req.flags;
	if (c->kind == TCMU_ATTACH_SHARED && c->nfds != TCMU_SHARED_NFDS) {
		snprintf(msg, sizeof(msg),
			 "the shared-ring attach request carried %d fds; it needs 4 (the region's memfd, the kick eventfd, the done eventfd, the submitters' state memfd)",
			 c->nfds);
		attach_refuse(c, EINVAL, msg);
		return -1;
	}
	if (c->kind == TCMU_ATTACH_PRIVATE && c->nfds != TCMU_ATTACH_NFDS) {
		snprintf(msg, sizeof(msg),
			 "the attach request carried %d fds; it needs 3 (the region's memfd, the kick eventfd, the done eventfd)",
			 c->nfds);
		attach_refuse(c, EINVAL, msg);
		return -1;
	}
	if (!is_eventfd(c->fds[TCMU_FD_KICK]) ||
	    !is_eventfd(c->fds[TCMU_FD_DONE])) {
		attach_refuse(c, EINVAL,
			      "the second and third fds of the attach request must be eventfds (kick, done)");
		return -1;
	}
	if (fstat(c->fds[TCMU_FD_REGION], &st)) {
		snprintf(msg, sizeof(msg), "cannot stat the region's fd: %s",
			 strerror(errno));
		attach_refuse(c, errno, msg);
		return -1;
	}
	if (req.region_size < TCMU_MB_SIZE ||
	    (uint64_t)st.st_size < req.region_size) {
		snprintf(msg, sizeof(msg),
			 "the region is %llu bytes but the request says %llu (at least %u)",
			 (unsigned long long)st.st_size,
			 (unsigned long long)req.region_size, TCMU_MB_SIZE);
		attach_refuse(c, EINVAL, msg);
		return -1;
	}
	c->region = mmap(NULL, req.region_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, c->fds[TCMU_FD_REGION], 0);
	if (c->region == MAP_FAILED) {
		c->region = NULL;
		snprintf(msg, sizeof(msg), "cannot map the %llu-byte region: %s",
			 (unsigned long long)req.region_size, strerror(errno));
		attach_refuse(c, errno, msg);
		return -1;
	}
	c->region_size = req.region_size;
	map_bell(c, st.st_size);
	return 0;
}

int attach_take_request(struct client *c, unsigned int timeout_s)
{
	uint8_t buf[TCMU_ATTACH_REQ_LEN];
	int ret;

	ret = recv_request(c, buf, timeout_s);
	if (ret == -EPROTO)
		stranger(c, buf, false);
	else if (ret == -ECONNRESET &&
		 (c->got ? c->got < TCMU_ATTACH_MAGIC_LEN : c->helloed))
		stranger(c, buf, true);
	else if (ret == -ECONNRESET)
		shim_debug("%s: closed before attaching", c->name);
	else if (ret == -ETIMEDOUT)
		attach_refuse(c, ETIMEDOUT,
			      "no complete attach request within --timeout");
	else if (ret)
		shim_err("%s: reading the attach request: %s", c->name,
			 strerror(-ret));
	else
		return check_and_map(c, buf);
	return -1;
}
