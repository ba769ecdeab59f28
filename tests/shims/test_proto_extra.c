// SPDX-License-Identifier: GPL-2.0-only
/*
 * The server-side encoders of shims/nbd/proto_extra.c, checked byte by
 * byte and decoded back with proto/'s decoders where they exist.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proto_extra.h"

static void test_rep_server(void **state)
{
	static const uint8_t expect[] = { 0, 0, 0, 5, 't', 'o', 'r', 'u', 's' };
	uint8_t buf[16];

	assert_int_equal(nbd_encode_rep_server(buf, "torus", 5), 9);
	assert_memory_equal(buf, expect, sizeof(expect));
}

static void test_info_text(void **state)
{
	static const uint8_t expect[] = { 0, 1, 'd', 'e', 'f' };
	uint8_t buf[16];

	assert_int_equal(nbd_encode_info_text(buf, NBD_INFO_NAME, "def", 3), 5);
	assert_memory_equal(buf, expect, sizeof(expect));
	assert_int_equal(nbd_encode_info_text(buf, NBD_INFO_DESCRIPTION, "", 0),
			 2);
}

static void test_offset_data(void **state)
{
	struct nbd_reply rep;
	uint8_t buf[64];

	assert_int_equal(nbd_encode_chunk_offset_data(buf, NBD_REPLY_FLAG_DONE,
						      0x1122, 8192, 4096),
			 NBD_CHUNK_OFFSET_DATA_HDR_LEN);
	assert_int_equal(nbd_decode_reply(buf, sizeof(buf), &rep),
			 NBD_STRUCTURED_REPLY_LEN);
	assert_true(rep.structured);
	assert_int_equal(rep.flags, NBD_REPLY_FLAG_DONE);
	assert_int_equal(rep.type, NBD_REPLY_TYPE_OFFSET_DATA);
	assert_int_equal(rep.cookie, 0x1122);
	assert_int_equal(rep.length, 8 + 4096);
	assert_int_equal(nbd_get64(buf + NBD_STRUCTURED_REPLY_LEN), 8192);
}

static void test_chunk_error(void **state)
{
	struct nbd_chunk_error err;
	struct nbd_reply rep;
	uint8_t buf[64];
	size_t n;

	n = nbd_encode_chunk_error(buf, NBD_REPLY_FLAG_DONE, 7, NBD_EINVAL,
				   "bad", 3);
	assert_int_equal(n, NBD_STRUCTURED_REPLY_LEN + NBD_CHUNK_ERROR_LEN + 3);
	assert_int_equal(nbd_decode_reply(buf, n, &rep),
			 NBD_STRUCTURED_REPLY_LEN);
	assert_int_equal(rep.type, NBD_REPLY_TYPE_ERROR);
	assert_int_equal(rep.length, NBD_CHUNK_ERROR_LEN + 3);
	assert_true(nbd_decode_chunk_error(buf + NBD_STRUCTURED_REPLY_LEN,
					   rep.length, rep.type, &err) > 0);
	assert_int_equal(err.error, NBD_EINVAL);
	assert_int_equal(err.msglen, 3);
	assert_memory_equal(err.msg, "bad", 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rep_server),
		cmocka_unit_test(test_info_text),
		cmocka_unit_test(test_offset_data),
		cmocka_unit_test(test_chunk_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
