// SPDX-License-Identifier: GPL-2.0-only
/*
 * NBD message codec. See nbd_proto.h for the return conventions.
 */
#include <errno.h>
#include <string.h>

#include "nbd_proto.h"

const char *nbd_proto_strerror(int err)
{
	switch (err) {
	case NBD_PROTO_EMAGIC:
		return "bad magic number";
	case NBD_PROTO_ELENGTH:
		return "length out of range";
	case NBD_PROTO_ETYPE:
		return "unknown type";
	case NBD_PROTO_EFORMAT:
		return "malformed payload";
	default:
		return "unknown codec error";
	}
}

/* ---- handshake ---------------------------------------------------------- */

size_t nbd_encode_greeting(uint8_t *buf, uint16_t hflags)
{
	put_be64(buf, NBD_MAGIC);
	put_be64(buf + 8, NBD_IHAVEOPT);
	put_be16(buf + 16, hflags);
	return NBD_GREETING_LEN;
}

int nbd_decode_greeting(const uint8_t *buf, size_t len, bool *oldstyle,
			uint16_t *hflags)
{
	uint64_t magic2;

	if (len < 16)
		return 0;
	if (get_be64(buf) != NBD_MAGIC)
		return NBD_PROTO_EMAGIC;
	magic2 = get_be64(buf + 8);
	if (magic2 == NBD_OLDSTYLE_MAGIC) {
		*oldstyle = true;
		*hflags = 0;
		return 16;
	}
	if (magic2 != NBD_IHAVEOPT)
		return NBD_PROTO_EMAGIC;
	/* Known from the magics alone, even while the flags are still due. */
	*oldstyle = false;
	if (len < NBD_GREETING_LEN)
		return 0;
	*hflags = get_be16(buf + 16);
	return NBD_GREETING_LEN;
}

int nbd_decode_oldstyle_tail(const uint8_t *buf, size_t len, uint64_t *size,
			     uint16_t *tflags)
{
	if (len < NBD_OLDSTYLE_TAIL_LEN)
		return 0;
	*size = get_be64(buf);
	/* u32 flags: the high half were handshake flags, the low the usual */
	*tflags = get_be32(buf + 8) & 0xffff;
	return NBD_OLDSTYLE_TAIL_LEN;
}

size_t nbd_encode_option(uint8_t *buf, uint32_t opt, uint32_t len)
{
	put_be64(buf, NBD_IHAVEOPT);
	put_be32(buf + 8, opt);
	put_be32(buf + 12, len);
	return NBD_OPTION_HDR_LEN;
}

int nbd_decode_option(const uint8_t *buf, size_t len, uint32_t *opt,
		      uint32_t *datalen)
{
	if (len < NBD_OPTION_HDR_LEN)
		return 0;
	if (get_be64(buf) != NBD_IHAVEOPT)
		return NBD_PROTO_EMAGIC;
	*opt = get_be32(buf + 8);
	*datalen = get_be32(buf + 12);
	return NBD_OPTION_HDR_LEN;
}

size_t nbd_encode_option_reply(uint8_t *buf, uint32_t opt, uint32_t type,
			       uint32_t len)
{
	put_be64(buf, NBD_REP_MAGIC);
	put_be32(buf + 8, opt);
	put_be32(buf + 12, type);
	put_be32(buf + 16, len);
	return NBD_OPTION_REPLY_HDR_LEN;
}

int nbd_decode_option_reply(const uint8_t *buf, size_t len, uint32_t *opt,
			    uint32_t *type, uint32_t *datalen)
{
	if (len < NBD_OPTION_REPLY_HDR_LEN)
		return 0;
	if (get_be64(buf) != NBD_REP_MAGIC)
		return NBD_PROTO_EMAGIC;
	*opt = get_be32(buf + 8);
	*type = get_be32(buf + 12);
	*datalen = get_be32(buf + 16);
	return NBD_OPTION_REPLY_HDR_LEN;
}

size_t nbd_encode_go(uint8_t *buf, const char *name, size_t namelen,
		     const uint16_t *info, uint16_t ninfo)
{
	size_t off = 0;
	uint16_t i;

	put_be32(buf, namelen);
	off += 4;
	memcpy(buf + off, name, namelen);
	off += namelen;
	put_be16(buf + off, ninfo);
	off += 2;
	for (i = 0; i < ninfo; i++, off += 2)
		put_be16(buf + off, info[i]);
	return off;
}

int nbd_decode_go(const uint8_t *buf, size_t len, struct nbd_go_request *req)
{
	size_t need;

	if (len < 6)
		return NBD_PROTO_ELENGTH;
	req->namelen = get_be32(buf);
	if (req->namelen > NBD_MAX_STRING || req->namelen > len - 6)
		return NBD_PROTO_ELENGTH;
	req->name = buf + 4;
	req->ninfo = get_be16(buf + 4 + req->namelen);
	req->info = buf + 6 + req->namelen;
	need = 6 + (size_t)req->namelen + 2 * (size_t)req->ninfo;
	if (need != len)
		return NBD_PROTO_EFORMAT;
	return len;
}

size_t nbd_encode_rep_server(uint8_t *buf, const char *name, size_t namelen)
{
	put_be32(buf, namelen);
	memcpy(buf + NBD_REP_SERVER_LEN, name, namelen);
	return NBD_REP_SERVER_LEN + namelen;
}

size_t nbd_encode_info_export(uint8_t *buf, uint64_t size, uint16_t tflags)
{
	put_be16(buf, NBD_INFO_EXPORT);
	put_be64(buf + 2, size);
	put_be16(buf + 10, tflags);
	return NBD_INFO_EXPORT_LEN;
}

size_t nbd_encode_info_block_size(uint8_t *buf, uint32_t min, uint32_t pref,
				  uint32_t max)
{
	put_be16(buf, NBD_INFO_BLOCK_SIZE);
	put_be32(buf + 2, min);
	put_be32(buf + 6, pref);
	put_be32(buf + 10, max);
	return NBD_INFO_BLOCK_SIZE_LEN;
}

size_t nbd_encode_info_text(uint8_t *buf, uint16_t type, const char *text,
			    size_t len)
{
	put_be16(buf, type);
	memcpy(buf + NBD_INFO_TEXT_LEN, text, len);
	return NBD_INFO_TEXT_LEN + len;
}

int nbd_decode_info(const uint8_t *buf, size_t len, struct nbd_info *info)
{
	if (len < 2)
		return NBD_PROTO_ELENGTH;
	memset(info, 0, sizeof(*info));
	info->type = get_be16(buf);
	switch (info->type) {
	case NBD_INFO_EXPORT:
		if (len != NBD_INFO_EXPORT_LEN)
			return NBD_PROTO_ELENGTH;
		info->size = get_be64(buf + 2);
		info->tflags = get_be16(buf + 10);
		break;
	case NBD_INFO_BLOCK_SIZE:
		if (len != NBD_INFO_BLOCK_SIZE_LEN)
			return NBD_PROTO_ELENGTH;
		info->min_block = get_be32(buf + 2);
		info->pref_block = get_be32(buf + 6);
		info->max_block = get_be32(buf + 10);
		/* Powers of two, min <= pref <= max (proto.md). */
		if (!info->min_block || (info->min_block & (info->min_block - 1)) ||
		    !info->pref_block ||
		    (info->pref_block & (info->pref_block - 1)) ||
		    info->pref_block < info->min_block ||
		    info->max_block < info->pref_block)
			return NBD_PROTO_EFORMAT;
		break;
	default:
		/* NAME, DESCRIPTION and future types: caller ignores them. */
		break;
	}
	return len;
}

size_t nbd_encode_export_name_reply(uint8_t *buf, uint64_t size,
				    uint16_t tflags, bool no_zeroes)
{
	put_be64(buf, size);
	put_be16(buf + 8, tflags);
	if (no_zeroes)
		return NBD_EXPORT_NAME_REPLY_LEN;
	memset(buf + NBD_EXPORT_NAME_REPLY_LEN, 0, NBD_ZEROES_LEN);
	return NBD_EXPORT_NAME_REPLY_LEN + NBD_ZEROES_LEN;
}

int nbd_decode_export_name_reply(const uint8_t *buf, size_t len,
				 uint64_t *size, uint16_t *tflags)
{
	if (len < NBD_EXPORT_NAME_REPLY_LEN)
		return 0;
	*size = get_be64(buf);
	*tflags = get_be16(buf + 8);
	return NBD_EXPORT_NAME_REPLY_LEN;
}

/* ---- transmission ------------------------------------------------------- */

size_t nbd_encode_request(uint8_t *buf, const struct nbd_request *req)
{
	put_be32(buf, NBD_REQUEST_MAGIC);
	put_be16(buf + 4, req->flags);
	put_be16(buf + 6, req->type);
	put_be64(buf + 8, req->cookie);
	put_be64(buf + 16, req->offset);
	put_be32(buf + 24, req->length);
	return NBD_REQUEST_LEN;
}

int nbd_decode_request(const uint8_t *buf, size_t len,
		       struct nbd_request *req)
{
	if (len < NBD_REQUEST_LEN)
		return 0;
	if (get_be32(buf) != NBD_REQUEST_MAGIC)
		return NBD_PROTO_EMAGIC;
	req->flags = get_be16(buf + 4);
	req->type = get_be16(buf + 6);
	req->cookie = get_be64(buf + 8);
	req->offset = get_be64(buf + 16);
	req->length = get_be32(buf + 24);
	return NBD_REQUEST_LEN;
}

size_t nbd_encode_simple_reply(uint8_t *buf, uint32_t error, uint64_t cookie)
{
	put_be32(buf, NBD_SIMPLE_REPLY_MAGIC);
	put_be32(buf + 4, error);
	put_be64(buf + 8, cookie);
	return NBD_SIMPLE_REPLY_LEN;
}

size_t nbd_encode_structured_reply(uint8_t *buf, uint16_t flags,
				   uint16_t type, uint64_t cookie,
				   uint32_t length)
{
	put_be32(buf, NBD_STRUCTURED_REPLY_MAGIC);
	put_be16(buf + 4, flags);
	put_be16(buf + 6, type);
	put_be64(buf + 8, cookie);
	put_be32(buf + 16, length);
	return NBD_STRUCTURED_REPLY_LEN;
}

size_t nbd_encode_chunk_offset_data(uint8_t *buf, uint16_t flags,
				    uint64_t cookie, uint64_t offset,
				    uint32_t datalen)
{
	size_t n;

	n = nbd_encode_structured_reply(buf, flags, NBD_REPLY_TYPE_OFFSET_DATA,
					cookie, NBD_CHUNK_OFFSET_LEN + datalen);
	put_be64(buf + n, offset);
	return NBD_CHUNK_OFFSET_DATA_HDR_LEN;
}

size_t nbd_encode_chunk_error(uint8_t *buf, uint16_t flags, uint64_t cookie,
			      uint32_t error, const char *msg,
			      uint16_t msglen)
{
	size_t n;

	n = nbd_encode_structured_reply(buf, flags, NBD_REPLY_TYPE_ERROR,
					cookie, NBD_CHUNK_ERROR_LEN + msglen);
	put_be32(buf + n, error);
	put_be16(buf + n + 4, msglen);
	memcpy(buf + n + NBD_CHUNK_ERROR_LEN, msg, msglen);
	return n + NBD_CHUNK_ERROR_LEN + msglen;
}

int nbd_decode_reply(const uint8_t *buf, size_t len, struct nbd_reply *rep)
{
	uint32_t magic;

	if (len < 4)
		return 0;
	magic = get_be32(buf);
	if (magic == NBD_SIMPLE_REPLY_MAGIC) {
		if (len < NBD_SIMPLE_REPLY_LEN)
			return 0;
		rep->structured = false;
		rep->flags = 0;
		rep->type = 0;
		rep->error = get_be32(buf + 4);
		rep->cookie = get_be64(buf + 8);
		rep->length = 0;
		return NBD_SIMPLE_REPLY_LEN;
	}
	if (magic != NBD_STRUCTURED_REPLY_MAGIC)
		return NBD_PROTO_EMAGIC;
	if (len < NBD_STRUCTURED_REPLY_LEN)
		return 0;
	rep->structured = true;
	rep->flags = get_be16(buf + 4);
	rep->type = get_be16(buf + 6);
	rep->error = 0;
	rep->cookie = get_be64(buf + 8);
	rep->length = get_be32(buf + 16);
	return NBD_STRUCTURED_REPLY_LEN;
}

int nbd_decode_chunk_hole(const uint8_t *buf, size_t len, uint64_t *offset,
			  uint32_t *size)
{
	if (len != NBD_CHUNK_HOLE_LEN)
		return NBD_PROTO_ELENGTH;
	*offset = get_be64(buf);
	*size = get_be32(buf + 8);
	return len;
}

int nbd_decode_chunk_error(const uint8_t *buf, size_t len, uint16_t type,
			   struct nbd_chunk_error *err)
{
	size_t need;

	if (len < NBD_CHUNK_ERROR_LEN)
		return NBD_PROTO_ELENGTH;
	err->error = get_be32(buf);
	err->msglen = get_be16(buf + 4);
	err->msg = buf + NBD_CHUNK_ERROR_LEN;
	err->has_offset = type == NBD_REPLY_TYPE_ERROR_OFFSET;
	need = NBD_CHUNK_ERROR_LEN + (size_t)err->msglen +
	       (err->has_offset ? 8 : 0);
	if (need != len)
		return NBD_PROTO_ELENGTH;
	if (err->has_offset)
		err->offset = get_be64(buf + NBD_CHUNK_ERROR_LEN + err->msglen);
	/* An error chunk must carry an error (proto.md). */
	if (!err->error)
		return NBD_PROTO_EFORMAT;
	return len;
}

int nbd_error_to_errno(uint32_t error)
{
	switch (error) {
	case NBD_SUCCESS:
		return 0;
	case NBD_EPERM:
		return EPERM;
	case NBD_EIO:
		return EIO;
	case NBD_ENOMEM:
		return ENOMEM;
	case NBD_EINVAL:
		return EINVAL;
	case NBD_ENOSPC:
		return ENOSPC;
	case NBD_EOVERFLOW:
		return EOVERFLOW;
	case NBD_ENOTSUP:
		return EOPNOTSUPP;
	case NBD_ESHUTDOWN:
		return ESHUTDOWN;
	default:
		/* proto.md: treat unknown values as EINVAL */
		return EINVAL;
	}
}

uint32_t nbd_errno_to_error(int err)
{
	switch (err) {
	case 0:
		return NBD_SUCCESS;
	case EPERM:
	case EROFS:
		return NBD_EPERM;
	case ENOMEM:
		return NBD_ENOMEM;
	case EINVAL:
		return NBD_EINVAL;
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return NBD_ENOSPC;
	case EOVERFLOW:
		return NBD_EOVERFLOW;
	case EOPNOTSUPP:
		return NBD_ENOTSUP;
	case ESHUTDOWN:
		return NBD_ESHUTDOWN;
	default:
		return NBD_EIO;
	}
}

const char *nbd_opt_name(uint32_t opt)
{
	switch (opt) {
	case NBD_OPT_EXPORT_NAME:
		return "NBD_OPT_EXPORT_NAME";
	case NBD_OPT_ABORT:
		return "NBD_OPT_ABORT";
	case NBD_OPT_LIST:
		return "NBD_OPT_LIST";
	case NBD_OPT_STARTTLS:
		return "NBD_OPT_STARTTLS";
	case NBD_OPT_INFO:
		return "NBD_OPT_INFO";
	case NBD_OPT_GO:
		return "NBD_OPT_GO";
	case NBD_OPT_STRUCTURED_REPLY:
		return "NBD_OPT_STRUCTURED_REPLY";
	default:
		return "unknown option";
	}
}

const char *nbd_rep_name(uint32_t type)
{
	switch (type) {
	case NBD_REP_ACK:
		return "NBD_REP_ACK";
	case NBD_REP_SERVER:
		return "NBD_REP_SERVER";
	case NBD_REP_INFO:
		return "NBD_REP_INFO";
	case NBD_REP_ERR_UNSUP:
		return "NBD_REP_ERR_UNSUP";
	case NBD_REP_ERR_POLICY:
		return "NBD_REP_ERR_POLICY";
	case NBD_REP_ERR_INVALID:
		return "NBD_REP_ERR_INVALID";
	case NBD_REP_ERR_PLATFORM:
		return "NBD_REP_ERR_PLATFORM";
	case NBD_REP_ERR_TLS_REQD:
		return "NBD_REP_ERR_TLS_REQD";
	case NBD_REP_ERR_UNKNOWN:
		return "NBD_REP_ERR_UNKNOWN";
	case NBD_REP_ERR_SHUTDOWN:
		return "NBD_REP_ERR_SHUTDOWN";
	case NBD_REP_ERR_BLOCK_SIZE_REQD:
		return "NBD_REP_ERR_BLOCK_SIZE_REQD";
	case NBD_REP_ERR_TOO_BIG:
		return "NBD_REP_ERR_TOO_BIG";
	default:
		return "unknown reply";
	}
}

const char *nbd_cmd_name(uint16_t type)
{
	switch (type) {
	case NBD_CMD_READ:
		return "NBD_CMD_READ";
	case NBD_CMD_WRITE:
		return "NBD_CMD_WRITE";
	case NBD_CMD_DISC:
		return "NBD_CMD_DISC";
	case NBD_CMD_FLUSH:
		return "NBD_CMD_FLUSH";
	case NBD_CMD_TRIM:
		return "NBD_CMD_TRIM";
	case NBD_CMD_CACHE:
		return "NBD_CMD_CACHE";
	case NBD_CMD_WRITE_ZEROES:
		return "NBD_CMD_WRITE_ZEROES";
	case NBD_CMD_BLOCK_STATUS:
		return "NBD_CMD_BLOCK_STATUS";
	default:
		return "unknown command";
	}
}
