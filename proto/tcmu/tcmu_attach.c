// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU attach exchange (see tcmu_attach.h).
 */
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcmu_attach.h"

void tcmu_attach_take_fds(struct msghdr *msg, int *fds, int max, int *nfds)
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
			if (*nfds < max)
				fds[*nfds] = fd;
			else
				close(fd);
			(*nfds)++;
		}
	}
}

/* All 16 bytes with the NUL: a stray client reads as a bad magic. */
static const char req_magic[16] = "TORUS-TCMU-RING";
static const char reply_magic[16] = "TORUS-TCMU-ACK.";
static const char hello_magic[16] = "TORUS-TCMU-HOST";

enum tcmu_attach_magic tcmu_attach_magic(const uint8_t *buf, size_t len)
{
	if (len < TCMU_ATTACH_MAGIC_LEN)
		return TCMU_MAGIC_NONE;
	if (!memcmp(buf, req_magic, 16))
		return TCMU_MAGIC_REQ;
	if (!memcmp(buf, reply_magic, 16))
		return TCMU_MAGIC_REPLY;
	if (!memcmp(buf, hello_magic, 16))
		return TCMU_MAGIC_HELLO;
	return TCMU_MAGIC_NONE;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static uint32_t get32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

void tcmu_attach_hello_encode(uint8_t buf[TCMU_ATTACH_HELLO_LEN],
			      uint32_t version)
{
	memcpy(buf, hello_magic, 16);
	put32(buf + 16, version);
}

int tcmu_attach_hello_decode(const uint8_t *buf, size_t len,
			     uint32_t *version, const char **msg)
{
	if (len != TCMU_ATTACH_HELLO_LEN ||
	    tcmu_attach_magic(buf, len) != TCMU_MAGIC_HELLO) {
		*msg = "not a TCMU handler host's hello";
		return -1;
	}
	*version = get32(buf + 16);
	/* Any version: it only says what the host serves at most. */
	return 0;
}

void tcmu_attach_req_encode(uint8_t buf[TCMU_ATTACH_REQ_LEN],
			    const struct tcmu_attach_req *r)
{
	memcpy(buf, req_magic, 16);
	put32(buf + 16, r->version);
	put32(buf + 20, r->flags);
	put32(buf + 24, (uint32_t)r->region_size);
	put32(buf + 28, (uint32_t)(r->region_size >> 32));
}

int tcmu_attach_req_decode(const uint8_t *buf, size_t len,
			   struct tcmu_attach_req *r, const char **msg)
{
	if (len != TCMU_ATTACH_REQ_LEN || memcmp(buf, req_magic, 16)) {
		*msg = "not a TCMU attach request (is the client this project's engine?)";
		return -1;
	}
	r->version = get32(buf + 16);
	r->flags = get32(buf + 20);
	r->region_size = get32(buf + 24) | (uint64_t)get32(buf + 28) << 32;
	if (r->version != TCMU_ATTACH_VERSION &&
	    r->version != TCMU_ATTACH_V1) {
		*msg = "attach protocol version not supported (engine and handler host are from different builds)";
		return -1;
	}
	if (r->version == TCMU_ATTACH_V1 ? r->flags != 0 :
	    r->flags > TCMU_ATTACH_SHARED) {
		*msg = "unknown attach flags";
		return -1;
	}
	return 0;
}

/* Where the message starts, and its room, in a reply of this version. */
static size_t msg_off(uint32_t version)
{
	return version == TCMU_ATTACH_V1 ? 24 : 40;
}

void tcmu_attach_reply_encode(uint8_t buf[TCMU_ATTACH_REPLY_LEN],
			      const struct tcmu_attach_reply *r)
{
	size_t off = msg_off(r->version), room = TCMU_ATTACH_REPLY_LEN - off;
	size_t n = strnlen(r->msg, room - 1);

	memcpy(buf, reply_magic, 16);
	put32(buf + 16, r->version);
	put32(buf + 20, r->status);
	memset(buf + 24, 0, TCMU_ATTACH_REPLY_LEN - 24);
	if (r->version != TCMU_ATTACH_V1) {
		put32(buf + 24, (r->flags & ~0xff00u) | (uint32_t)r->tag << 8);
		put32(buf + 28, r->submitters);
		put32(buf + 32, (uint32_t)r->region_size);
		put32(buf + 36, (uint32_t)(r->region_size >> 32));
	}
	memcpy(buf + off, r->msg, n);
}

int tcmu_attach_reply_decode(const uint8_t *buf, size_t len,
			     struct tcmu_attach_reply *r, const char **msg)
{
	size_t off;

	if (len != TCMU_ATTACH_REPLY_LEN || memcmp(buf, reply_magic, 16)) {
		*msg = "not a TCMU handler host's reply (is the socket a tcmu-shim's?)";
		return -1;
	}
	r->version = get32(buf + 16);
	r->status = get32(buf + 20);
	/* A C string whatever comes next. */
	r->msg[0] = r->msg[TCMU_ATTACH_MSG_MAX - 1] = '\0';
	if (r->version != TCMU_ATTACH_VERSION &&
	    r->version != TCMU_ATTACH_V1) {
		*msg = "attach protocol version not supported (engine and handler host are from different builds)";
		return -1;
	}
	off = msg_off(r->version);
	r->flags = r->submitters = 0;
	r->tag = 0;
	r->region_size = 0;
	if (r->version != TCMU_ATTACH_V1) {
		r->flags = get32(buf + 24);
		r->tag = r->flags >> 8;
		r->flags &= ~0xff00u;
		r->submitters = get32(buf + 28);
		r->region_size = get32(buf + 32) |
				 (uint64_t)get32(buf + 36) << 32;
	}
	memcpy(r->msg, buf + off, TCMU_ATTACH_REPLY_LEN - off);
	r->msg[TCMU_ATTACH_REPLY_LEN - off - 1] = '\0';
	return 0;
}
