/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Attaching a TCMU ring to a handler over a Unix socket, no I/O. With no
 * kernel, the engine plays the kernel's side: it lays out the region in a
 * memfd and hands it to the handler host with two eventfds that stand in
 * for the UIO fd's two directions. One request (with the three fds as
 * SCM_RIGHTS, in this order) and one reply; then the socket stays open
 * and its closing detaches the ring.
 *
 * Request, 32 bytes:  magic[16] version:u32 flags:u32 region_size:u64
 * Reply, 256 bytes:   magic[16] version:u32 status:u32 message[232]
 * Integers are little-endian. status is 0 or a positive errno, and the
 * message (NUL-terminated) then says what the handler refused and why.
 *
 * Version 2 adds one ring per device, shared by its submitters, as the
 * kernel has one per TCMU device: flags then holds the request's kind.
 * TCMU_ATTACH_PRIVATE is version 1's (three fds, a ring of its own);
 * TCMU_ATTACH_SHARED carries a fourth fd, the submitters' state (memfd),
 * and the handler host either takes the four as the device's ring (the
 * first submitter) or joins this one to the ring it serves: it keeps the
 * done eventfd only, and answers with the ring's region, kick and state
 * fds (SCM_RIGHTS, in enum tcmu_attach_fd's order).
 * Reply, version 2:    magic[16] version:u32 status:u32 flags:u32
 *                      submitters:u32 region_size:u64 message[216]
 * flags TCMU_REPLY_JOINED says the fds came; submitters counts them with
 * this one. flags' second byte, when not 0, is the submitter's wake tag:
 * it puts it in the kflags of every command entry it queues, and the host
 * then writes its done eventfd only after passes that completed one of
 * them (an untagged command wakes every submitter). A version 1 request
 * gets a version 1 reply.
 *
 * The doorbell (tcmu_doorbell.h): a client may make the region's memfd
 * longer than region_size, to tcmu_doorbell_off(region_size) +
 * TCMU_DOORBELL_SIZE. A host that finds it so keeps the page's flag
 * (whether its ring thread may be asleep) and sets TCMU_REPLY_DOORBELL in
 * a version 2 reply, a join's included (the region's fd then carries the
 * page); the client then writes the kick eventfd only when the flag is
 * set. Without the flag in the reply the client kicks every time, so
 * hosts and clients of either kind work together.
 *
 * The host's hello, 20 bytes:  magic[16] version:u32 (the highest it serves)
 * A TCMU client speaks first and an NBD client waits for its server to, so
 * a host that has had nothing from a new connection within
 * TCMU_ATTACH_HELLO_MS sends its hello: an NBD client given the socket
 * then learns at once that it is not an NBD server. The engine sends its
 * request as it connects, so does not normally see a hello; when it does
 * (it was slow to send), the reply follows it. The three magics differ in
 * their first 16 bytes: tcmu_attach_magic() tells them apart.
 */
#ifndef TORUS_TCMU_ATTACH_H
#define TORUS_TCMU_ATTACH_H

#include <stddef.h>
#include <stdint.h>

#define TCMU_ATTACH_VERSION	2
#define TCMU_ATTACH_V1		1
#define TCMU_ATTACH_REQ_LEN	32
#define TCMU_ATTACH_REPLY_LEN	256
#define TCMU_ATTACH_MSG_MAX	232
#define TCMU_ATTACH_MAGIC_LEN	16
#define TCMU_ATTACH_HELLO_LEN	20
#define TCMU_ATTACH_HELLO_MS	100

/* The fds that ride with the request, as SCM_RIGHTS, in this order. */
enum tcmu_attach_fd {
	TCMU_FD_REGION,		/* memfd: mailbox, command ring, data area */
	TCMU_FD_KICK,		/* eventfd: cmd_head moved (the UIO event) */
	TCMU_FD_DONE,		/* eventfd: cmd_tail moved (the UIO write) */
	TCMU_ATTACH_NFDS,
	TCMU_FD_STATE = TCMU_ATTACH_NFDS, /* memfd: submitters' state */
	TCMU_SHARED_NFDS,
};

/* Version 2's kinds of request (flags). */
enum tcmu_attach_kind {
	TCMU_ATTACH_PRIVATE,
	TCMU_ATTACH_SHARED,
};

#define TCMU_REPLY_JOINED	1u
#define TCMU_REPLY_DOORBELL	2u	/* the host keeps the doorbell */
/* Wake tags: 1..TCMU_TAG_MAX, one per submitter of a shared ring. */
#define TCMU_TAG_MAX		64u

struct tcmu_attach_req {
	uint32_t version;
	uint32_t flags;		/* version 1: 0; 2: enum tcmu_attach_kind */
	uint64_t region_size;	/* bytes of the memfd to map */
};

struct tcmu_attach_reply {
	uint32_t version;
	uint32_t status;	/* 0 or a positive errno */
	uint32_t flags;		/* version 2: TCMU_REPLY_* */
	uint32_t submitters;	/* version 2: the ring's, this one included */
	uint8_t tag;		/* version 2, shared: this one's, or 0 */
	uint64_t region_size;	/* version 2, joined: bytes of the region */
	char msg[TCMU_ATTACH_MSG_MAX];
};

void tcmu_attach_req_encode(uint8_t buf[TCMU_ATTACH_REQ_LEN],
			    const struct tcmu_attach_req *r);
/* 0, or -1 with *msg naming what is wrong with the bytes. */
int tcmu_attach_req_decode(const uint8_t *buf, size_t len,
			   struct tcmu_attach_req *r, const char **msg);

void tcmu_attach_reply_encode(uint8_t buf[TCMU_ATTACH_REPLY_LEN],
			      const struct tcmu_attach_reply *r);
/* 0, or -1 with *msg naming what is wrong; r->msg is NUL-terminated. */
int tcmu_attach_reply_decode(const uint8_t *buf, size_t len,
			     struct tcmu_attach_reply *r, const char **msg);

/* Which of the exchange's messages the first bytes open. */
enum tcmu_attach_magic {
	TCMU_MAGIC_NONE,	/* none, or fewer than 16 bytes */
	TCMU_MAGIC_REQ,
	TCMU_MAGIC_REPLY,
	TCMU_MAGIC_HELLO,
};

enum tcmu_attach_magic tcmu_attach_magic(const uint8_t *buf, size_t len);

void tcmu_attach_hello_encode(uint8_t buf[TCMU_ATTACH_HELLO_LEN],
			      uint32_t version);
/* 0, or -1 with *msg naming what is wrong with the bytes. */
int tcmu_attach_hello_decode(const uint8_t *buf, size_t len,
			     uint32_t *version, const char **msg);

struct msghdr;

/*
 * The fds that came with a message (SCM_RIGHTS): up to @max kept in @fds
 * from index *@nfds on, any more closed; *@nfds counts them all, so that
 * the caller can tell a message with too many.
 */
void tcmu_attach_take_fds(struct msghdr *msg, int *fds, int max, int *nfds);

#endif /* TORUS_TCMU_ATTACH_H */
