/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Building blocks of the server side of the handshake, shared by the
 * profiles. Each queues its message; queued messages go out before the
 * connection next waits for input (conn_need), or on conn_flush. All return
 * 0, or -1 when the connection is gone.
 */
#ifndef SHIM_HANDSHAKE_H
#define SHIM_HANDSHAKE_H

#include <stdbool.h>
#include <stdint.h>

struct conn;

int hs_greeting(struct conn *c, uint16_t hflags);
int hs_client_flags(struct conn *c, uint32_t *cflags);
/* An option header; -1 also on a bad magic (logged). */
int hs_option(struct conn *c, uint32_t *opt, uint32_t *len);
int hs_reply(struct conn *c, uint32_t opt, uint32_t type);
/* NBD_OPT_ABORT: acknowledge it and end the connection (always -1). */
int hs_abort(struct conn *c, uint32_t opt);
/* An option not supported: skip its len bytes, answer ERR_UNSUP. */
int hs_refuse(struct conn *c, uint32_t opt, uint32_t len);
int hs_reply_server(struct conn *c, uint32_t opt, const char *name);
int hs_reply_info_export(struct conn *c, uint32_t opt, uint64_t size,
			 uint16_t tflags);
int hs_reply_info_block_size(struct conn *c, uint32_t opt, uint32_t min,
			     uint32_t pref, uint32_t max);
int hs_reply_info_text(struct conn *c, uint32_t opt, uint16_t type,
		       const char *text);
int hs_export_name_reply(struct conn *c, uint64_t size, uint16_t tflags,
			 bool no_zeroes);

#endif /* SHIM_HANDSHAKE_H */
