/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Building blocks of the server side of the handshake, shared by the
 * profiles. Each queues its message; queued messages go out before the
 * connection next waits for input (peer_need), or on peer_flush. All return
 * 0, or -1 when the connection is gone.
 */
#ifndef SHIM_NEGOTIATE_H
#define SHIM_NEGOTIATE_H

#include <stdbool.h>
#include <stdint.h>

struct peer;

int neg_greeting(struct peer *c, uint16_t hflags);
int neg_client_flags(struct peer *c, uint32_t *cflags);
/* An option header; -1 also on a bad magic (logged). */
int neg_option(struct peer *c, uint32_t *opt, uint32_t *len);
int neg_reply(struct peer *c, uint32_t opt, uint32_t type);
/* NBD_OPT_ABORT: acknowledge it and end the connection (always -1). */
int neg_abort(struct peer *c, uint32_t opt);
/* An option not supported: skip its len bytes, answer ERR_UNSUP. */
int neg_refuse(struct peer *c, uint32_t opt, uint32_t len);
int neg_reply_server(struct peer *c, uint32_t opt, const char *name);
int neg_reply_info_export(struct peer *c, uint32_t opt, uint64_t size,
			 uint16_t tflags);
int neg_reply_info_block_size(struct peer *c, uint32_t opt, uint32_t min,
			     uint32_t pref, uint32_t max);
int neg_reply_info_text(struct peer *c, uint32_t opt, uint16_t type,
		       const char *text);
int neg_export_name_reply(struct peer *c, uint64_t size, uint16_t tflags,
			 bool no_zeroes);

#endif /* SHIM_NEGOTIATE_H */
