/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * NBD wire format: magics, option and command numbers, flags and sizes,
 * as defined by the NBD protocol (NetworkBlockDevice/nbd doc/proto.md).
 * Shared by the engine and the shims; no code, only names.
 */
#ifndef TORUS_NBD_WIRE_H
#define TORUS_NBD_WIRE_H

#include <stdint.h>

#define NBD_MAGIC			0x4e42444d41474943ULL	/* "NBDMAGIC" */
#define NBD_IHAVEOPT			0x49484156454f5054ULL	/* "IHAVEOPT" */
#define NBD_OLDSTYLE_MAGIC		0x0000420281861253ULL
#define NBD_REP_MAGIC			0x0003e889045565a9ULL
#define NBD_REQUEST_MAGIC		0x25609513U
#define NBD_SIMPLE_REPLY_MAGIC		0x67446698U
#define NBD_STRUCTURED_REPLY_MAGIC	0x668e33efU

/* Sizes of the fixed parts of each message. */
#define NBD_GREETING_LEN		18	/* NBDMAGIC, IHAVEOPT, u16 flags */
#define NBD_OLDSTYLE_LEN		152	/* NBDMAGIC, magic, size, flags, zeroes */
#define NBD_OPTION_HDR_LEN		16	/* IHAVEOPT, u32 opt, u32 len */
#define NBD_OPTION_REPLY_HDR_LEN	20	/* REP_MAGIC, u32 opt, u32 type, u32 len */
#define NBD_EXPORT_NAME_REPLY_LEN	10	/* u64 size, u16 flags */
#define NBD_ZEROES_LEN			124
#define NBD_REQUEST_LEN			28
#define NBD_SIMPLE_REPLY_LEN		16
#define NBD_STRUCTURED_REPLY_LEN	20
#define NBD_MAX_STRING			4096	/* export names, messages */

/* Handshake flags (server) and client flags. */
#define NBD_FLAG_FIXED_NEWSTYLE		(1U << 0)
#define NBD_FLAG_NO_ZEROES		(1U << 1)
#define NBD_FLAG_C_FIXED_NEWSTYLE	NBD_FLAG_FIXED_NEWSTYLE
#define NBD_FLAG_C_NO_ZEROES		NBD_FLAG_NO_ZEROES

/* Transmission flags. */
#define NBD_FLAG_HAS_FLAGS		(1U << 0)
#define NBD_FLAG_READ_ONLY		(1U << 1)
#define NBD_FLAG_SEND_FLUSH		(1U << 2)
#define NBD_FLAG_SEND_FUA		(1U << 3)
#define NBD_FLAG_ROTATIONAL		(1U << 4)
#define NBD_FLAG_SEND_TRIM		(1U << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES	(1U << 6)
#define NBD_FLAG_SEND_DF		(1U << 7)
#define NBD_FLAG_CAN_MULTI_CONN		(1U << 8)
#define NBD_FLAG_SEND_CACHE		(1U << 10)
#define NBD_FLAG_SEND_FAST_ZERO		(1U << 11)

/* Options. */
#define NBD_OPT_EXPORT_NAME		1
#define NBD_OPT_ABORT			2
#define NBD_OPT_LIST			3
#define NBD_OPT_STARTTLS		5
#define NBD_OPT_INFO			6
#define NBD_OPT_GO			7
#define NBD_OPT_STRUCTURED_REPLY	8

/* Option reply types; errors have bit 31 set. */
#define NBD_REP_ACK			1
#define NBD_REP_SERVER			2
#define NBD_REP_INFO			3
#define NBD_REP_FLAG_ERROR		(1U << 31)
#define NBD_REP_ERR_UNSUP		(NBD_REP_FLAG_ERROR | 1)
#define NBD_REP_ERR_POLICY		(NBD_REP_FLAG_ERROR | 2)
#define NBD_REP_ERR_INVALID		(NBD_REP_FLAG_ERROR | 3)
#define NBD_REP_ERR_PLATFORM		(NBD_REP_FLAG_ERROR | 4)
#define NBD_REP_ERR_TLS_REQD		(NBD_REP_FLAG_ERROR | 5)
#define NBD_REP_ERR_UNKNOWN		(NBD_REP_FLAG_ERROR | 6)
#define NBD_REP_ERR_SHUTDOWN		(NBD_REP_FLAG_ERROR | 7)
#define NBD_REP_ERR_BLOCK_SIZE_REQD	(NBD_REP_FLAG_ERROR | 8)
#define NBD_REP_ERR_TOO_BIG		(NBD_REP_FLAG_ERROR | 9)

/* NBD_REP_INFO types. */
#define NBD_INFO_EXPORT			0
#define NBD_INFO_NAME			1
#define NBD_INFO_DESCRIPTION		2
#define NBD_INFO_BLOCK_SIZE		3

/* Commands and command flags. */
#define NBD_CMD_READ			0
#define NBD_CMD_WRITE			1
#define NBD_CMD_DISC			2
#define NBD_CMD_FLUSH			3
#define NBD_CMD_TRIM			4
#define NBD_CMD_CACHE			5
#define NBD_CMD_WRITE_ZEROES		6
#define NBD_CMD_BLOCK_STATUS		7

#define NBD_CMD_FLAG_FUA		(1U << 0)
#define NBD_CMD_FLAG_NO_HOLE		(1U << 1)
#define NBD_CMD_FLAG_DF			(1U << 2)
#define NBD_CMD_FLAG_REQ_ONE		(1U << 3)
#define NBD_CMD_FLAG_FAST_ZERO		(1U << 4)

/* Structured reply chunk flags and types. */
#define NBD_REPLY_FLAG_DONE		(1U << 0)
#define NBD_REPLY_TYPE_NONE		0
#define NBD_REPLY_TYPE_OFFSET_DATA	1
#define NBD_REPLY_TYPE_OFFSET_HOLE	2
#define NBD_REPLY_TYPE_BLOCK_STATUS	5
#define NBD_REPLY_TYPE_ERROR_BIT	(1U << 15)
#define NBD_REPLY_TYPE_ERROR		((1U << 15) | 1)
#define NBD_REPLY_TYPE_ERROR_OFFSET	((1U << 15) | 2)

/* Error values carried in replies. */
#define NBD_SUCCESS	0
#define NBD_EPERM	1
#define NBD_EIO		5
#define NBD_ENOMEM	12
#define NBD_EINVAL	22
#define NBD_ENOSPC	28
#define NBD_EOVERFLOW	75
#define NBD_ENOTSUP	95
#define NBD_ESHUTDOWN	108

#define NBD_DEFAULT_PORT	10809

#endif /* TORUS_NBD_WIRE_H */
