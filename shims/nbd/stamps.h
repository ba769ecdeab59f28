/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --timeline: a record per NBD request of a connection (the cookie as the
 * client sent it, its offset, length and command), with four stamps:
 *
 *   received  the receive that brought its last byte (header and payload)
 *   started   handed to the profile to execute (after any send that the
 *             execution made first: those are earlier replies' time)
 *   stored    the profile (its stores) finished it, its reply queued
 *   replied   just before the send that carries its reply's last byte
 *             (the client may read the reply before that send returns)
 *
 * Replies wait in the peer's send queue, so a record waits with them, in
 * a queue allocated when the connection opens, and is written out when
 * its reply has gone. NBD_CMD_DISC has no reply and no record.
 */
#ifndef SHIM_STAMPS_H
#define SHIM_STAMPS_H

#include <stdbool.h>

#include "nbd_proto.h"

struct peer;

enum {
	ST_RECEIVED,
	ST_STARTED,
	ST_STORED,
	ST_REPLIED,
	ST_COUNT,
};

/* Records that wait for their replies at most; older ones go unstamped. */
#define ST_PENDING_MAX	4096

/* When the connection starts: c->tl stays NULL when --timeline is off. */
void stamps_open(struct peer *c);
/* When it ends: what is still waiting is written without replied. */
void stamps_close(struct peer *c);

/*
 * The request read (after its payload); @execute: it goes to the profile
 * (started now), else it is refused with an error reply.
 */
void stamps_begin(struct peer *c, const struct nbd_request *req,
		  bool execute);
/* Its reply is queued (@queued), or there is none: the connection ends. */
void stamps_end(struct peer *c, bool queued);
/*
 * peer_send_prefix() sent iov[0, @k): their records are replied at
 * @replied, read before the send began.
 */
void stamps_sent(struct peer *c, int k, uint64_t replied);

#endif /* SHIM_STAMPS_H */
