// SPDX-License-Identifier: GPL-2.0-only
/*
 * The client's reply stream parser (proto/nbd/nbd_replies.c), fed bytes: what
 * completes, with which error, what lands in the buffers, and every
 * server fault that must end the stream rather than reach memory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "nbd_replies.h"

#define NREQ	4
#define LEN	4096

struct owner {
	struct nbd_rx_req req[NREQ];
	bool busy[NREQ];
	uint8_t buf[NREQ][LEN];
	int done[NREQ];		/* completions seen */
	int err[NREQ];
	char notice[256];
};

static struct nbd_rx_req *lookup(void *o, uint64_t cookie)
{
	struct owner *ow = o;

	if (cookie >= NREQ || !ow->busy[cookie])
		return NULL;
	return &ow->req[cookie];
}

static void complete(void *o, struct nbd_rx_req *req, int error)
{
	struct owner *ow = o;
	unsigned int i = req - ow->req;

	ow->done[i]++;
	ow->err[i] = error;
	ow->busy[i] = false;
}

static void notice(void *o, const char *msg)
{
	struct owner *ow = o;

	snprintf(ow->notice, sizeof(ow->notice), "%s", msg);
}

static const struct nbd_rx_ops ops = { lookup, complete, notice };

static struct owner ow;
static struct nbd_rx rx;
static uint8_t stream[4 * LEN];
static size_t slen;

/* Request i: a READ of len bytes at offset into its own buffer. */
static void start(bool structured)
{
	unsigned int i;

	memset(&ow, 0, sizeof(ow));
	memset(ow.buf, 0xee, sizeof(ow.buf));
	for (i = 0; i < NREQ; i++) {
		ow.req[i].buf = ow.buf[i];
		ow.req[i].offset = 1ULL << 20;
		ow.req[i].len = LEN;
		ow.req[i].type = NBD_CMD_READ;
		nbd_rx_req_init(&ow.req[i]);
		ow.busy[i] = true;
	}
	nbd_rx_init(&rx, &ops, &ow, structured, 1024);
	slen = 0;
}

static void put_simple(uint64_t cookie, uint32_t error, size_t datalen,
		       uint8_t fill)
{
	slen += nbd_encode_simple_reply(stream + slen, error, cookie);
	memset(stream + slen, fill, datalen);
	slen += datalen;
}

static void put_data(uint64_t cookie, bool done, uint64_t off, uint32_t len,
		     uint8_t fill)
{
	slen += nbd_encode_chunk_offset_data(stream + slen,
					     done ? NBD_REPLY_FLAG_DONE : 0,
					     cookie, off, len);
	memset(stream + slen, fill, len);
	slen += len;
}

static void put_hole(uint64_t cookie, bool done, uint64_t off, uint32_t len)
{
	slen += nbd_encode_structured_reply(stream + slen,
					    done ? NBD_REPLY_FLAG_DONE : 0,
					    NBD_REPLY_TYPE_OFFSET_HOLE, cookie,
					    NBD_CHUNK_HOLE_LEN);
	put_be64(stream + slen, off);
	put_be32(stream + slen + 8, len);
	slen += NBD_CHUNK_HOLE_LEN;
}

static void put_none(uint64_t cookie)
{
	slen += nbd_encode_structured_reply(stream + slen, NBD_REPLY_FLAG_DONE,
					    NBD_REPLY_TYPE_NONE, cookie, 0);
}

/* Feeds the stream in pieces of step bytes, as a socket might. */
static long feed_in_steps(size_t step)
{
	size_t have = 0, pos = 0;
	long used;

	while (have < slen) {
		have += step;
		if (have > slen)
			have = slen;
		used = nbd_rx_feed(&rx, stream + pos, have - pos);
		if (used < 0)
			return used;
		pos += used;
	}
	return pos;
}

static void expect_ok(size_t step)
{
	long used = feed_in_steps(step);

	if (used < 0)
		fail_msg("violation: %s", rx.errmsg);
	assert_int_equal(used, slen);
}

static void expect_violation(const char *sub)
{
	assert_int_equal(feed_in_steps(slen), -1);
	if (!strstr(rx.errmsg, sub))
		fail_msg("message '%s' lacks '%s'", rx.errmsg, sub);
}

static void test_simple_read_every_split(void **state)
{
	size_t step;

	for (step = 1; step <= 64; step += 7) {
		start(false);
		put_simple(0, 0, LEN, 0x11);
		put_simple(1, 0, LEN, 0x22);
		expect_ok(step);
		assert_int_equal(ow.done[0], 1);
		assert_int_equal(ow.done[1], 1);
		assert_int_equal(ow.err[0], 0);
		assert_int_equal(ow.buf[0][LEN - 1], 0x11);
		assert_int_equal(ow.buf[1][0], 0x22);
	}
}

static void test_simple_error_has_no_payload(void **state)
{
	start(false);
	put_simple(2, NBD_EIO, 0, 0);
	put_simple(3, 0, LEN, 0x33);
	expect_ok(5);
	assert_int_equal(ow.err[2], EIO);
	assert_int_equal(ow.buf[2][0], 0xee);
	assert_int_equal(ow.buf[3][0], 0x33);
}

/* The owner receives the rest of a payload in place. */
static void test_payload_in_place(void **state)
{
	uint8_t *dst;
	uint32_t due;

	start(false);
	put_simple(0, 0, LEN, 0x44);
	assert_int_equal(nbd_rx_feed(&rx, stream, NBD_SIMPLE_REPLY_LEN + 100),
			 NBD_SIMPLE_REPLY_LEN + 100);
	due = nbd_rx_payload_dst(&rx, &dst);
	assert_int_equal(due, LEN - 100);
	assert_ptr_equal(dst, ow.buf[0] + 100);
	memset(dst, 0x44, due);
	nbd_rx_payload_received(&rx, due);
	assert_int_equal(ow.done[0], 1);
	assert_int_equal(nbd_rx_payload_dst(&rx, &dst), 0);
}

static void test_structured_data_and_hole(void **state)
{
	uint64_t o = 1ULL << 20;

	start(true);
	put_data(0, false, o, 1024, 0x55);
	put_hole(0, false, o + 1024, 2048);
	put_data(0, true, o + 3072, 1024, 0x66);
	expect_ok(3);
	assert_int_equal(ow.done[0], 1);
	assert_int_equal(ow.err[0], 0);
	assert_int_equal(ow.buf[0][1023], 0x55);
	assert_int_equal(ow.buf[0][1024], 0);
	assert_int_equal(ow.buf[0][3071], 0);
	assert_int_equal(ow.buf[0][3072], 0x66);
}

static void test_structured_reverse_order(void **state)
{
	uint64_t o = 1ULL << 20;

	start(true);
	put_data(1, false, o + 3072, 1024, 0x77);
	put_data(1, false, o + 1024, 1024, 0x78);
	put_hole(1, false, o + 2048, 1024);
	put_data(1, false, o, 1024, 0x79);
	put_none(1);
	expect_ok(11);
	assert_int_equal(ow.err[1], 0);
	assert_int_equal(ow.buf[1][0], 0x79);
	assert_int_equal(ow.buf[1][2048], 0);
}

/* DONE without every byte: EIO and a notice naming the offsets. */
static void test_structured_incomplete(void **state)
{
	uint64_t o = 1ULL << 20;

	start(true);
	put_none(0);
	put_data(1, true, o, 2048, 0x12);
	expect_ok(64);
	assert_int_equal(ow.err[0], EIO);
	assert_int_equal(ow.err[1], EIO);
	assert_string_equal(ow.notice,
			    "structured read of 4096 bytes at offset 1048576 ended having sent only 2048 of them (data or holes); it fails with EIO");
}

static void test_structured_error_chunk(void **state)
{
	start(true);
	slen += nbd_encode_chunk_error(stream + slen, NBD_REPLY_FLAG_DONE, 0,
				       NBD_ENOSPC, "full", 4);
	put_none(1);	/* the stream goes on */
	expect_ok(7);
	assert_int_equal(ow.err[0], ENOSPC);
	assert_int_equal(ow.done[1], 1);
}

static void test_data_before_request_wraps(void **state)
{
	start(true);
	/* offset + length wraps past 2^64 into the request. */
	put_data(0, true, UINT64_MAX - 1023, 2048, 0);
	slen = 20 + 8;		/* header and offset are enough */
	expect_violation("OFFSET_DATA chunk for 2048 bytes");
	assert_int_equal(ow.buf[0][0], 0xee);
}

static void test_data_outside(void **state)
{
	uint64_t o = 1ULL << 20;

	start(true);
	put_data(0, true, o - 512, 1024, 0);
	expect_violation("lies outside its read");
	start(true);
	put_data(0, true, o + 3072, 2048, 0);
	expect_violation("lies outside its read");
	start(true);
	put_data(0, true, o + LEN, 1, 0);
	expect_violation("lies outside its read");
}

static void test_hole_outside_or_empty(void **state)
{
	uint64_t o = 1ULL << 20;

	start(true);
	put_hole(0, true, UINT64_MAX, 2);
	expect_violation("OFFSET_HOLE chunk");
	start(true);
	put_hole(0, true, o + 1024, 0);
	expect_violation("OFFSET_HOLE chunk");
	start(true);
	put_hole(0, true, o + 1024, LEN);
	expect_violation("OFFSET_HOLE chunk");
	assert_int_equal(ow.buf[0][LEN - 1], 0xee);
}

static void test_overlap(void **state)
{
	uint64_t o = 1ULL << 20;

	start(true);
	put_data(0, false, o + 2048, 2048, 0);
	put_hole(0, false, o, 1024);
	put_data(0, true, o + 1024, 1536, 0);
	expect_violation("overlap at offset 1050624");
}

static void test_too_many_pieces(void **state)
{
	uint64_t o = 1ULL << 20;
	int i;

	start(true);
	/* 100-byte pieces 100 bytes apart, backwards: nothing merges. */
	for (i = NBD_RX_MAX_EXTENTS; i >= 0; i--)
		put_hole(0, false, o + i * 200, 100);
	expect_violation("more than 16 separate pieces");
}

static void test_unknown_and_stale_cookies(void **state)
{
	start(false);
	put_simple(7, 0, 0, 0);
	expect_violation("unknown cookie 0x7");
	start(false);
	put_simple(0, NBD_EIO, 0, 0);
	put_simple(0, NBD_EIO, 0, 0);
	expect_violation("unknown cookie 0");
	assert_int_equal(ow.done[0], 1);
}

static void test_bad_magic(void **state)
{
	start(false);
	memcpy(stream, "HTTP/1.1 200 OK\r\n\r\n", 19);
	slen = 19;
	expect_violation("bad reply magic 0x48545450");
}

static void test_structured_not_negotiated(void **state)
{
	start(false);
	put_none(0);
	expect_violation("not negotiated");
}

static void test_chunk_too_large(void **state)
{
	start(true);
	slen += nbd_encode_structured_reply(stream, NBD_REPLY_FLAG_DONE,
					    NBD_REPLY_TYPE_ERROR, 0,
					    0xffffffff);
	expect_violation("too large");
}

static void test_malformed_chunks(void **state)
{
	start(true);
	slen += nbd_encode_structured_reply(stream, NBD_REPLY_FLAG_DONE,
					    NBD_REPLY_TYPE_OFFSET_DATA, 0, 8);
	expect_violation("malformed OFFSET_DATA");
	start(true);
	slen += nbd_encode_structured_reply(stream, 0, NBD_REPLY_TYPE_NONE, 0, 0);
	expect_violation("malformed NONE");
	start(true);
	slen += nbd_encode_structured_reply(stream, NBD_REPLY_FLAG_DONE,
					    NBD_REPLY_TYPE_ERROR, 0, 6);
	put_be32(stream + slen, NBD_EIO);
	put_be16(stream + slen + 4, 100);	/* message longer than the chunk */
	slen += 6;
	expect_violation("malformed error chunk");
	start(true);
	ow.req[0].type = NBD_CMD_WRITE;
	put_data(0, true, 1ULL << 20, 16, 0);
	expect_violation("OFFSET_DATA chunk in reply to");
}

/* Unknown chunk types: ignored, unless they carry the error bit. */
static void test_unknown_chunk_types(void **state)
{
	start(true);
	slen += nbd_encode_structured_reply(stream + slen, 0, 99, 0, 4);
	slen += 4;
	put_data(0, true, 1ULL << 20, LEN, 1);
	slen += nbd_encode_structured_reply(stream + slen, NBD_REPLY_FLAG_DONE,
					    NBD_REPLY_TYPE_ERROR_BIT | 99, 1, 0);
	expect_ok(9);
	assert_int_equal(ow.err[0], 0);
	assert_int_equal(ow.err[1], EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple_read_every_split),
		cmocka_unit_test(test_simple_error_has_no_payload),
		cmocka_unit_test(test_payload_in_place),
		cmocka_unit_test(test_structured_data_and_hole),
		cmocka_unit_test(test_structured_reverse_order),
		cmocka_unit_test(test_structured_incomplete),
		cmocka_unit_test(test_structured_error_chunk),
		cmocka_unit_test(test_data_before_request_wraps),
		cmocka_unit_test(test_data_outside),
		cmocka_unit_test(test_hole_outside_or_empty),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_too_many_pieces),
		cmocka_unit_test(test_unknown_and_stale_cookies),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_structured_not_negotiated),
		cmocka_unit_test(test_chunk_too_large),
		cmocka_unit_test(test_malformed_chunks),
		cmocka_unit_test(test_unknown_chunk_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
