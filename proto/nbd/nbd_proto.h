/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * NBD message codec: encode into and decode from byte buffers.
 *
 * Nothing here touches a socket, so every function can be fed bytes by a
 * unit test. Encoders return the number of bytes written (the caller gives
 * a buffer of at least the stated size). Decoders return the number of bytes
 * consumed, 0 when more input is needed (nothing consumed), or a negative
 * NBD_PROTO_E* value when the input is malformed.
 */
#ifndef TORUS_NBD_PROTO_H
#define TORUS_NBD_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "nbd_wire.h"
#include "torus_be.h"	/* put_be*, get_be*: big-endian field access */

enum nbd_proto_err {
	NBD_PROTO_EMAGIC = -1,		/* wrong magic number */
	NBD_PROTO_ELENGTH = -2,		/* a length field is out of range */
	NBD_PROTO_ETYPE = -3,		/* an unknown or unexpected type */
	NBD_PROTO_EFORMAT = -4,		/* payload inconsistent with its header */
};

const char *nbd_proto_strerror(int err);

/* ---- handshake ---------------------------------------------------------- */

/* Server greeting, NBD_GREETING_LEN bytes. */
size_t nbd_encode_greeting(uint8_t *buf, uint16_t hflags);
/*
 * Decodes either a newstyle greeting (sets *oldstyle = false, *hflags) or,
 * when the second magic is the oldstyle one, reports *oldstyle = true after
 * consuming only the 16 magic bytes (the rest is nbd_decode_oldstyle_tail).
 * Given just the 16 magic bytes of a newstyle greeting it returns 0 (the
 * flags are due) with *oldstyle already set to false.
 */
int nbd_decode_greeting(const uint8_t *buf, size_t len, bool *oldstyle,
			uint16_t *hflags);

/* Oldstyle tail after the two magics: u64 size, u32 flags, 124 zeroes. */
#define NBD_OLDSTYLE_TAIL_LEN	(8 + 4 + NBD_ZEROES_LEN)
int nbd_decode_oldstyle_tail(const uint8_t *buf, size_t len, uint64_t *size,
			     uint16_t *tflags);

/* Option request header; the payload (len bytes) follows it. */
size_t nbd_encode_option(uint8_t *buf, uint32_t opt, uint32_t len);
int nbd_decode_option(const uint8_t *buf, size_t len, uint32_t *opt,
		      uint32_t *datalen);

/* Option reply header; the payload (len bytes) follows it. */
size_t nbd_encode_option_reply(uint8_t *buf, uint32_t opt, uint32_t type,
			       uint32_t len);
int nbd_decode_option_reply(const uint8_t *buf, size_t len, uint32_t *opt,
			    uint32_t *type, uint32_t *datalen);

/*
 * OPT_GO / OPT_INFO payload (standard order): u32 name length, name,
 * u16 number of info requests, u16 each. Returns bytes written; the buffer
 * needs 4 + namelen + 2 + 2 * ninfo bytes.
 */
size_t nbd_encode_go(uint8_t *buf, const char *name, size_t namelen,
		     const uint16_t *info, uint16_t ninfo);

struct nbd_go_request {
	const uint8_t *name;	/* points into the decoded buffer */
	uint32_t namelen;
	uint16_t ninfo;
	const uint8_t *info;	/* ninfo big-endian u16 values */
};

/* Decodes a whole OPT_GO/OPT_INFO payload of exactly len bytes. */
int nbd_decode_go(const uint8_t *buf, size_t len, struct nbd_go_request *req);

/*
 * NBD_REP_SERVER payload (an NBD_OPT_LIST entry): u32 name length, name.
 * NBD_REP_SERVER_LEN + namelen bytes.
 */
#define NBD_REP_SERVER_LEN	4	/* u32 name length, then the name */
size_t nbd_encode_rep_server(uint8_t *buf, const char *name, size_t namelen);

/* NBD_REP_INFO payloads. */
#define NBD_INFO_EXPORT_LEN	12	/* u16 type, u64 size, u16 flags */
#define NBD_INFO_BLOCK_SIZE_LEN	14	/* u16 type, u32 min, pref, max */
#define NBD_INFO_TEXT_LEN	2	/* NAME, DESCRIPTION: u16 type, text */
size_t nbd_encode_info_export(uint8_t *buf, uint64_t size, uint16_t tflags);
size_t nbd_encode_info_block_size(uint8_t *buf, uint32_t min, uint32_t pref,
				  uint32_t max);
/*
 * NBD_INFO_NAME or NBD_INFO_DESCRIPTION: u16 type, then the text (len
 * bytes, no terminator). NBD_INFO_TEXT_LEN + len bytes.
 */
size_t nbd_encode_info_text(uint8_t *buf, uint16_t type, const char *text,
			    size_t len);

struct nbd_info {
	uint16_t type;
	uint64_t size;			/* NBD_INFO_EXPORT */
	uint16_t tflags;		/* NBD_INFO_EXPORT */
	uint32_t min_block;		/* NBD_INFO_BLOCK_SIZE */
	uint32_t pref_block;
	uint32_t max_block;
};

/* Decodes a whole NBD_REP_INFO payload; unknown types decode with type set. */
int nbd_decode_info(const uint8_t *buf, size_t len, struct nbd_info *info);

/*
 * Reply to NBD_OPT_EXPORT_NAME: u64 size, u16 flags, and 124 zeroes unless
 * NO_ZEROES was agreed.
 */
size_t nbd_encode_export_name_reply(uint8_t *buf, uint64_t size,
				    uint16_t tflags, bool no_zeroes);
int nbd_decode_export_name_reply(const uint8_t *buf, size_t len,
				 uint64_t *size, uint16_t *tflags);

/* ---- transmission ------------------------------------------------------- */

struct nbd_request {
	uint16_t flags;
	uint16_t type;
	uint64_t cookie;
	uint64_t offset;
	uint32_t length;
};

size_t nbd_encode_request(uint8_t *buf, const struct nbd_request *req);
int nbd_decode_request(const uint8_t *buf, size_t len,
		       struct nbd_request *req);

size_t nbd_encode_simple_reply(uint8_t *buf, uint32_t error, uint64_t cookie);
size_t nbd_encode_structured_reply(uint8_t *buf, uint16_t flags,
				   uint16_t type, uint64_t cookie,
				   uint32_t length);

/*
 * One reply header, simple or structured (told apart by the magic).
 * For a simple reply, length is 0 and the caller knows whether payload
 * follows (a successful READ); for a structured chunk, length is the chunk
 * payload that follows.
 */
struct nbd_reply {
	bool structured;
	uint16_t flags;		/* structured only */
	uint16_t type;		/* structured only */
	uint32_t error;		/* simple only */
	uint64_t cookie;
	uint32_t length;	/* structured only */
};

int nbd_decode_reply(const uint8_t *buf, size_t len, struct nbd_reply *rep);

/* Structured chunk payload prefixes. */
#define NBD_CHUNK_OFFSET_LEN	8	/* OFFSET_DATA: u64 offset, then data */
#define NBD_CHUNK_HOLE_LEN	12	/* OFFSET_HOLE: u64 offset, u32 size */
#define NBD_CHUNK_ERROR_LEN	6	/* ERROR: u32 error, u16 msglen, msg */

/*
 * Structured reply chunk NBD_REPLY_TYPE_OFFSET_DATA: the chunk header and
 * the u64 offset, NBD_CHUNK_OFFSET_DATA_HDR_LEN bytes; the caller sends the
 * datalen bytes of data after them.
 */
#define NBD_CHUNK_OFFSET_DATA_HDR_LEN \
	(NBD_STRUCTURED_REPLY_LEN + NBD_CHUNK_OFFSET_LEN)
size_t nbd_encode_chunk_offset_data(uint8_t *buf, uint16_t flags,
				    uint64_t cookie, uint64_t offset,
				    uint32_t datalen);
/*
 * Structured reply chunk NBD_REPLY_TYPE_ERROR with its message (msglen
 * bytes, no terminator): NBD_STRUCTURED_REPLY_LEN + NBD_CHUNK_ERROR_LEN +
 * msglen bytes.
 */
size_t nbd_encode_chunk_error(uint8_t *buf, uint16_t flags, uint64_t cookie,
			      uint32_t error, const char *msg,
			      uint16_t msglen);

struct nbd_chunk_error {
	uint32_t error;
	uint16_t msglen;
	const uint8_t *msg;
	bool has_offset;
	uint64_t offset;	/* ERROR_OFFSET only */
};

int nbd_decode_chunk_hole(const uint8_t *buf, size_t len, uint64_t *offset,
			  uint32_t *size);
int nbd_decode_chunk_error(const uint8_t *buf, size_t len, uint16_t type,
			   struct nbd_chunk_error *err);

/* Error mapping: NBD error values <-> positive errno values. */
int nbd_error_to_errno(uint32_t error);
uint32_t nbd_errno_to_error(int err);

/* Names for messages. */
const char *nbd_opt_name(uint32_t opt);
const char *nbd_rep_name(uint32_t type);
const char *nbd_cmd_name(uint16_t type);

#endif /* TORUS_NBD_PROTO_H */
