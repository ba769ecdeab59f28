/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Transmission replies queued on a connection, shared by the profiles.
 * All return 0, or -1 when the connection is gone.
 */
#ifndef SHIM_REPLY_H
#define SHIM_REPLY_H

#include <stdint.h>

#include "nbd_proto.h"

struct peer;
struct store;

/* A simple reply without payload. */
int reply_simple(struct peer *c, uint64_t cookie, uint32_t error);

/*
 * An error for req: a structured ERROR chunk for a READ when structured
 * replies were agreed, else a simple reply.
 */
int reply_error(struct peer *c, const struct nbd_request *req,
		uint32_t error, const char *msg);

/*
 * The reply to a READ with its data, from be: pointing into the store
 * when it can (peek), else copied into the staging buffer. *err gets the
 * store's error (0 on success), in which case nothing is queued.
 */
int reply_read(struct peer *c, const struct nbd_request *req,
	       struct store *st, int *err);

/*
 * Before changing the store: send replies that still point into it, so
 * they carry the data as it was when they were read.
 */
int reply_fence(struct peer *c);

#endif /* SHIM_REPLY_H */
