/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A profile is the behaviour of one NBD server over the common connection
 * loop (transmit.c): its handshake, which requests it accepts and how it
 * answers them, and whether replies are batched or sent one by one.
 */
#ifndef SHIM_PROFILE_H
#define SHIM_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "nbd_proto.h"

struct peer;

/* Results of profile->request. */
#define REQ_NEXT	0		/* go on with the next request */
#define REQ_DISC	1		/* the client disconnected cleanly */
#define REQ_CLOSE	(-1)		/* drop the connection */

struct profile {
	const char *name;
	const char *default_export;
	uint32_t default_block_size;	/* --block-size default */
	uint32_t max_payload;		/* larger WRITE: connection closed */
	bool pipelined;			/* replies batched, else one by one */
	unsigned int default_poll_us;	/* --poll-us default */

	/* Options phase: 0 enters transmission, -1 closes the connection. */
	int (*negotiate)(struct peer *c);
	/*
	 * Before any payload is read: 0 to execute, REQ_CLOSE to drop the
	 * connection, or a positive NBD error to skip the payload and reply
	 * with it.
	 */
	int (*check)(struct peer *c, const struct nbd_request *req);
	/* Execute one request and queue its reply: a REQ_* value. */
	int (*request)(struct peer *c, const struct nbd_request *req,
		       const uint8_t *payload);
};

extern const struct profile profile_coreos;
extern const struct profile profile_zeroos;
extern const struct profile profile_standard;

const struct profile *profile_find(const char *name);

/* The transmission phase (transmit.c): returns when the connection ends. */
int transmit(struct peer *c);

#endif /* SHIM_PROFILE_H */
