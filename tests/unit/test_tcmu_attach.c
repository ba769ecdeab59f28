// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU attach exchange (proto/tcmu/tcmu_attach.c) byte by byte: the
 * messages encoded against hand-written bytes, every way a decoder refuses
 * them, and the magics told apart. A decoder's input is a heap copy of
 * exactly the bytes given, so the sanitized build catches any read past it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcmu_attach.h"

static const uint8_t req_magic[16] = "TORUS-TCMU-RING";
static const uint8_t reply_magic[16] = "TORUS-TCMU-ACK.";
static const uint8_t hello_magic[16] = "TORUS-TCMU-HOST";

static int req_decode(const uint8_t *buf, size_t len,
		      struct tcmu_attach_req *r, const char **msg)
{
	uint8_t *copy = malloc(len ? len : 1);
	int ret;

	memcpy(copy, buf, len);
	*msg = NULL;
	ret = tcmu_attach_req_decode(copy, len, r, msg);
	free(copy);
	if (ret)
		assert_true(*msg && (*msg)[0]);
	return ret;
}

static int reply_decode(const uint8_t *buf, size_t len,
			struct tcmu_attach_reply *r, const char **msg)
{
	uint8_t *copy = malloc(len ? len : 1);
	int ret;

	memcpy(copy, buf, len);
	*msg = NULL;
	ret = tcmu_attach_reply_decode(copy, len, r, msg);
	free(copy);
	if (ret)
		assert_true(*msg && (*msg)[0]);
	return ret;
}

static void test_req_encode_bytes(void **state)
{
	static const uint8_t want[TCMU_ATTACH_REQ_LEN] = {
		'T', 'O', 'R', 'U', 'S', '-', 'T', 'C',
		'M', 'U', '-', 'R', 'I', 'N', 'G', 0,
		0x01, 0, 0, 0,			/* version */
		0, 0, 0, 0,			/* flags */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
	};
	struct tcmu_attach_req r = {
		.version = TCMU_ATTACH_V1,
		.region_size = 0x0102030405060708ULL,
	};
	uint8_t buf[TCMU_ATTACH_REQ_LEN];

	memset(buf, 0xee, sizeof(buf));
	tcmu_attach_req_encode(buf, &r);
	assert_memory_equal(buf, want, sizeof(want));

	/* Every field little-endian, whatever it holds. */
	r.version = 0xa1b2c3d4;
	r.flags = 0x11223344;
	r.region_size = UINT64_MAX;
	tcmu_attach_req_encode(buf, &r);
	assert_memory_equal(buf, req_magic, 16);
	assert_int_equal(buf[16], 0xd4);
	assert_int_equal(buf[19], 0xa1);
	assert_int_equal(buf[20], 0x44);
	assert_int_equal(buf[23], 0x11);
	for (int i = 24; i < 32; i++)
		assert_int_equal(buf[i], 0xff);
}

static void test_req_round_trip(void **state)
{
	static const uint64_t sizes[] = {
		0, 1, (8ULL << 20) + (1ULL << 30), 1ULL << 32, UINT64_MAX,
	};
	struct tcmu_attach_req in = { .version = TCMU_ATTACH_V1 }, out;
	uint8_t buf[TCMU_ATTACH_REQ_LEN];
	const char *msg;
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		in.region_size = sizes[i];
		tcmu_attach_req_encode(buf, &in);
		memset(&out, 0x5a, sizeof(out));
		assert_int_equal(req_decode(buf, sizeof(buf), &out, &msg), 0);
		assert_int_equal(out.version, TCMU_ATTACH_V1);
		assert_int_equal(out.flags, 0);
		assert_true(out.region_size == sizes[i]);
	}
}

static void test_req_decode_refusals(void **state)
{
	struct tcmu_attach_req in = {
		.version = TCMU_ATTACH_V1,
		.region_size = 1 << 20,
	}, out;
	uint8_t buf[TCMU_ATTACH_REQ_LEN + 1], bad[TCMU_ATTACH_REQ_LEN];
	const char *msg;
	size_t len;
	int i;

	tcmu_attach_req_encode(buf, &in);
	buf[TCMU_ATTACH_REQ_LEN] = 0;

	/* Short, empty and long messages. */
	for (len = 0; len < TCMU_ATTACH_REQ_LEN; len++)
		assert_int_equal(req_decode(buf, len, &out, &msg), -1);
	assert_int_equal(req_decode(buf, sizeof(buf), &out, &msg), -1);

	/* Any byte of the magic changed, the NUL included. */
	for (i = 0; i < 16; i++) {
		memcpy(bad, buf, sizeof(bad));
		bad[i] ^= 0x20;
		assert_int_equal(req_decode(bad, sizeof(bad), &out, &msg), -1);
		assert_non_null(strstr(msg, "not a TCMU attach request"));
	}
	/* The reply's magic is not the request's. */
	memcpy(bad, buf, sizeof(bad));
	memcpy(bad, reply_magic, 16);
	assert_int_equal(req_decode(bad, sizeof(bad), &out, &msg), -1);

	/* Versions 0, 3 and one with only a high byte set. */
	memcpy(bad, buf, sizeof(bad));
	bad[16] = 0;
	assert_int_equal(req_decode(bad, sizeof(bad), &out, &msg), -1);
	assert_non_null(strstr(msg, "version"));
	bad[16] = 3;
	assert_int_equal(req_decode(bad, sizeof(bad), &out, &msg), -1);
	bad[16] = 1;
	bad[19] = 1;
	assert_int_equal(req_decode(bad, sizeof(bad), &out, &msg), -1);
	assert_non_null(strstr(msg, "version"));

	/* Any flag bit. */
	for (i = 0; i < 32; i++) {
		memcpy(bad, buf, sizeof(bad));
		bad[20 + i / 8] = 1u << (i % 8);
		assert_int_equal(req_decode(bad, sizeof(bad), &out, &msg), -1);
		assert_non_null(strstr(msg, "flags"));
	}
}

static void test_reply_encode_bytes(void **state)
{
	struct tcmu_attach_reply r = {
		.version = TCMU_ATTACH_V1,
		.status = 22,
		.msg = "region too small",
	};
	uint8_t buf[TCMU_ATTACH_REPLY_LEN], want[TCMU_ATTACH_REPLY_LEN];

	memset(want, 0, sizeof(want));
	memcpy(want, reply_magic, 16);
	want[16] = 1;
	want[20] = 22;
	memcpy(want + 24, "region too small", 16);
	memset(buf, 0xee, sizeof(buf));
	tcmu_attach_reply_encode(buf, &r);
	assert_memory_equal(buf, want, sizeof(want));

	r.status = 0x01020304;
	r.msg[0] = 0;
	tcmu_attach_reply_encode(buf, &r);
	assert_int_equal(buf[20], 0x04);
	assert_int_equal(buf[23], 0x01);
	for (int i = 24; i < TCMU_ATTACH_REPLY_LEN; i++)
		assert_int_equal(buf[i], 0);
}

static void test_reply_encode_unterminated(void **state)
{
	struct tcmu_attach_reply r = { .version = TCMU_ATTACH_V1 };
	uint8_t buf[TCMU_ATTACH_REPLY_LEN];

	/* A message filling all 232 bytes: the last one goes out as NUL. */
	memset(r.msg, 'm', sizeof(r.msg));
	tcmu_attach_reply_encode(buf, &r);
	for (int i = 24; i < TCMU_ATTACH_REPLY_LEN - 1; i++)
		assert_int_equal(buf[i], 'm');
	assert_int_equal(buf[TCMU_ATTACH_REPLY_LEN - 1], 0);
}

static void test_reply_round_trip(void **state)
{
	struct tcmu_attach_reply in = {
		.version = TCMU_ATTACH_V1,
		.status = 95,
		.msg = "no such store",
	}, out;
	uint8_t buf[TCMU_ATTACH_REPLY_LEN];
	const char *msg;

	tcmu_attach_reply_encode(buf, &in);
	memset(&out, 0x5a, sizeof(out));
	assert_int_equal(reply_decode(buf, sizeof(buf), &out, &msg), 0);
	assert_int_equal(out.version, TCMU_ATTACH_V1);
	assert_int_equal(out.status, 95);
	assert_string_equal(out.msg, "no such store");
}

/* Version 2: a shared reply's wake tag rides in flags' second byte. */
static void test_reply_tag_round_trip(void **state)
{
	struct tcmu_attach_reply in = {
		.version = TCMU_ATTACH_VERSION,
		.flags = TCMU_REPLY_JOINED,
		.submitters = 3,
		.tag = 7,
		.region_size = 1ull << 33,
		.msg = "joined",
	}, out;
	uint8_t buf[TCMU_ATTACH_REPLY_LEN];
	const char *msg;

	tcmu_attach_reply_encode(buf, &in);
	assert_int_equal(buf[24], TCMU_REPLY_JOINED);
	assert_int_equal(buf[25], 7);
	memset(&out, 0x5a, sizeof(out));
	assert_int_equal(reply_decode(buf, sizeof(buf), &out, &msg), 0);
	assert_int_equal(out.flags, TCMU_REPLY_JOINED);
	assert_int_equal(out.tag, 7);
	assert_int_equal(out.submitters, 3);
	assert_int_equal(out.region_size, 1ull << 33);
	/* The doorbell's flag beside them, the tag untouched. */
	in.flags = TCMU_REPLY_JOINED | TCMU_REPLY_DOORBELL;
	tcmu_attach_reply_encode(buf, &in);
	assert_int_equal(buf[24], TCMU_REPLY_JOINED | TCMU_REPLY_DOORBELL);
	assert_int_equal(reply_decode(buf, sizeof(buf), &out, &msg), 0);
	assert_int_equal(out.flags, TCMU_REPLY_JOINED | TCMU_REPLY_DOORBELL);
	assert_int_equal(out.tag, 7);
	/* Version 1 has none. */
	in.version = TCMU_ATTACH_V1;
	tcmu_attach_reply_encode(buf, &in);
	assert_int_equal(reply_decode(buf, sizeof(buf), &out, &msg), 0);
	assert_int_equal(out.tag, 0);
}

static void test_reply_decode_nul_terminates(void **state)
{
	struct tcmu_attach_reply out;
	uint8_t buf[TCMU_ATTACH_REPLY_LEN];
	const char *msg;

	/* A peer that fills the message without a NUL. */
	memset(buf, 'x', sizeof(buf));
	memcpy(buf, reply_magic, 16);
	memset(buf + 16, 0, 8);
	buf[16] = 1;
	memset(&out, 0x5a, sizeof(out));
	assert_int_equal(reply_decode(buf, sizeof(buf), &out, &msg), 0);
	assert_int_equal(out.status, 0);
	assert_int_equal(strlen(out.msg), TCMU_ATTACH_MSG_MAX - 1);
	assert_int_equal(out.msg[TCMU_ATTACH_MSG_MAX - 2], 'x');
	assert_int_equal(out.msg[TCMU_ATTACH_MSG_MAX - 1], 0);

	/* Still terminated when the version is refused. */
	buf[16] = 9;
	memset(&out, 0x5a, sizeof(out));
	assert_int_equal(reply_decode(buf, sizeof(buf), &out, &msg), -1);
	assert_non_null(strstr(msg, "version"));
	assert_int_equal(out.msg[TCMU_ATTACH_MSG_MAX - 1], 0);
}

static void test_reply_decode_refusals(void **state)
{
	struct tcmu_attach_reply in = { .version = TCMU_ATTACH_V1 }, out;
	uint8_t buf[TCMU_ATTACH_REPLY_LEN + 1], bad[TCMU_ATTACH_REPLY_LEN];
	const char *msg;
	size_t len;
	int i;

	tcmu_attach_reply_encode(buf, &in);
	buf[TCMU_ATTACH_REPLY_LEN] = 0;
	for (len = 0; len < TCMU_ATTACH_REPLY_LEN; len++)
		assert_int_equal(reply_decode(buf, len, &out, &msg), -1);
	assert_int_equal(reply_decode(buf, sizeof(buf), &out, &msg), -1);

	for (i = 0; i < 16; i++) {
		memcpy(bad, buf, sizeof(bad));
		bad[i] ^= 0x01;
		assert_int_equal(reply_decode(bad, sizeof(bad), &out, &msg),
				 -1);
		assert_non_null(strstr(msg, "reply"));
	}
	memcpy(bad, buf, sizeof(bad));
	memcpy(bad, req_magic, 16);
	assert_int_equal(reply_decode(bad, sizeof(bad), &out, &msg), -1);

	memcpy(bad, buf, sizeof(bad));
	bad[16] = 0;
	assert_int_equal(reply_decode(bad, sizeof(bad), &out, &msg), -1);
	assert_non_null(strstr(msg, "version"));
	bad[16] = 1;
	bad[18] = 1;
	assert_int_equal(reply_decode(bad, sizeof(bad), &out, &msg), -1);
}

static void test_hello(void **state)
{
	static const uint8_t want[TCMU_ATTACH_HELLO_LEN] = {
		'T', 'O', 'R', 'U', 'S', '-', 'T', 'C',
		'M', 'U', '-', 'H', 'O', 'S', 'T', 0,
		0x02, 0, 0, 0,			/* version */
	};
	uint8_t buf[TCMU_ATTACH_HELLO_LEN + 1], *copy;
	uint32_t version = 0;
	const char *msg = NULL;
	size_t len;
	int i;

	tcmu_attach_hello_encode(buf, TCMU_ATTACH_VERSION);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(tcmu_attach_hello_decode(buf, TCMU_ATTACH_HELLO_LEN,
						  &version, &msg), 0);
	assert_int_equal(version, TCMU_ATTACH_VERSION);

	/* Short, long, or any byte of the magic changed. */
	buf[TCMU_ATTACH_HELLO_LEN] = 0;
	for (len = 0; len <= TCMU_ATTACH_HELLO_LEN + 1; len++) {
		if (len == TCMU_ATTACH_HELLO_LEN)
			continue;
		copy = malloc(len ? len : 1);
		memcpy(copy, buf, len);
		assert_int_equal(tcmu_attach_hello_decode(copy, len, &version,
							  &msg), -1);
		assert_non_null(strstr(msg, "hello"));
		free(copy);
	}
	for (i = 0; i < 16; i++) {
		buf[i] ^= 0x01;
		assert_int_equal(tcmu_attach_hello_decode(buf,
				TCMU_ATTACH_HELLO_LEN, &version, &msg), -1);
		buf[i] ^= 0x01;
	}
}

static void test_magic(void **state)
{
	static const uint8_t nbd_newstyle[16] = "NBDMAGICIHAVEOPT";
	uint8_t buf[16];
	int i;

	assert_int_equal(tcmu_attach_magic(req_magic, 16), TCMU_MAGIC_REQ);
	assert_int_equal(tcmu_attach_magic(reply_magic, 16), TCMU_MAGIC_REPLY);
	assert_int_equal(tcmu_attach_magic(hello_magic, 16), TCMU_MAGIC_HELLO);
	assert_int_equal(tcmu_attach_magic(nbd_newstyle, 16), TCMU_MAGIC_NONE);
	/* Fewer than 16 bytes tell nothing, not even a magic's start. */
	for (i = 0; i < 16; i++)
		assert_int_equal(tcmu_attach_magic(hello_magic, i),
				 TCMU_MAGIC_NONE);
	/* Each byte of each magic counts. */
	for (i = 0; i < 16; i++) {
		memcpy(buf, hello_magic, 16);
		buf[i] ^= 0x40;
		assert_int_equal(tcmu_attach_magic(buf, 16), TCMU_MAGIC_NONE);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_req_encode_bytes),
		cmocka_unit_test(test_req_round_trip),
		cmocka_unit_test(test_req_decode_refusals),
		cmocka_unit_test(test_reply_encode_bytes),
		cmocka_unit_test(test_reply_encode_unterminated),
		cmocka_unit_test(test_reply_round_trip),
		cmocka_unit_test(test_reply_tag_round_trip),
		cmocka_unit_test(test_reply_decode_nul_terminates),
		cmocka_unit_test(test_reply_decode_refusals),
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_magic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
