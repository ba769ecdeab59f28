/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Server-side NBD encoders that proto/nbd_proto.h does not have yet (to be
 * moved there). Same conventions: the caller gives a buffer of at least
 * the stated size; the return value is the number of bytes written.
 */
#ifndef SHIM_PROTO_EXTRA_H
#define SHIM_PROTO_EXTRA_H

#include <stddef.h>
#include <stdint.h>

#include "nbd_proto.h"

/* NBD_REP_SERVER payload: u32 name length, name. 4 + namelen bytes. */
size_t nbd_encode_rep_server(uint8_t *buf, const char *name, size_t namelen);

/* NBD_REP_INFO NAME or DESCRIPTION payload: u16 type, text. 2 + len. */
size_t nbd_encode_info_text(uint8_t *buf, uint16_t type, const char *text,
			    size_t len);

/*
 * Structured reply chunk NBD_REPLY_TYPE_OFFSET_DATA: header and u64
 * offset, datalen bytes of data follow. NBD_CHUNK_OFFSET_DATA_HDR_LEN.
 */
#define NBD_CHUNK_OFFSET_DATA_HDR_LEN \
	(NBD_STRUCTURED_REPLY_LEN + NBD_CHUNK_OFFSET_LEN)
size_t nbd_encode_chunk_offset_data(uint8_t *buf, uint16_t flags,
				    uint64_t cookie, uint64_t offset,
				    uint32_t datalen);

/*
 * Structured reply chunk NBD_REPLY_TYPE_ERROR with a message.
 * NBD_STRUCTURED_REPLY_LEN + NBD_CHUNK_ERROR_LEN + msglen bytes.
 */
size_t nbd_encode_chunk_error(uint8_t *buf, uint16_t flags, uint64_t cookie,
			      uint32_t error, const char *msg,
			      uint16_t msglen);

#endif /* SHIM_PROTO_EXTRA_H */
