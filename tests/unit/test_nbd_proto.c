// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the NBD codec (proto/nbd/nbd_proto.c). Every encoder is checked
 * against byte arrays written by hand from the layouts in the NBD protocol
 * document (NetworkBlockDevice/nbd doc/proto.md); every decoder is fed those
 * bytes, every truncation of them and corrupted variants.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nbd_proto.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Magics as they appear on the wire. */
#define W_NBDMAGIC	0x4e, 0x42, 0x44, 0x4d, 0x41, 0x47, 0x49, 0x43
#define W_IHAVEOPT	0x49, 0x48, 0x41, 0x56, 0x45, 0x4f, 0x50, 0x54
#define W_OLDSTYLE	0x00, 0x00, 0x42, 0x02, 0x81, 0x86, 0x12, 0x53
#define W_REPMAGIC	0x00, 0x03, 0xe8, 0x89, 0x04, 0x55, 0x65, 0xa9
#define W_REQMAGIC	0x25, 0x60, 0x95, 0x13
#define W_SIMPLE	0x67, 0x44, 0x66, 0x98
#define W_STRUCT	0x66, 0x8e, 0x33, 0xef

/* A buffer larger than any message, pre-filled to catch stray writes. */
#define POISON		0xaa
#define BUF_LEN		512

static void poison(uint8_t *buf)
{
	memset(buf, POISON, BUF_LEN);
}

static void assert_untouched(const uint8_t *buf, size_t from)
{
	size_t i;

	for (i = from; i < BUF_LEN; i++)
		if (buf[i] != POISON)
			fail_msg("encoder wrote byte %zu beyond its %zu bytes",
				 i, from);
}

/* ---- big-endian helpers ------------------------------------------------- */

static void test_put_get(void **state)
{
	static const uint8_t want[] = {
		0x12, 0x34,
		0x89, 0xab, 0xcd, 0xef,
		0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	};
	uint8_t buf[14];

	put_be16(buf, 0x1234);
	put_be32(buf + 2, 0x89abcdef);
	put_be64(buf + 6, 0x0123456789abcdefULL);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(get_be16(buf), 0x1234);
	assert_int_equal(get_be32(buf + 2), 0x89abcdef);
	assert_true(get_be64(buf + 6) == 0x0123456789abcdefULL);
}

/* ---- greeting ----------------------------------------------------------- */

static const uint8_t greeting_bytes[] = {
	W_NBDMAGIC, W_IHAVEOPT, 0x00, 0x03,
};

static void test_encode_greeting(void **state)
{
	uint8_t buf[BUF_LEN];

	poison(buf);
	assert_int_equal(nbd_encode_greeting(buf, NBD_FLAG_FIXED_NEWSTYLE |
					     NBD_FLAG_NO_ZEROES), 18);
	assert_memory_equal(buf, greeting_bytes, sizeof(greeting_bytes));
	assert_untouched(buf, 18);
}

static void test_decode_greeting(void **state)
{
	uint8_t buf[NBD_GREETING_LEN];
	bool oldstyle = true;
	uint16_t hflags = 0;
	size_t len;

	assert_int_equal(nbd_decode_greeting(greeting_bytes,
					     sizeof(greeting_bytes),
					     &oldstyle, &hflags), 18);
	assert_false(oldstyle);
	assert_int_equal(hflags, 3);

	for (len = 0; len < sizeof(greeting_bytes); len++)
		assert_int_equal(nbd_decode_greeting(greeting_bytes, len,
						     &oldstyle, &hflags), 0);

	/* Round trip with every handshake flag bit. */
	nbd_encode_greeting(buf, 0xffff);
	assert_int_equal(nbd_decode_greeting(buf, sizeof(buf), &oldstyle,
					     &hflags), 18);
	assert_int_equal(hflags, 0xffff);
}

static void test_decode_greeting_oldstyle(void **state)
{
	static const uint8_t bytes[] = { W_NBDMAGIC, W_OLDSTYLE };
	bool oldstyle = false;
	uint16_t hflags = 0x1234;
	size_t len;

	/* Only the two magics are consumed. */
	assert_int_equal(nbd_decode_greeting(bytes, sizeof(bytes), &oldstyle,
					     &hflags), 16);
	assert_true(oldstyle);
	assert_int_equal(hflags, 0);
	for (len = 0; len < sizeof(bytes); len++)
		assert_int_equal(nbd_decode_greeting(bytes, len, &oldstyle,
						     &hflags), 0);
}

static void test_decode_greeting_bad_magic(void **state)
{
	uint8_t buf[NBD_GREETING_LEN];
	bool oldstyle;
	uint16_t hflags;
	size_t i;

	/* A flipped bit in either magic. */
	for (i = 0; i < 16; i++) {
		memcpy(buf, greeting_bytes, sizeof(buf));
		buf[i] ^= 0x01;
		assert_int_equal(nbd_decode_greeting(buf, sizeof(buf),
						     &oldstyle, &hflags),
				 NBD_PROTO_EMAGIC);
		/* Known bad after 16 bytes, before the flags arrived. */
		assert_int_equal(nbd_decode_greeting(buf, 16, &oldstyle,
						     &hflags),
				 NBD_PROTO_EMAGIC);
	}
	/* An option reply magic where IHAVEOPT belongs. */
	{
		static const uint8_t rep[] = { W_NBDMAGIC, W_REPMAGIC, 0, 1 };

		assert_int_equal(nbd_decode_greeting(rep, sizeof(rep),
						     &oldstyle, &hflags),
				 NBD_PROTO_EMAGIC);
	}
}

static void test_decode_oldstyle_tail(void **state)
{
	uint8_t buf[NBD_OLDSTYLE_TAIL_LEN];
	uint64_t size = 0;
	uint16_t tflags = 0;
	size_t len;

	memset(buf, 0, sizeof(buf));
	/* 1 TiB, u32 flags with bits in both halves */
	put_be64(buf, 0x0000010000000000ULL);
	put_be32(buf + 8, 0x00030105);
	assert_int_equal(NBD_OLDSTYLE_TAIL_LEN, 136);
	assert_int_equal(nbd_decode_oldstyle_tail(buf, sizeof(buf), &size,
						  &tflags), 136);
	assert_true(size == 0x0000010000000000ULL);
	assert_int_equal(tflags, 0x0105);
	for (len = 0; len < sizeof(buf); len++)
		assert_int_equal(nbd_decode_oldstyle_tail(buf, len, &size,
							  &tflags), 0);
}

/* ---- options ------------------------------------------------------------ */

static void test_encode_option(void **state)
{
	static const uint8_t want[] = {
		W_IHAVEOPT,
		0x00, 0x00, 0x00, 0x07,		/* NBD_OPT_GO */
		0x00, 0x00, 0x00, 0x0e,		/* 14 bytes of payload */
	};
	uint8_t buf[BUF_LEN];

	poison(buf);
	assert_int_equal(nbd_encode_option(buf, NBD_OPT_GO, 14), 16);
	assert_memory_equal(buf, want, sizeof(want));
	assert_untouched(buf, 16);
}

static void test_decode_option(void **state)
{
	uint8_t buf[NBD_OPTION_HDR_LEN];
	uint32_t opt = 0, dlen = 0;
	size_t len, i;

	nbd_encode_option(buf, NBD_OPT_EXPORT_NAME, 0xfedcba98);
	assert_int_equal(nbd_decode_option(buf, sizeof(buf), &opt, &dlen), 16);
	assert_int_equal(opt, NBD_OPT_EXPORT_NAME);
	assert_int_equal(dlen, 0xfedcba98);

	for (len = 0; len < sizeof(buf); len++)
		assert_int_equal(nbd_decode_option(buf, len, &opt, &dlen), 0);

	for (i = 0; i < 8; i++) {
		nbd_encode_option(buf, NBD_OPT_GO, 0);
		buf[i] ^= 0x80;
		assert_int_equal(nbd_decode_option(buf, sizeof(buf), &opt,
						   &dlen), NBD_PROTO_EMAGIC);
	}
}

static const uint8_t option_reply_bytes[] = {
	W_REPMAGIC,
	0x00, 0x00, 0x00, 0x07,		/* NBD_OPT_GO */
	0x00, 0x00, 0x00, 0x03,		/* NBD_REP_INFO */
	0x00, 0x00, 0x00, 0x0c,		/* 12 bytes of payload */
};

static void test_encode_option_reply(void **state)
{
	static const uint8_t err[] = {
		W_REPMAGIC,
		0x00, 0x00, 0x00, 0x07,
		0x80, 0x00, 0x00, 0x06,		/* NBD_REP_ERR_UNKNOWN */
		0x00, 0x00, 0x00, 0x00,
	};
	uint8_t buf[BUF_LEN];

	poison(buf);
	assert_int_equal(nbd_encode_option_reply(buf, NBD_OPT_GO,
						 NBD_REP_INFO, 12), 20);
	assert_memory_equal(buf, option_reply_bytes,
			    sizeof(option_reply_bytes));
	assert_untouched(buf, 20);

	nbd_encode_option_reply(buf, NBD_OPT_GO, NBD_REP_ERR_UNKNOWN, 0);
	assert_memory_equal(buf, err, sizeof(err));
}

static void test_decode_option_reply(void **state)
{
	uint8_t buf[NBD_OPTION_REPLY_HDR_LEN];
	uint32_t opt, type, dlen;
	size_t len, i;

	assert_int_equal(nbd_decode_option_reply(option_reply_bytes,
						 sizeof(option_reply_bytes),
						 &opt, &type, &dlen), 20);
	assert_int_equal(opt, NBD_OPT_GO);
	assert_int_equal(type, NBD_REP_INFO);
	assert_int_equal(dlen, 12);

	nbd_encode_option_reply(buf, NBD_OPT_STRUCTURED_REPLY,
				NBD_REP_ERR_TOO_BIG, 0x10000);
	assert_int_equal(nbd_decode_option_reply(buf, sizeof(buf), &opt,
						 &type, &dlen), 20);
	assert_int_equal(opt, NBD_OPT_STRUCTURED_REPLY);
	assert_int_equal(type, NBD_REP_ERR_TOO_BIG);
	assert_int_equal(dlen, 0x10000);

	for (len = 0; len < sizeof(option_reply_bytes); len++)
		assert_int_equal(nbd_decode_option_reply(option_reply_bytes,
							 len, &opt, &type,
							 &dlen), 0);

	for (i = 0; i < 8; i++) {
		memcpy(buf, option_reply_bytes, sizeof(buf));
		buf[i] ^= 0x04;
		assert_int_equal(nbd_decode_option_reply(buf, sizeof(buf),
							 &opt, &type, &dlen),
				 NBD_PROTO_EMAGIC);
	}
	/* An option request (IHAVEOPT) is not a reply. */
	nbd_encode_option(buf, NBD_OPT_GO, 0);
	put_be32(buf + 16, 0);
	assert_int_equal(nbd_decode_option_reply(buf, sizeof(buf), &opt,
						 &type, &dlen),
			 NBD_PROTO_EMAGIC);
}

/* ---- NBD_OPT_GO payload ------------------------------------------------- */

static const uint8_t go_disk_bytes[] = {
	0x00, 0x00, 0x00, 0x04,		/* name length */
	'd', 'i', 's', 'k',
	0x00, 0x01,			/* one info request */
	0x00, 0x03,			/* NBD_INFO_BLOCK_SIZE */
};

static void test_encode_go(void **state)
{
	static const uint16_t one[] = { NBD_INFO_BLOCK_SIZE };
	static const uint16_t two[] = { NBD_INFO_NAME, NBD_INFO_DESCRIPTION };
	static const uint8_t want_default[] = {
		0x00, 0x00, 0x00, 0x00,		/* default export */
		0x00, 0x02,
		0x00, 0x01, 0x00, 0x02,
	};
	static const uint8_t want_none[] = {
		0x00, 0x00, 0x00, 0x01, 'x',
		0x00, 0x00,
	};
	uint8_t buf[BUF_LEN];

	poison(buf);
	assert_int_equal(nbd_encode_go(buf, "disk", 4, one, 1), 12);
	assert_memory_equal(buf, go_disk_bytes, sizeof(go_disk_bytes));
	assert_untouched(buf, 12);

	poison(buf);
	assert_int_equal(nbd_encode_go(buf, "", 0, two, 2), 10);
	assert_memory_equal(buf, want_default, sizeof(want_default));
	assert_untouched(buf, 10);

	poison(buf);
	assert_int_equal(nbd_encode_go(buf, "xyz", 1, NULL, 0), 7);
	assert_memory_equal(buf, want_none, sizeof(want_none));
	assert_untouched(buf, 7);
}

static void test_decode_go(void **state)
{
	static const uint16_t info[] = { 3, 1, 2, 0xbeef };
	struct nbd_go_request req;
	uint8_t buf[BUF_LEN];
	size_t n;

	assert_int_equal(nbd_decode_go(go_disk_bytes, sizeof(go_disk_bytes),
				       &req), 12);
	assert_int_equal(req.namelen, 4);
	assert_ptr_equal(req.name, go_disk_bytes + 4);
	assert_memory_equal(req.name, "disk", 4);
	assert_int_equal(req.ninfo, 1);
	assert_ptr_equal(req.info, go_disk_bytes + 10);
	assert_int_equal(get_be16(req.info), NBD_INFO_BLOCK_SIZE);

	n = nbd_encode_go(buf, "some/export", 11, info, 4);
	assert_int_equal(n, 4 + 11 + 2 + 8);
	assert_int_equal(nbd_decode_go(buf, n, &req), (int)n);
	assert_int_equal(req.namelen, 11);
	assert_memory_equal(req.name, "some/export", 11);
	assert_int_equal(req.ninfo, 4);
	assert_int_equal(get_be16(req.info + 6), 0xbeef);

	n = nbd_encode_go(buf, "", 0, NULL, 0);
	assert_int_equal(nbd_decode_go(buf, n, &req), 6);
	assert_int_equal(req.namelen, 0);
	assert_int_equal(req.ninfo, 0);
}

static void test_decode_go_truncated(void **state)
{
	struct nbd_go_request req;
	size_t len;

	/* A whole payload is decoded: short means malformed, not partial. */
	for (len = 0; len < sizeof(go_disk_bytes); len++)
		assert_true(nbd_decode_go(go_disk_bytes, len, &req) < 0);
}

static void test_decode_go_malformed(void **state)
{
	struct nbd_go_request req;
	uint8_t buf[BUF_LEN];

	/* Name length past the end of the payload. */
	memcpy(buf, go_disk_bytes, sizeof(go_disk_bytes));
	put_be32(buf, 13);
	assert_int_equal(nbd_decode_go(buf, sizeof(go_disk_bytes), &req),
			 NBD_PROTO_ELENGTH);
	put_be32(buf, 0xffffffff);
	assert_int_equal(nbd_decode_go(buf, sizeof(go_disk_bytes), &req),
			 NBD_PROTO_ELENGTH);
	/* Leaves no room for the info count. */
	put_be32(buf, 7);
	assert_int_equal(nbd_decode_go(buf, sizeof(go_disk_bytes), &req),
			 NBD_PROTO_ELENGTH);

	/* Longer than NBD_MAX_STRING even when the payload holds it. */
	{
		static uint8_t big[4 + NBD_MAX_STRING + 1 + 2];

		memset(big, 'a', sizeof(big));
		put_be32(big, NBD_MAX_STRING + 1);
		put_be16(big + 4 + NBD_MAX_STRING + 1, 0);
		assert_int_equal(nbd_decode_go(big, sizeof(big), &req),
				 NBD_PROTO_ELENGTH);
		put_be32(big, NBD_MAX_STRING);
		put_be16(big + 4 + NBD_MAX_STRING, 0);
		assert_int_equal(nbd_decode_go(big, sizeof(big) - 1, &req),
				 (int)sizeof(big) - 1);
	}

	/* ninfo says two requests, the payload holds one. */
	memcpy(buf, go_disk_bytes, sizeof(go_disk_bytes));
	put_be16(buf + 8, 2);
	assert_int_equal(nbd_decode_go(buf, sizeof(go_disk_bytes), &req),
			 NBD_PROTO_EFORMAT);
	/* ninfo says none, one is there. */
	put_be16(buf + 8, 0);
	assert_int_equal(nbd_decode_go(buf, sizeof(go_disk_bytes), &req),
			 NBD_PROTO_EFORMAT);
	/* Trailing garbage. */
	memcpy(buf, go_disk_bytes, sizeof(go_disk_bytes));
	buf[sizeof(go_disk_bytes)] = 0;
	assert_int_equal(nbd_decode_go(buf, sizeof(go_disk_bytes) + 1, &req),
			 NBD_PROTO_EFORMAT);
	/* Odd byte: half an info request. */
	assert_int_equal(nbd_decode_go(buf, sizeof(go_disk_bytes) - 1, &req),
			 NBD_PROTO_EFORMAT);

	/*
	 * 0-Disk's pre-standard order (ninfo, infos, name length, name) read
	 * the standard way: a name length of 0x00010003.
	 */
	{
		static const uint8_t prestandard[] = {
			0x00, 0x01, 0x00, 0x03,
			0x00, 0x00, 0x00, 0x04, 'd', 'i', 's', 'k',
		};

		assert_int_equal(nbd_decode_go(prestandard,
					       sizeof(prestandard), &req),
				 NBD_PROTO_ELENGTH);
	}
}

/* ---- NBD_REP_SERVER payload -------------------------------------------- */

static void test_encode_rep_server(void **state)
{
	static const uint8_t want[] = {
		0x00, 0x00, 0x00, 0x05,		/* name length */
		't', 'o', 'r', 'u', 's',
	};
	static const uint8_t want_empty[] = { 0x00, 0x00, 0x00, 0x00 };
	uint8_t buf[BUF_LEN];

	assert_int_equal(NBD_REP_SERVER_LEN, 4);
	poison(buf);
	assert_int_equal(nbd_encode_rep_server(buf, "torus", 5), 9);
	assert_memory_equal(buf, want, sizeof(want));
	assert_untouched(buf, 9);

	/* Only namelen bytes of the name: no terminator. */
	poison(buf);
	assert_int_equal(nbd_encode_rep_server(buf, "", 0), 4);
	assert_memory_equal(buf, want_empty, sizeof(want_empty));
	assert_untouched(buf, 4);
}

/* ---- NBD_REP_INFO payloads ---------------------------------------------- */

static const uint8_t info_export_bytes[] = {
	0x00, 0x00,					/* NBD_INFO_EXPORT */
	0x00, 0x00, 0x00, 0x01, 0x40, 0x00, 0x00, 0x00,	/* 5 GiB */
	0x01, 0x5d,					/* flags */
};

static const uint8_t info_block_size_bytes[] = {
	0x00, 0x03,				/* NBD_INFO_BLOCK_SIZE */
	0x00, 0x00, 0x02, 0x00,			/* min 512 */
	0x00, 0x00, 0x10, 0x00,			/* preferred 4096 */
	0x02, 0x00, 0x00, 0x00,			/* max 32 MiB */
};

#define INFO_EXPORT_TFLAGS	(NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | \
				 NBD_FLAG_SEND_FUA | NBD_FLAG_ROTATIONAL | \
				 NBD_FLAG_SEND_WRITE_ZEROES | \
				 NBD_FLAG_CAN_MULTI_CONN)

static void test_encode_info_export(void **state)
{
	uint8_t buf[BUF_LEN];

	assert_int_equal(INFO_EXPORT_TFLAGS, 0x015d);
	poison(buf);
	assert_int_equal(nbd_encode_info_export(buf, 5ULL << 30,
						INFO_EXPORT_TFLAGS), 12);
	assert_memory_equal(buf, info_export_bytes, sizeof(info_export_bytes));
	assert_untouched(buf, 12);
}

static void test_encode_info_block_size(void **state)
{
	uint8_t buf[BUF_LEN];

	poison(buf);
	assert_int_equal(nbd_encode_info_block_size(buf, 512, 4096, 32 << 20),
			 14);
	assert_memory_equal(buf, info_block_size_bytes,
			    sizeof(info_block_size_bytes));
	assert_untouched(buf, 14);
}

static void test_encode_info_text(void **state)
{
	static const uint8_t want_name[] = {
		0x00, 0x01,			/* NBD_INFO_NAME */
		'd', 'e', 'f',
	};
	static const uint8_t want_desc[] = {
		0x00, 0x02,			/* NBD_INFO_DESCRIPTION, empty */
	};
	struct nbd_info info;
	uint8_t buf[BUF_LEN];

	assert_int_equal(NBD_INFO_TEXT_LEN, 2);
	poison(buf);
	assert_int_equal(nbd_encode_info_text(buf, NBD_INFO_NAME, "default", 3),
			 5);
	assert_memory_equal(buf, want_name, sizeof(want_name));
	assert_untouched(buf, 5);
	/* What a client makes of it: a type it ignores. */
	assert_int_equal(nbd_decode_info(buf, 5, &info), 5);
	assert_int_equal(info.type, NBD_INFO_NAME);

	poison(buf);
	assert_int_equal(nbd_encode_info_text(buf, NBD_INFO_DESCRIPTION, "", 0),
			 2);
	assert_memory_equal(buf, want_desc, sizeof(want_desc));
	assert_untouched(buf, 2);
}

static void test_decode_info(void **state)
{
	static const uint8_t name[] = { 0x00, 0x01, 'd', 'i', 's', 'k' };
	static const uint8_t future[] = { 0x12, 0x34 };
	struct nbd_info info;
	uint8_t buf[BUF_LEN];

	assert_int_equal(nbd_decode_info(info_export_bytes,
					 sizeof(info_export_bytes), &info), 12);
	assert_int_equal(info.type, NBD_INFO_EXPORT);
	assert_true(info.size == 5ULL << 30);
	assert_int_equal(info.tflags, INFO_EXPORT_TFLAGS);

	assert_int_equal(nbd_decode_info(info_block_size_bytes,
					 sizeof(info_block_size_bytes), &info),
			 14);
	assert_int_equal(info.type, NBD_INFO_BLOCK_SIZE);
	assert_int_equal(info.min_block, 512);
	assert_int_equal(info.pref_block, 4096);
	assert_int_equal(info.max_block, 32 << 20);
	assert_true(info.size == 0);

	/* All three equal, and the "no limit" maximum. */
	nbd_encode_info_block_size(buf, 1, 1, 1);
	assert_int_equal(nbd_decode_info(buf, 14, &info), 14);
	nbd_encode_info_block_size(buf, 1, 4096, 0xffffffff);
	assert_int_equal(nbd_decode_info(buf, 14, &info), 14);
	assert_int_equal(info.max_block, 0xffffffff);

	/* Types the client ignores still decode, with their type. */
	assert_int_equal(nbd_decode_info(name, sizeof(name), &info), 6);
	assert_int_equal(info.type, NBD_INFO_NAME);
	assert_int_equal(nbd_decode_info(future, sizeof(future), &info), 2);
	assert_int_equal(info.type, 0x1234);
}

static void test_decode_info_bad_length(void **state)
{
	struct nbd_info info;
	uint8_t buf[BUF_LEN];
	size_t len;

	for (len = 0; len < sizeof(info_export_bytes); len++)
		assert_true(nbd_decode_info(info_export_bytes, len, &info) < 0);
	for (len = 0; len < sizeof(info_block_size_bytes); len++)
		assert_true(nbd_decode_info(info_block_size_bytes, len,
					    &info) < 0);

	memset(buf, 0, sizeof(buf));
	memcpy(buf, info_export_bytes, sizeof(info_export_bytes));
	assert_int_equal(nbd_decode_info(buf, 13, &info), NBD_PROTO_ELENGTH);
	memcpy(buf, info_block_size_bytes, sizeof(info_block_size_bytes));
	assert_int_equal(nbd_decode_info(buf, 15, &info), NBD_PROTO_ELENGTH);
	assert_int_equal(nbd_decode_info(buf, 12, &info), NBD_PROTO_ELENGTH);
	assert_int_equal(nbd_decode_info(buf, 1, &info), NBD_PROTO_ELENGTH);
}

static void test_decode_info_bad_block_size(void **state)
{
	static const uint32_t bad[][3] = {
		{ 0, 4096, 1 << 20 },		/* min zero */
		{ 3, 4096, 1 << 20 },		/* min not a power of 2 */
		{ 768, 4096, 1 << 20 },
		{ 512, 0, 1 << 20 },		/* preferred zero */
		{ 512, 3000, 1 << 20 },		/* pref not a power of 2 */
		{ 512, 0xffffffff, 0xffffffff },
		{ 8192, 4096, 1 << 20 },	/* min > preferred */
		{ 512, 4096, 2048 },		/* preferred > max */
		{ 512, 4096, 0 },
	};
	struct nbd_info info;
	uint8_t buf[NBD_INFO_BLOCK_SIZE_LEN];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		nbd_encode_info_block_size(buf, bad[i][0], bad[i][1],
					   bad[i][2]);
		if (nbd_decode_info(buf, sizeof(buf), &info) !=
		    NBD_PROTO_EFORMAT)
			fail_msg("block sizes %u/%u/%u accepted", bad[i][0],
				 bad[i][1], bad[i][2]);
	}
}

/* ---- NBD_OPT_EXPORT_NAME reply ------------------------------------------ */

static const uint8_t enr_bytes[] = {
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,	/* size */
	0x00, 0x43,					/* flags */
};

static void test_encode_export_name_reply(void **state)
{
	static const uint8_t zeroes[NBD_ZEROES_LEN];
	uint8_t buf[BUF_LEN];

	poison(buf);
	assert_int_equal(nbd_encode_export_name_reply(buf,
						      0x1122334455667788ULL,
						      0x0043, true), 10);
	assert_memory_equal(buf, enr_bytes,
			    sizeof(enr_bytes));
	assert_untouched(buf, 10);

	poison(buf);
	assert_int_equal(nbd_encode_export_name_reply(buf,
						      0x1122334455667788ULL,
						      0x0043, false), 134);
	assert_memory_equal(buf, enr_bytes,
			    sizeof(enr_bytes));
	assert_memory_equal(buf + 10, zeroes, sizeof(zeroes));
	assert_untouched(buf, 134);
}

static void test_decode_export_name_reply(void **state)
{
	uint8_t buf[BUF_LEN];
	uint64_t size;
	uint16_t tflags;
	size_t len;

	assert_int_equal(nbd_decode_export_name_reply(enr_bytes,
						      10, &size, &tflags), 10);
	assert_true(size == 0x1122334455667788ULL);
	assert_int_equal(tflags, 0x0043);
	for (len = 0; len < sizeof(enr_bytes); len++)
		assert_int_equal(nbd_decode_export_name_reply(enr_bytes,
							      len, &size,
							      &tflags), 0);

	/* With the zeroes present, only the size and flags are consumed. */
	nbd_encode_export_name_reply(buf, 1ULL << 40, 0x0001, false);
	assert_int_equal(nbd_decode_export_name_reply(buf, 134, &size,
						      &tflags), 10);
	assert_true(size == 1ULL << 40);
	assert_int_equal(tflags, 1);
}

/* ---- transmission ------------------------------------------------------- */

static const uint8_t request_bytes[] = {
	W_REQMAGIC,
	0x00, 0x01,					/* FUA */
	0x00, 0x01,					/* WRITE */
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,	/* cookie */
	0x00, 0x00, 0x00, 0x12, 0x34, 0x56, 0x70, 0x00,	/* offset */
	0x00, 0x01, 0x00, 0x00,				/* length */
};

static void test_encode_request(void **state)
{
	const struct nbd_request req = {
		.flags = NBD_CMD_FLAG_FUA,
		.type = NBD_CMD_WRITE,
		.cookie = 0x0102030405060708ULL,
		.offset = 0x0000001234567000ULL,
		.length = 65536,
	};
	uint8_t buf[BUF_LEN];

	poison(buf);
	assert_int_equal(nbd_encode_request(buf, &req), 28);
	assert_memory_equal(buf, request_bytes, sizeof(request_bytes));
	assert_untouched(buf, 28);
}

static void test_decode_request(void **state)
{
	const struct nbd_request in = {
		.flags = 0xffff,
		.type = NBD_CMD_BLOCK_STATUS,
		.cookie = ~0ULL,
		.offset = 0x8000000000000000ULL,
		.length = 0xffffffff,
	};
	struct nbd_request req;
	uint8_t buf[NBD_REQUEST_LEN];
	size_t len, i;

	assert_int_equal(nbd_decode_request(request_bytes,
					    sizeof(request_bytes), &req), 28);
	assert_int_equal(req.flags, NBD_CMD_FLAG_FUA);
	assert_int_equal(req.type, NBD_CMD_WRITE);
	assert_true(req.cookie == 0x0102030405060708ULL);
	assert_true(req.offset == 0x0000001234567000ULL);
	assert_int_equal(req.length, 65536);

	nbd_encode_request(buf, &in);
	assert_int_equal(nbd_decode_request(buf, sizeof(buf), &req), 28);
	assert_int_equal(req.flags, in.flags);
	assert_int_equal(req.type, in.type);
	assert_true(req.cookie == in.cookie);
	assert_true(req.offset == in.offset);
	assert_int_equal(req.length, in.length);

	for (len = 0; len < sizeof(request_bytes); len++)
		assert_int_equal(nbd_decode_request(request_bytes, len, &req),
				 0);

	for (i = 0; i < 4; i++) {
		memcpy(buf, request_bytes, sizeof(buf));
		buf[i] ^= 0x10;
		assert_int_equal(nbd_decode_request(buf, sizeof(buf), &req),
				 NBD_PROTO_EMAGIC);
	}
	/* A reply is not a request. */
	nbd_encode_simple_reply(buf, 0, 1);
	memset(buf + 16, 0, 12);
	assert_int_equal(nbd_decode_request(buf, sizeof(buf), &req),
			 NBD_PROTO_EMAGIC);
}

static const uint8_t simple_reply_bytes[] = {
	W_SIMPLE,
	0x00, 0x00, 0x00, 0x05,				/* NBD_EIO */
	0xde, 0xad, 0xbe, 0xef, 0xca, 0xfe, 0xf0, 0x0d,	/* cookie */
};

static const uint8_t structured_reply_bytes[] = {
	W_STRUCT,
	0x00, 0x01,					/* DONE */
	0x00, 0x01,					/* OFFSET_DATA */
	0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11,	/* cookie */
	0x00, 0x00, 0x10, 0x08,				/* length */
};

static void test_encode_simple_reply(void **state)
{
	uint8_t buf[BUF_LEN];

	poison(buf);
	assert_int_equal(nbd_encode_simple_reply(buf, NBD_EIO,
						 0xdeadbeefcafef00dULL), 16);
	assert_memory_equal(buf, simple_reply_bytes,
			    sizeof(simple_reply_bytes));
	assert_untouched(buf, 16);
}

static void test_encode_structured_reply(void **state)
{
	uint8_t buf[BUF_LEN];

	poison(buf);
	assert_int_equal(nbd_encode_structured_reply(buf, NBD_REPLY_FLAG_DONE,
						     NBD_REPLY_TYPE_OFFSET_DATA,
						     0x0a0b0c0d0e0f1011ULL,
						     4096 + 8), 20);
	assert_memory_equal(buf, structured_reply_bytes,
			    sizeof(structured_reply_bytes));
	assert_untouched(buf, 20);
}

static const uint8_t chunk_offset_data_bytes[] = {
	W_STRUCT,
	0x00, 0x01,					/* DONE */
	0x00, 0x01,					/* OFFSET_DATA */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11, 0x22,	/* cookie */
	0x00, 0x00, 0x10, 0x08,				/* 8 + 4096 */
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x20, 0x00,	/* offset */
};

static void test_encode_chunk_offset_data(void **state)
{
	struct nbd_reply rep;
	uint8_t buf[BUF_LEN];

	assert_int_equal(NBD_CHUNK_OFFSET_DATA_HDR_LEN, 28);
	poison(buf);
	assert_int_equal(nbd_encode_chunk_offset_data(buf, NBD_REPLY_FLAG_DONE,
						      0x1122,
						      0x100002000ULL, 4096),
			 28);
	assert_memory_equal(buf, chunk_offset_data_bytes,
			    sizeof(chunk_offset_data_bytes));
	/* The data is the caller's. */
	assert_untouched(buf, 28);

	assert_int_equal(nbd_decode_reply(buf, 28, &rep), 20);
	assert_true(rep.structured);
	assert_int_equal(rep.flags, NBD_REPLY_FLAG_DONE);
	assert_int_equal(rep.type, NBD_REPLY_TYPE_OFFSET_DATA);
	assert_true(rep.cookie == 0x1122);
	assert_int_equal(rep.length, NBD_CHUNK_OFFSET_LEN + 4096);
	assert_true(get_be64(buf + 20) == 0x100002000ULL);
}

static void test_encode_chunk_error(void **state)
{
	static const uint8_t want[] = {
		W_STRUCT,
		0x00, 0x01,				/* DONE */
		0x80, 0x01,				/* ERROR */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, /* cookie */
		0x00, 0x00, 0x00, 0x09,			/* 6 + 3 */
		0x00, 0x00, 0x00, 0x16,			/* NBD_EINVAL */
		0x00, 0x03,				/* message length */
		'b', 'a', 'd',
	};
	static const uint8_t want_nomsg[] = {
		W_STRUCT,
		0x00, 0x00,
		0x80, 0x01,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0x00, 0x00, 0x00, 0x06,
		0x00, 0x00, 0x00, 0x05,			/* NBD_EIO */
		0x00, 0x00,
	};
	struct nbd_chunk_error err;
	struct nbd_reply rep;
	uint8_t buf[BUF_LEN];

	poison(buf);
	assert_int_equal(nbd_encode_chunk_error(buf, NBD_REPLY_FLAG_DONE, 7,
						NBD_EINVAL, "bad!", 3), 29);
	assert_memory_equal(buf, want, sizeof(want));
	assert_untouched(buf, 29);

	/* Decoded back as a client does. */
	assert_int_equal(nbd_decode_reply(buf, 29, &rep), 20);
	assert_int_equal(rep.type, NBD_REPLY_TYPE_ERROR);
	assert_int_equal(nbd_decode_chunk_error(buf + 20, rep.length,
						rep.type, &err), 9);
	assert_int_equal(err.error, NBD_EINVAL);
	assert_int_equal(err.msglen, 3);
	assert_memory_equal(err.msg, "bad", 3);

	poison(buf);
	assert_int_equal(nbd_encode_chunk_error(buf, 0, ~0ULL, NBD_EIO, "", 0),
			 26);
	assert_memory_equal(buf, want_nomsg, sizeof(want_nomsg));
	assert_untouched(buf, 26);
}

static void test_decode_reply(void **state)
{
	struct nbd_reply rep;
	uint8_t buf[BUF_LEN];
	size_t len;

	memset(&rep, 0xff, sizeof(rep));
	assert_int_equal(nbd_decode_reply(simple_reply_bytes,
					  sizeof(simple_reply_bytes), &rep),
			 16);
	assert_false(rep.structured);
	assert_int_equal(rep.error, NBD_EIO);
	assert_true(rep.cookie == 0xdeadbeefcafef00dULL);
	assert_int_equal(rep.flags, 0);
	assert_int_equal(rep.type, 0);
	assert_int_equal(rep.length, 0);

	memset(&rep, 0xff, sizeof(rep));
	assert_int_equal(nbd_decode_reply(structured_reply_bytes,
					  sizeof(structured_reply_bytes), &rep),
			 20);
	assert_true(rep.structured);
	assert_int_equal(rep.flags, NBD_REPLY_FLAG_DONE);
	assert_int_equal(rep.type, NBD_REPLY_TYPE_OFFSET_DATA);
	assert_true(rep.cookie == 0x0a0b0c0d0e0f1011ULL);
	assert_int_equal(rep.length, 4104);
	assert_int_equal(rep.error, 0);

	/* Round trips with extreme values. */
	nbd_encode_simple_reply(buf, 0xffffffff, ~0ULL);
	assert_int_equal(nbd_decode_reply(buf, 16, &rep), 16);
	assert_int_equal(rep.error, 0xffffffff);
	assert_true(rep.cookie == ~0ULL);
	nbd_encode_structured_reply(buf, 0xffff, NBD_REPLY_TYPE_ERROR_OFFSET,
				    0, 0xffffffff);
	assert_int_equal(nbd_decode_reply(buf, 20, &rep), 20);
	assert_int_equal(rep.flags, 0xffff);
	assert_int_equal(rep.type, NBD_REPLY_TYPE_ERROR_OFFSET);
	assert_true(rep.cookie == 0);
	assert_int_equal(rep.length, 0xffffffff);

	/* A simple reply followed by more data consumes 16 bytes only. */
	memcpy(buf, simple_reply_bytes, 16);
	memcpy(buf + 16, structured_reply_bytes, 20);
	assert_int_equal(nbd_decode_reply(buf, 36, &rep), 16);
	assert_int_equal(nbd_decode_reply(buf + 16, 20, &rep), 20);

	for (len = 0; len < sizeof(simple_reply_bytes); len++)
		assert_int_equal(nbd_decode_reply(simple_reply_bytes, len,
						  &rep), 0);
	for (len = 0; len < sizeof(structured_reply_bytes); len++)
		assert_int_equal(nbd_decode_reply(structured_reply_bytes, len,
						  &rep), 0);
}

static void test_decode_reply_bad_magic(void **state)
{
	struct nbd_reply rep;
	uint8_t buf[NBD_STRUCTURED_REPLY_LEN];
	size_t i;

	for (i = 0; i < 4; i++) {
		memcpy(buf, simple_reply_bytes, 16);
		buf[i] ^= 0x02;
		assert_int_equal(nbd_decode_reply(buf, 16, &rep),
				 NBD_PROTO_EMAGIC);
		/* Rejected as soon as the magic is in. */
		assert_int_equal(nbd_decode_reply(buf, 4, &rep),
				 NBD_PROTO_EMAGIC);
		memcpy(buf, structured_reply_bytes, 20);
		buf[i] ^= 0x02;
		assert_int_equal(nbd_decode_reply(buf, 20, &rep),
				 NBD_PROTO_EMAGIC);
	}
	memcpy(buf, request_bytes, sizeof(buf));
	assert_int_equal(nbd_decode_reply(buf, sizeof(buf), &rep),
			 NBD_PROTO_EMAGIC);
}

static void test_decode_chunk_hole(void **state)
{
	static const uint8_t hole[] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, /* offset */
		0x00, 0x02, 0x00, 0x00,			/* size */
		0xff,
	};
	uint64_t off;
	uint32_t size;
	size_t len;

	assert_int_equal(nbd_decode_chunk_hole(hole, 12, &off, &size), 12);
	assert_true(off == 0x100000);
	assert_int_equal(size, 0x20000);
	for (len = 0; len < 12; len++)
		assert_int_equal(nbd_decode_chunk_hole(hole, len, &off, &size),
				 NBD_PROTO_ELENGTH);
	assert_int_equal(nbd_decode_chunk_hole(hole, 13, &off, &size),
			 NBD_PROTO_ELENGTH);
}

static const uint8_t cerr_bytes[] = {
	0x00, 0x00, 0x00, 0x1c,		/* NBD_ENOSPC */
	0x00, 0x04,			/* message length */
	'f', 'u', 'l', 'l',
};

static const uint8_t cerr_off_bytes[] = {
	0x00, 0x00, 0x00, 0x05,		/* NBD_EIO */
	0x00, 0x03,
	'b', 'a', 'd',
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x00,	/* offset */
};

static void test_decode_chunk_error(void **state)
{
	static const uint8_t nomsg[] = { 0x00, 0x00, 0x00, 0x01, 0x00, 0x00 };
	struct nbd_chunk_error err;
	size_t len;

	assert_int_equal(nbd_decode_chunk_error(cerr_bytes, sizeof(cerr_bytes),
						NBD_REPLY_TYPE_ERROR, &err),
			 10);
	assert_int_equal(err.error, NBD_ENOSPC);
	assert_int_equal(err.msglen, 4);
	assert_ptr_equal(err.msg, cerr_bytes + 6);
	assert_memory_equal(err.msg, "full", 4);
	assert_false(err.has_offset);

	assert_int_equal(nbd_decode_chunk_error(cerr_off_bytes,
						sizeof(cerr_off_bytes),
						NBD_REPLY_TYPE_ERROR_OFFSET,
						&err), 17);
	assert_int_equal(err.error, NBD_EIO);
	assert_int_equal(err.msglen, 3);
	assert_memory_equal(err.msg, "bad", 3);
	assert_true(err.has_offset);
	assert_true(err.offset == 0x1200);

	assert_int_equal(nbd_decode_chunk_error(nomsg, sizeof(nomsg),
						NBD_REPLY_TYPE_ERROR, &err), 6);
	assert_int_equal(err.error, NBD_EPERM);
	assert_int_equal(err.msglen, 0);

	for (len = 0; len < sizeof(cerr_bytes); len++)
		assert_int_equal(nbd_decode_chunk_error(cerr_bytes, len,
							NBD_REPLY_TYPE_ERROR,
							&err),
				 NBD_PROTO_ELENGTH);
	for (len = 0; len < sizeof(cerr_off_bytes); len++)
		assert_int_equal(nbd_decode_chunk_error(cerr_off_bytes, len,
						NBD_REPLY_TYPE_ERROR_OFFSET,
						&err),
				 NBD_PROTO_ELENGTH);
}

static void test_decode_chunk_error_malformed(void **state)
{
	struct nbd_chunk_error err;
	uint8_t buf[BUF_LEN];

	/* Message length longer and shorter than the chunk. */
	memcpy(buf, cerr_bytes, sizeof(cerr_bytes));
	put_be16(buf + 4, 5);
	assert_int_equal(nbd_decode_chunk_error(buf, sizeof(cerr_bytes),
						NBD_REPLY_TYPE_ERROR, &err),
			 NBD_PROTO_ELENGTH);
	put_be16(buf + 4, 3);
	assert_int_equal(nbd_decode_chunk_error(buf, sizeof(cerr_bytes),
						NBD_REPLY_TYPE_ERROR, &err),
			 NBD_PROTO_ELENGTH);
	put_be16(buf + 4, 0xffff);
	assert_int_equal(nbd_decode_chunk_error(buf, sizeof(cerr_bytes),
						NBD_REPLY_TYPE_ERROR, &err),
			 NBD_PROTO_ELENGTH);

	/* An ERROR_OFFSET chunk without its offset; ERROR with one. */
	assert_int_equal(nbd_decode_chunk_error(cerr_bytes,
						sizeof(cerr_bytes),
						NBD_REPLY_TYPE_ERROR_OFFSET,
						&err),
			 NBD_PROTO_ELENGTH);
	assert_int_equal(nbd_decode_chunk_error(cerr_off_bytes,
						sizeof(cerr_off_bytes),
						NBD_REPLY_TYPE_ERROR, &err),
			 NBD_PROTO_ELENGTH);

	/* An error chunk carrying error 0. */
	memcpy(buf, cerr_bytes, sizeof(cerr_bytes));
	put_be32(buf, 0);
	assert_int_equal(nbd_decode_chunk_error(buf, sizeof(cerr_bytes),
						NBD_REPLY_TYPE_ERROR, &err),
			 NBD_PROTO_EFORMAT);
	memcpy(buf, cerr_off_bytes, sizeof(cerr_off_bytes));
	put_be32(buf, 0);
	assert_int_equal(nbd_decode_chunk_error(buf,
						sizeof(cerr_off_bytes),
						NBD_REPLY_TYPE_ERROR_OFFSET,
						&err),
			 NBD_PROTO_EFORMAT);
}

/* ---- errors and names --------------------------------------------------- */

static void test_error_to_errno(void **state)
{
	static const struct {
		uint32_t nbd;
		int err;
	} map[] = {
		{ NBD_SUCCESS, 0 },
		{ NBD_EPERM, EPERM },
		{ NBD_EIO, EIO },
		{ NBD_ENOMEM, ENOMEM },
		{ NBD_EINVAL, EINVAL },
		{ NBD_ENOSPC, ENOSPC },
		{ NBD_EOVERFLOW, EOVERFLOW },
		{ NBD_ENOTSUP, EOPNOTSUPP },
		{ NBD_ESHUTDOWN, ESHUTDOWN },
	};
	static const uint32_t unknown[] = {
		2, 3, 4, 13, 21, 23, 27, 29, 74, 76, 94, 96, 107, 109, 1000,
		0x7fffffff, 0x80000000, 0xffffffff,
	};
	size_t i;

	/* The wire values are fixed by proto.md, not by the host's errno. */
	assert_int_equal(NBD_EPERM, 1);
	assert_int_equal(NBD_EIO, 5);
	assert_int_equal(NBD_ENOMEM, 12);
	assert_int_equal(NBD_EINVAL, 22);
	assert_int_equal(NBD_ENOSPC, 28);
	assert_int_equal(NBD_EOVERFLOW, 75);
	assert_int_equal(NBD_ENOTSUP, 95);
	assert_int_equal(NBD_ESHUTDOWN, 108);

	for (i = 0; i < ARRAY_SIZE(map); i++) {
		assert_int_equal(nbd_error_to_errno(map[i].nbd), map[i].err);
		/* Both ways: every wire value survives a round trip. */
		assert_int_equal(nbd_errno_to_error(map[i].err), map[i].nbd);
	}
	/* proto.md: a client treats values it does not know as EINVAL. */
	for (i = 0; i < ARRAY_SIZE(unknown); i++)
		if (nbd_error_to_errno(unknown[i]) != EINVAL)
			fail_msg("NBD error %u maps to %d, not EINVAL",
				 unknown[i], nbd_error_to_errno(unknown[i]));
}

static void test_errno_to_error(void **state)
{
	static const struct {
		int err;
		uint32_t nbd;
	} map[] = {
		{ 0, NBD_SUCCESS },
		{ EPERM, NBD_EPERM },
		{ EROFS, NBD_EPERM },
		{ EIO, NBD_EIO },
		{ ENOMEM, NBD_ENOMEM },
		{ EINVAL, NBD_EINVAL },
		{ ENOSPC, NBD_ENOSPC },
		{ EDQUOT, NBD_ENOSPC },
		{ EFBIG, NBD_ENOSPC },
		{ EOVERFLOW, NBD_EOVERFLOW },
		{ EOPNOTSUPP, NBD_ENOTSUP },
		{ ENOTSUP, NBD_ENOTSUP },
		{ ESHUTDOWN, NBD_ESHUTDOWN },
		/* Anything else is reported as an I/O error. */
		{ ENOENT, NBD_EIO },
		{ EBADF, NBD_EIO },
		{ EAGAIN, NBD_EIO },
		{ -1, NBD_EIO },
		{ 100000, NBD_EIO },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(map); i++)
		if (nbd_errno_to_error(map[i].err) != map[i].nbd)
			fail_msg("errno %d maps to NBD error %u, not %u",
				 map[i].err, nbd_errno_to_error(map[i].err),
				 map[i].nbd);
}

static void test_names(void **state)
{
	assert_string_equal(nbd_opt_name(NBD_OPT_GO), "NBD_OPT_GO");
	assert_string_equal(nbd_opt_name(NBD_OPT_EXPORT_NAME),
			    "NBD_OPT_EXPORT_NAME");
	assert_string_equal(nbd_opt_name(NBD_OPT_STRUCTURED_REPLY),
			    "NBD_OPT_STRUCTURED_REPLY");
	assert_string_equal(nbd_opt_name(42), "unknown option");
	assert_string_equal(nbd_rep_name(NBD_REP_ACK), "NBD_REP_ACK");
	assert_string_equal(nbd_rep_name(NBD_REP_ERR_UNSUP),
			    "NBD_REP_ERR_UNSUP");
	assert_string_equal(nbd_rep_name(NBD_REP_ERR_TOO_BIG),
			    "NBD_REP_ERR_TOO_BIG");
	assert_string_equal(nbd_rep_name(NBD_REP_FLAG_ERROR | 100),
			    "unknown reply");
	assert_string_equal(nbd_cmd_name(NBD_CMD_WRITE_ZEROES),
			    "NBD_CMD_WRITE_ZEROES");
	assert_string_equal(nbd_cmd_name(100), "unknown command");

	assert_string_equal(nbd_proto_strerror(NBD_PROTO_EMAGIC),
			    "bad magic number");
	assert_string_equal(nbd_proto_strerror(NBD_PROTO_ELENGTH),
			    "length out of range");
	assert_string_equal(nbd_proto_strerror(NBD_PROTO_ETYPE),
			    "unknown type");
	assert_string_equal(nbd_proto_strerror(NBD_PROTO_EFORMAT),
			    "malformed payload");
	assert_string_equal(nbd_proto_strerror(-100), "unknown codec error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get),
		cmocka_unit_test(test_encode_greeting),
		cmocka_unit_test(test_decode_greeting),
		cmocka_unit_test(test_decode_greeting_oldstyle),
		cmocka_unit_test(test_decode_greeting_bad_magic),
		cmocka_unit_test(test_decode_oldstyle_tail),
		cmocka_unit_test(test_encode_option),
		cmocka_unit_test(test_decode_option),
		cmocka_unit_test(test_encode_option_reply),
		cmocka_unit_test(test_decode_option_reply),
		cmocka_unit_test(test_encode_go),
		cmocka_unit_test(test_decode_go),
		cmocka_unit_test(test_decode_go_truncated),
		cmocka_unit_test(test_decode_go_malformed),
		cmocka_unit_test(test_encode_rep_server),
		cmocka_unit_test(test_encode_info_export),
		cmocka_unit_test(test_encode_info_block_size),
		cmocka_unit_test(test_encode_info_text),
		cmocka_unit_test(test_decode_info),
		cmocka_unit_test(test_decode_info_bad_length),
		cmocka_unit_test(test_decode_info_bad_block_size),
		cmocka_unit_test(test_encode_export_name_reply),
		cmocka_unit_test(test_decode_export_name_reply),
		cmocka_unit_test(test_encode_request),
		cmocka_unit_test(test_decode_request),
		cmocka_unit_test(test_encode_simple_reply),
		cmocka_unit_test(test_encode_structured_reply),
		cmocka_unit_test(test_encode_chunk_offset_data),
		cmocka_unit_test(test_encode_chunk_error),
		cmocka_unit_test(test_decode_reply),
		cmocka_unit_test(test_decode_reply_bad_magic),
		cmocka_unit_test(test_decode_chunk_hole),
		cmocka_unit_test(test_decode_chunk_error),
		cmocka_unit_test(test_decode_chunk_error_malformed),
		cmocka_unit_test(test_error_to_errno),
		cmocka_unit_test(test_errno_to_error),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
