// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the NBD client handshake state machine
 * (proto/nbd/nbd_handshake.c). Each test plays a server byte for byte the way
 * the driver loop in nbd_handshake.h does: it takes what the machine wants
 * to send, checks it against hand-written bytes, and feeds exactly hs.want
 * bytes of server messages back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nbd_handshake.h"
#include "nbd_proto.h"

#define W_NBDMAGIC	0x4e, 0x42, 0x44, 0x4d, 0x41, 0x47, 0x49, 0x43
#define W_IHAVEOPT	0x49, 0x48, 0x41, 0x56, 0x45, 0x4f, 0x50, 0x54
#define W_OLDSTYLE	0x00, 0x00, 0x42, 0x02, 0x81, 0x86, 0x12, 0x53

#define HF_FIXED	NBD_FLAG_FIXED_NEWSTYLE
#define HF_NOZEROES	NBD_FLAG_NO_ZEROES

#define EXPORT_SIZE	(5ULL << 30)
#define EXPORT_TFLAGS	(NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | \
			 NBD_FLAG_SEND_FUA)

/* NBD_OPT_GO for "disk" asking for NBD_INFO_BLOCK_SIZE. */
#define W_GO_DISK							\
	W_IHAVEOPT,							\
	0x00, 0x00, 0x00, 0x07,		/* NBD_OPT_GO */		\
	0x00, 0x00, 0x00, 0x0c,		/* 12 bytes */			\
	0x00, 0x00, 0x00, 0x04, 'd', 'i', 's', 'k',			\
	0x00, 0x01,			/* 1 info request */		\
	0x00, 0x03			/* NBD_INFO_BLOCK_SIZE */

/* NBD_OPT_EXPORT_NAME for "disk". */
#define W_EXPORT_NAME_DISK						\
	W_IHAVEOPT,							\
	0x00, 0x00, 0x00, 0x01,		/* EXPORT_NAME */		\
	0x00, 0x00, 0x00, 0x04,						\
	'd', 'i', 's', 'k'

static const uint8_t go_disk[] = { W_GO_DISK };
static const uint8_t export_name_disk[] = { W_EXPORT_NAME_DISK };

static void start(struct nbd_hs *hs, const char *name, enum nbd_hs_mode mode,
		  bool structured)
{
	const struct nbd_hs_config cfg = {
		.export_name = name,
		.mode = mode,
		.structured_replies = structured,
	};

	nbd_hs_start(hs, &cfg);
	assert_int_equal(hs->state, NBD_HS_MAGIC);
	assert_int_equal(hs->want, 16);
	assert_int_equal(hs->outlen, 0);
}

static void assert_contains(const char *s, const char *sub)
{
	if (!strstr(s, sub))
		fail_msg("message '%s' does not mention '%s'", s, sub);
}

static void assert_failed(struct nbd_hs *hs, const char *sub)
{
	if (hs->state != NBD_HS_FAILED)
		fail_msg("state %d, expected NBD_HS_FAILED", hs->state);
	assert_int_equal(hs->want, 0);
	assert_true(hs->errmsg[0]);
	if (sub)
		assert_contains(hs->errmsg, sub);
}

/* Feeds len bytes, which must be exactly what the machine asks for. */
static void feed(struct nbd_hs *hs, const void *buf, size_t len)
{
	if (hs->want != len)
		fail_msg("machine wants %zu bytes in state %d, test has %zu",
			 hs->want, hs->state, len);
	nbd_hs_feed(hs, buf, len);
}

/* Takes the bytes to send, which must be exactly want[0..len). */
static void expect_out(struct nbd_hs *hs, const uint8_t *want, size_t len)
{
	assert_int_equal(hs->outlen, len);
	assert_memory_equal(hs->out, want, len);
	hs->outlen = 0;
}

static void expect_no_out(struct nbd_hs *hs)
{
	assert_int_equal(hs->outlen, 0);
}

/* Expects client flags then an option (header and payload) in hs->out. */
static void expect_flags_and(struct nbd_hs *hs, uint32_t cflags,
			     const uint8_t *opt, size_t optlen)
{
	uint8_t want[4 + NBD_HS_OUT_MAX];

	put_be32(want, cflags);
	memcpy(want + 4, opt, optlen);
	expect_out(hs, want, 4 + optlen);
}

static void send_greeting(struct nbd_hs *hs, uint16_t hflags)
{
	static const uint8_t magics[] = { W_NBDMAGIC, W_IHAVEOPT };
	uint8_t flags[2];

	feed(hs, magics, sizeof(magics));
	assert_int_equal(hs->state, NBD_HS_HFLAGS);
	assert_int_equal(hs->want, 2);
	expect_no_out(hs);
	put_be16(flags, hflags);
	feed(hs, flags, sizeof(flags));
}

static void send_reply(struct nbd_hs *hs, uint32_t opt, uint32_t type,
		       const void *data, uint32_t len)
{
	uint8_t hdr[NBD_OPTION_REPLY_HDR_LEN];

	assert_int_equal(hs->state, NBD_HS_OPTREP_HDR);
	nbd_encode_option_reply(hdr, opt, type, len);
	feed(hs, hdr, sizeof(hdr));
	if (!len)
		return;
	if (hs->state != NBD_HS_OPTREP_DATA)
		return;
	feed(hs, data, len);
}

static void send_info_export(struct nbd_hs *hs, uint64_t size,
			     uint16_t tflags)
{
	uint8_t buf[NBD_INFO_EXPORT_LEN];

	nbd_encode_info_export(buf, size, tflags);
	send_reply(hs, NBD_OPT_GO, NBD_REP_INFO, buf, sizeof(buf));
	assert_int_equal(hs->state, NBD_HS_OPTREP_HDR);
	assert_int_equal(hs->want, 20);
}

static void send_info_block_size(struct nbd_hs *hs, uint32_t min,
				 uint32_t pref, uint32_t max)
{
	uint8_t buf[NBD_INFO_BLOCK_SIZE_LEN];

	nbd_encode_info_block_size(buf, min, pref, max);
	send_reply(hs, NBD_OPT_GO, NBD_REP_INFO, buf, sizeof(buf));
}

static void send_export_reply(struct nbd_hs *hs, uint64_t size,
			      uint16_t tflags, bool no_zeroes)
{
	uint8_t buf[NBD_EXPORT_NAME_REPLY_LEN + NBD_ZEROES_LEN];
	size_t n;

	assert_int_equal(hs->state, NBD_HS_EXPORT_REPLY);
	n = nbd_encode_export_name_reply(buf, size, tflags, no_zeroes);
	feed(hs, buf, n);
}

static void assert_default_block_sizes(const struct nbd_export *e)
{
	assert_false(e->block_size_known);
	assert_int_equal(e->min_block, 1);
	assert_int_equal(e->pref_block, 4096);
	assert_int_equal(e->max_block, 32U << 20);
}

static void assert_done(struct nbd_hs *hs)
{
	if (hs->state != NBD_HS_DONE)
		fail_msg("state %d, expected NBD_HS_DONE (%s)", hs->state,
			 hs->errmsg);
	assert_int_equal(hs->want, 0);
	expect_no_out(hs);
}

/* ---- a conformant server ------------------------------------------------ */

static void test_conformant_go(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	assert_int_equal(hs.state, NBD_HS_OPTREP_HDR);
	assert_int_equal(hs.want, 20);
	/* Client flags 0x00000003, then OPT_GO, in one write. */
	expect_flags_and(&hs, 0x00000003, go_disk, sizeof(go_disk));
	assert_int_equal(sizeof(go_disk), 28);

	send_info_export(&hs, EXPORT_SIZE, EXPORT_TFLAGS);
	expect_no_out(&hs);
	send_info_block_size(&hs, 512, 4096, 1 << 20);
	assert_int_equal(hs.state, NBD_HS_OPTREP_HDR);
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ACK, NULL, 0);
	assert_done(&hs);

	assert_true(hs.exp.size == EXPORT_SIZE);
	assert_int_equal(hs.exp.tflags, EXPORT_TFLAGS);
	assert_int_equal(hs.exp.hflags, HF_FIXED | HF_NOZEROES);
	assert_true(hs.exp.block_size_known);
	assert_int_equal(hs.exp.min_block, 512);
	assert_int_equal(hs.exp.pref_block, 4096);
	assert_int_equal(hs.exp.max_block, 1 << 20);
	assert_false(hs.exp.structured_replies);
	assert_false(hs.exp.oldstyle);
	assert_false(hs.exp.via_export_name);
	assert_false(hs.exp.fell_back);
}

static void test_conformant_go_exact_bytes(void **state)
{
	/* The whole client side of the exchange, written out. */
	static const uint8_t want[] = {
		0x00, 0x00, 0x00, 0x03,
		0x49, 0x48, 0x41, 0x56, 0x45, 0x4f, 0x50, 0x54,
		0x00, 0x00, 0x00, 0x07,
		0x00, 0x00, 0x00, 0x0c,
		0x00, 0x00, 0x00, 0x04,
		0x64, 0x69, 0x73, 0x6b,
		0x00, 0x01,
		0x00, 0x03,
	};
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_GO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	expect_out(&hs, want, sizeof(want));
}

static void test_conformant_go_info_order(void **state)
{
	static const uint8_t name[] = { 0x00, 0x01, 'd', 'i', 's', 'k' };
	static const uint8_t desc[] = { 0x00, 0x02 };
	struct nbd_hs hs;

	/* Block size first, other info types in between, export last. */
	start(&hs, "disk", NBD_HS_MODE_GO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	expect_flags_and(&hs, 3, go_disk, sizeof(go_disk));
	send_info_block_size(&hs, 1, 65536, 0xffffffff);
	send_reply(&hs, NBD_OPT_GO, NBD_REP_INFO, name, sizeof(name));
	send_reply(&hs, NBD_OPT_GO, NBD_REP_INFO, desc, sizeof(desc));
	send_info_export(&hs, 12345, NBD_FLAG_HAS_FLAGS | NBD_FLAG_READ_ONLY);
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ACK, NULL, 0);
	assert_done(&hs);
	assert_true(hs.exp.size == 12345);
	assert_int_equal(hs.exp.tflags, 3);
	assert_int_equal(hs.exp.pref_block, 65536);
	assert_int_equal(hs.exp.max_block, 0xffffffff);
}

static void test_conformant_go_no_block_size(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	expect_flags_and(&hs, 3, go_disk, sizeof(go_disk));
	send_info_export(&hs, EXPORT_SIZE, EXPORT_TFLAGS);
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ACK, NULL, 0);
	assert_done(&hs);
	assert_default_block_sizes(&hs.exp);
}

static void test_default_export_name(void **state)
{
	static const uint8_t go_default[] = {
		W_IHAVEOPT,
		0x00, 0x00, 0x00, 0x07,
		0x00, 0x00, 0x00, 0x08,
		0x00, 0x00, 0x00, 0x00,
		0x00, 0x01, 0x00, 0x03,
	};
	struct nbd_hs hs;

	start(&hs, "", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	expect_flags_and(&hs, 3, go_default, sizeof(go_default));
	send_info_export(&hs, 1, 1);
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ACK, NULL, 0);
	assert_done(&hs);
}

static void test_extra_hflags_not_echoed(void **state)
{
	struct nbd_hs hs;

	/* Bits the client does not know are never sent back. */
	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, 0xffff);
	expect_flags_and(&hs, 3, go_disk, sizeof(go_disk));
	assert_int_equal(hs.exp.hflags, 0xffff);
}

static void test_structured_ack(void **state)
{
	static const uint8_t sr[] = {
		W_IHAVEOPT,
		0x00, 0x00, 0x00, 0x08,		/* STRUCTURED_REPLY */
		0x00, 0x00, 0x00, 0x00,
	};
	struct nbd_hs hs;

	/*
	 * An option without payload: queue_option() once did memcpy() from
	 * NULL here, which the -sanitize build of this test catches.
	 */
	start(&hs, "disk", NBD_HS_MODE_AUTO, true);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	assert_int_equal(hs.state, NBD_HS_OPTREP_HDR);
	assert_int_equal(hs.want, 20);
	expect_flags_and(&hs, 3, sr, sizeof(sr));

	send_reply(&hs, NBD_OPT_STRUCTURED_REPLY, NBD_REP_ACK, NULL, 0);
	assert_true(hs.exp.structured_replies);
	assert_int_equal(hs.state, NBD_HS_OPTREP_HDR);
	assert_int_equal(hs.want, 20);
	expect_out(&hs, go_disk, sizeof(go_disk));

	send_info_export(&hs, EXPORT_SIZE, EXPORT_TFLAGS);
	send_info_block_size(&hs, 4096, 4096, 4096);
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ACK, NULL, 0);
	assert_done(&hs);
	assert_true(hs.exp.structured_replies);
	assert_int_equal(hs.exp.min_block, 4096);
	assert_false(hs.exp.via_export_name);
}

static void test_structured_unsup(void **state)
{
	static const char msg[] = "no structured replies here";
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, true);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_STRUCTURED_REPLY, NBD_REP_ERR_UNSUP, msg,
		   sizeof(msg) - 1);
	assert_false(hs.exp.structured_replies);
	assert_int_equal(hs.state, NBD_HS_OPTREP_HDR);
	expect_out(&hs, go_disk, sizeof(go_disk));

	send_info_export(&hs, EXPORT_SIZE, EXPORT_TFLAGS);
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ACK, NULL, 0);
	assert_done(&hs);
	assert_false(hs.exp.structured_replies);
}

static void test_structured_unsup_go_mode(void **state)
{
	struct nbd_hs hs;

	/* Refusing structured replies is no reason to give up on OPT_GO. */
	start(&hs, "disk", NBD_HS_MODE_GO, true);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_STRUCTURED_REPLY, NBD_REP_ERR_UNSUP, NULL, 0);
	expect_out(&hs, go_disk, sizeof(go_disk));
}

static void test_structured_bad_reply(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, true);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_STRUCTURED_REPLY, NBD_REP_SERVER, NULL, 0);
	assert_failed(&hs, "NBD_OPT_STRUCTURED_REPLY");
	expect_no_out(&hs);
}

/* ---- torus: hflags 0x0001, closes on NBD_OPT_GO ------------------------- */

static void test_torus_reconnect(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED);
	/* Exactly FIXED_NEWSTYLE: never a flag the server did not offer. */
	expect_flags_and(&hs, 0x00000001, go_disk, sizeof(go_disk));
	assert_int_equal(hs.want, 20);

	nbd_hs_closed(&hs);
	assert_int_equal(hs.state, NBD_HS_RECONNECT);
	assert_int_equal(hs.want, 0);

	nbd_hs_restart(&hs);
	assert_int_equal(hs.state, NBD_HS_MAGIC);
	assert_int_equal(hs.want, 16);
	expect_no_out(&hs);
	assert_true(hs.exp.fell_back);

	send_greeting(&hs, HF_FIXED);
	expect_flags_and(&hs, 0x00000001, export_name_disk,
			 sizeof(export_name_disk));
	assert_int_equal(hs.state, NBD_HS_EXPORT_REPLY);
	/* NO_ZEROES not agreed: size, flags and 124 zeroes. */
	assert_int_equal(hs.want, 134);

	send_export_reply(&hs, EXPORT_SIZE, NBD_FLAG_HAS_FLAGS, false);
	assert_done(&hs);
	assert_true(hs.exp.size == EXPORT_SIZE);
	assert_int_equal(hs.exp.tflags, NBD_FLAG_HAS_FLAGS);
	assert_true(hs.exp.via_export_name);
	assert_true(hs.exp.fell_back);
	assert_false(hs.exp.oldstyle);
	assert_int_equal(hs.exp.hflags, HF_FIXED);
	assert_default_block_sizes(&hs.exp);
}

static void test_torus_structured_reconnect(void **state)
{
	struct nbd_hs hs;

	/* torus also closes on NBD_OPT_STRUCTURED_REPLY. */
	start(&hs, "disk", NBD_HS_MODE_AUTO, true);
	send_greeting(&hs, HF_FIXED);
	hs.outlen = 0;
	nbd_hs_closed(&hs);
	assert_int_equal(hs.state, NBD_HS_RECONNECT);
	nbd_hs_restart(&hs);
	send_greeting(&hs, HF_FIXED);
	/* No structured replies on the retry: EXPORT_NAME straight away. */
	expect_flags_and(&hs, 1, export_name_disk, sizeof(export_name_disk));
	send_export_reply(&hs, 4096, 1, false);
	assert_done(&hs);
	assert_false(hs.exp.structured_replies);
	assert_true(hs.exp.fell_back);
}

/* ---- ZeroOS 0-Disk: hflags 0x0003, resets after misparsing OPT_GO ------- */

static void test_zeroos_reconnect(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	expect_flags_and(&hs, 0x00000003, go_disk, sizeof(go_disk));
	nbd_hs_closed(&hs);
	assert_int_equal(hs.state, NBD_HS_RECONNECT);

	nbd_hs_restart(&hs);
	assert_int_equal(hs.want, 16);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	expect_flags_and(&hs, 0x00000003, export_name_disk,
			 sizeof(export_name_disk));
	/* NO_ZEROES agreed: only size and flags. */
	assert_int_equal(hs.want, 10);
	send_export_reply(&hs, 1ULL << 40, 0x0001, true);
	assert_done(&hs);
	assert_true(hs.exp.size == 1ULL << 40);
	assert_true(hs.exp.via_export_name);
	assert_true(hs.exp.fell_back);
	assert_default_block_sizes(&hs.exp);
}

static void test_closed_during_reply_payload(void **state)
{
	uint8_t hdr[NBD_OPTION_REPLY_HDR_LEN];
	struct nbd_hs hs;

	/* A reset after a reply header, while its payload is due. */
	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	nbd_encode_option_reply(hdr, NBD_OPT_GO, NBD_REP_INFO, 12);
	feed(&hs, hdr, sizeof(hdr));
	assert_int_equal(hs.state, NBD_HS_OPTREP_DATA);
	assert_int_equal(hs.want, 12);
	nbd_hs_closed(&hs);
	assert_int_equal(hs.state, NBD_HS_RECONNECT);
}

/* ---- handshake modes ---------------------------------------------------- */

static void test_go_mode_closed(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_GO, false);
	send_greeting(&hs, HF_FIXED);
	expect_flags_and(&hs, 1, go_disk, sizeof(go_disk));
	nbd_hs_closed(&hs);
	assert_failed(&hs, "handshake=auto");
	assert_contains(hs.errmsg, "NBD_OPT_GO");
}

static void test_export_name_mode(void **state)
{
	struct nbd_hs hs;

	/* Even with structured replies asked for: no option but EXPORT_NAME. */
	start(&hs, "disk", NBD_HS_MODE_EXPORT_NAME, true);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	assert_int_equal(hs.state, NBD_HS_EXPORT_REPLY);
	assert_int_equal(hs.want, 10);
	expect_flags_and(&hs, 3, export_name_disk, sizeof(export_name_disk));
	send_export_reply(&hs, 8192, 0x0005, true);
	assert_done(&hs);
	assert_true(hs.exp.size == 8192);
	assert_int_equal(hs.exp.tflags, 5);
	assert_true(hs.exp.via_export_name);
	assert_false(hs.exp.fell_back);
	assert_false(hs.exp.structured_replies);
	assert_default_block_sizes(&hs.exp);
}

static void test_export_name_mode_zeroes(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_EXPORT_NAME, false);
	send_greeting(&hs, HF_FIXED);
	expect_flags_and(&hs, 1, export_name_disk, sizeof(export_name_disk));
	assert_int_equal(hs.want, 134);
	send_export_reply(&hs, 8192, 1, false);
	assert_done(&hs);
}

static void test_go_unsup_auto_fallback(void **state)
{
	static const char msg[] = "unknown option";
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	expect_flags_and(&hs, 3, go_disk, sizeof(go_disk));
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ERR_UNSUP, msg, sizeof(msg) - 1);
	/* Same connection: no reconnect, no client flags again. */
	assert_int_equal(hs.state, NBD_HS_EXPORT_REPLY);
	assert_int_equal(hs.want, 10);
	expect_out(&hs, export_name_disk, sizeof(export_name_disk));
	send_export_reply(&hs, 4096, 1, true);
	assert_done(&hs);
	assert_true(hs.exp.via_export_name);
	assert_false(hs.exp.fell_back);
}

static void test_go_unsup_auto_fallback_zeroes(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED);
	expect_flags_and(&hs, 1, go_disk, sizeof(go_disk));
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ERR_UNSUP, NULL, 0);
	expect_out(&hs, export_name_disk, sizeof(export_name_disk));
	assert_int_equal(hs.want, 134);
	send_export_reply(&hs, 4096, 1, false);
	assert_done(&hs);
}

static void test_go_unsup_go_mode(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_GO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	expect_flags_and(&hs, 3, go_disk, sizeof(go_disk));
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ERR_UNSUP, NULL, 0);
	assert_failed(&hs, "NBD_REP_ERR_UNSUP");
	expect_no_out(&hs);
}

/* ---- refusals and protocol errors --------------------------------------- */

static void test_err_unknown(void **state)
{
	static const char msg[] = "export not found";
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ERR_UNKNOWN, msg, sizeof(msg) - 1);
	assert_failed(&hs, "'disk'");
	/* The server's own text is passed on. */
	assert_contains(hs.errmsg, msg);
	expect_no_out(&hs);
}

static void test_err_unknown_default_export(void **state)
{
	struct nbd_hs hs;

	start(&hs, "", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ERR_UNKNOWN, NULL, 0);
	assert_failed(&hs, "(default)");
}

static void test_err_long_message(void **state)
{
	static char msg[4000];
	struct nbd_hs hs;

	/* A server message far longer than errmsg is cut, not overflowed. */
	memset(msg, 'm', sizeof(msg));
	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ERR_POLICY, msg, sizeof(msg));
	assert_failed(&hs, "NBD_REP_ERR_POLICY");
	assert_true(strlen(hs.errmsg) < sizeof(hs.errmsg));
	assert_contains(hs.errmsg, "mmmm");
}

static void test_err_tls_reqd(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ERR_TLS_REQD, NULL, 0);
	assert_failed(&hs, "TLS");
	assert_contains(hs.errmsg, "disk");
}

static void test_err_policy(void **state)
{
	static const char msg[] = "go away";
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ERR_POLICY, msg, sizeof(msg) - 1);
	assert_failed(&hs, "NBD_REP_ERR_POLICY");
	assert_contains(hs.errmsg, "go away");
	assert_contains(hs.errmsg, "disk");
}

static void test_wrong_option_reply(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_LIST, NBD_REP_ACK, NULL, 0);
	assert_failed(&hs, "NBD_OPT_LIST");
	assert_contains(hs.errmsg, "NBD_OPT_GO");
}

static void test_wrong_option_reply_structured(void **state)
{
	struct nbd_hs hs;

	/* An answer to OPT_GO while STRUCTURED_REPLY is pending. */
	start(&hs, "disk", NBD_HS_MODE_AUTO, true);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ACK, NULL, 0);
	assert_failed(&hs, "NBD_OPT_STRUCTURED_REPLY");
}

static void test_unexpected_go_reply(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_GO, NBD_REP_SERVER, "\0\0\0\0", 4);
	assert_failed(&hs, "NBD_REP_SERVER");
}

static void test_bad_reply_magic(void **state)
{
	uint8_t hdr[NBD_OPTION_REPLY_HDR_LEN];
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	nbd_encode_option_reply(hdr, NBD_OPT_GO, NBD_REP_ACK, 0);
	hdr[7] ^= 0xff;
	feed(&hs, hdr, sizeof(hdr));
	assert_failed(&hs, "magic");
}

static void test_bad_greeting_magic(void **state)
{
	static const uint8_t http[16] = "HTTP/1.1 400 Bad";
	static const uint8_t second[] = { W_NBDMAGIC, W_NBDMAGIC };
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	feed(&hs, http, sizeof(http));
	assert_failed(&hs, "not an NBD server");
	expect_no_out(&hs);

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	feed(&hs, second, sizeof(second));
	assert_failed(&hs, "not an NBD server");
}

static void test_reply_too_big(void **state)
{
	uint8_t hdr[NBD_OPTION_REPLY_HDR_LEN];
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	nbd_encode_option_reply(hdr, NBD_OPT_GO, NBD_REP_INFO,
				NBD_HS_REPLY_MAX + 1);
	feed(&hs, hdr, sizeof(hdr));
	assert_failed(&hs, "65537");

	/* The limit itself is still read. */
	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	nbd_encode_option_reply(hdr, NBD_OPT_GO, NBD_REP_ERR_POLICY,
				NBD_HS_REPLY_MAX);
	feed(&hs, hdr, sizeof(hdr));
	assert_int_equal(hs.state, NBD_HS_OPTREP_DATA);
	assert_int_equal(hs.want, NBD_HS_REPLY_MAX);

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	nbd_encode_option_reply(hdr, NBD_OPT_GO, NBD_REP_INFO, 0xffffffff);
	feed(&hs, hdr, sizeof(hdr));
	assert_failed(&hs, NULL);
}

static void test_ack_without_info_export(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_info_block_size(&hs, 512, 4096, 1 << 20);
	send_reply(&hs, NBD_OPT_GO, NBD_REP_ACK, NULL, 0);
	assert_failed(&hs, "NBD_INFO_EXPORT");
}

static void test_malformed_info(void **state)
{
	static const uint8_t short_export[] = { 0x00, 0x00, 0x00, 0x01 };
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_info_block_size(&hs, 512, 3000, 1 << 20);
	assert_failed(&hs, "NBD_REP_INFO");

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_GO, NBD_REP_INFO, short_export,
		   sizeof(short_export));
	assert_failed(&hs, "NBD_REP_INFO");

	/* NBD_REP_INFO without any payload. */
	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	hs.outlen = 0;
	send_reply(&hs, NBD_OPT_GO, NBD_REP_INFO, NULL, 0);
	assert_failed(&hs, "NBD_REP_INFO");
}

/* ---- old servers -------------------------------------------------------- */

static void test_oldstyle(void **state)
{
	static const uint8_t magics[] = { W_NBDMAGIC, W_OLDSTYLE };
	uint8_t tail[NBD_OLDSTYLE_TAIL_LEN];
	struct nbd_hs hs;

	memset(tail, 0, sizeof(tail));
	put_be64(tail, 0x0000000280000000ULL);		/* 10 GiB */
	put_be32(tail + 8, NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH);

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	feed(&hs, magics, sizeof(magics));
	assert_int_equal(hs.state, NBD_HS_OLDSTYLE);
	assert_int_equal(hs.want, 8 + 4 + 124);
	expect_no_out(&hs);
	feed(&hs, tail, sizeof(tail));
	assert_done(&hs);
	assert_true(hs.exp.size == 0x0000000280000000ULL);
	assert_int_equal(hs.exp.tflags, NBD_FLAG_HAS_FLAGS |
			 NBD_FLAG_SEND_FLUSH);
	assert_true(hs.exp.oldstyle);
	assert_true(hs.exp.via_export_name);
	assert_default_block_sizes(&hs.exp);
}

static void test_no_fixed_newstyle_auto(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, true);
	send_greeting(&hs, 0);
	/* Client flags 0, then EXPORT_NAME: neither GO nor STRUCTURED_REPLY. */
	expect_flags_and(&hs, 0x00000000, export_name_disk,
			 sizeof(export_name_disk));
	assert_int_equal(hs.state, NBD_HS_EXPORT_REPLY);
	assert_int_equal(hs.want, 134);
	send_export_reply(&hs, 1 << 20, 1, false);
	assert_done(&hs);
	assert_true(hs.exp.via_export_name);
	assert_false(hs.exp.fell_back);
}

static void test_no_fixed_newstyle_no_zeroes(void **state)
{
	struct nbd_hs hs;

	/* NO_ZEROES alone is still honoured. */
	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_NOZEROES);
	expect_flags_and(&hs, 0x00000002, export_name_disk,
			 sizeof(export_name_disk));
	assert_int_equal(hs.want, 10);
}

static void test_no_fixed_newstyle_go_mode(void **state)
{
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_GO, false);
	send_greeting(&hs, 0);
	assert_failed(&hs, "fixed newstyle");
	assert_contains(hs.errmsg, "handshake=auto");
}

static void test_closed_export_name_reply(void **state)
{
	struct nbd_hs hs;

	/* torus refusing a second connection to an export in use. */
	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED);
	hs.outlen = 0;
	nbd_hs_closed(&hs);
	nbd_hs_restart(&hs);
	send_greeting(&hs, HF_FIXED);
	expect_flags_and(&hs, 1, export_name_disk, sizeof(export_name_disk));
	nbd_hs_closed(&hs);
	assert_failed(&hs, "one connection");
	assert_contains(hs.errmsg, "disk");

	/* Same in export-name mode, without any reconnect. */
	start(&hs, "disk", NBD_HS_MODE_EXPORT_NAME, false);
	send_greeting(&hs, HF_FIXED);
	hs.outlen = 0;
	nbd_hs_closed(&hs);
	assert_failed(&hs, "one connection");
}

static void test_closed_during_greeting(void **state)
{
	static const uint8_t magics[] = { W_NBDMAGIC, W_IHAVEOPT };
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	nbd_hs_closed(&hs);
	assert_failed(&hs, "greeting");

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	feed(&hs, magics, sizeof(magics));
	nbd_hs_closed(&hs);
	assert_failed(&hs, "greeting");
}

/* ---- limits and misuse -------------------------------------------------- */

static void test_name_limits(void **state)
{
	static char name[NBD_HS_NAME_MAX + 2];
	struct nbd_hs_config cfg = { .export_name = name };
	static struct nbd_hs hs;
	uint8_t *p;

	memset(name, 'n', NBD_HS_NAME_MAX + 1);
	nbd_hs_start(&hs, &cfg);
	assert_failed(&hs, "4096");

	/* The longest name fits in out with the client flags. */
	name[NBD_HS_NAME_MAX] = 0;
	start(&hs, name, NBD_HS_MODE_AUTO, false);
	send_greeting(&hs, HF_FIXED | HF_NOZEROES);
	assert_int_equal(hs.outlen, 4 + 16 + 4 + NBD_HS_NAME_MAX + 2 + 2);
	assert_true(hs.outlen <= sizeof(hs.out));
	p = hs.out + 4;
	assert_true(get_be64(p) == NBD_IHAVEOPT);
	assert_int_equal(get_be32(p + 8), NBD_OPT_GO);
	assert_int_equal(get_be32(p + 12), 4 + NBD_HS_NAME_MAX + 4);
	assert_int_equal(get_be32(p + 16), NBD_HS_NAME_MAX);
	assert_memory_equal(p + 20, name, NBD_HS_NAME_MAX);
	assert_int_equal(get_be16(p + 20 + NBD_HS_NAME_MAX), 1);
	assert_int_equal(get_be16(p + 22 + NBD_HS_NAME_MAX), 3);

	/* And EXPORT_NAME, the other way it is sent. */
	start(&hs, name, NBD_HS_MODE_EXPORT_NAME, false);
	send_greeting(&hs, HF_FIXED);
	assert_int_equal(hs.outlen, 4 + 16 + NBD_HS_NAME_MAX);
	assert_int_equal(get_be32(hs.out + 4 + 12), NBD_HS_NAME_MAX);
}

static void test_feed_wrong_length(void **state)
{
	static const uint8_t magics[] = { W_NBDMAGIC, W_IHAVEOPT, 0, 3 };
	struct nbd_hs hs;

	start(&hs, "disk", NBD_HS_MODE_AUTO, false);
	nbd_hs_feed(&hs, magics, sizeof(magics));
	assert_failed(&hs, "internal error");
}

static void test_mode_names(void **state)
{
	assert_string_equal(nbd_hs_mode_name(NBD_HS_MODE_AUTO), "auto");
	assert_string_equal(nbd_hs_mode_name(NBD_HS_MODE_GO), "go");
	assert_string_equal(nbd_hs_mode_name(NBD_HS_MODE_EXPORT_NAME),
			    "export-name");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conformant_go),
		cmocka_unit_test(test_conformant_go_exact_bytes),
		cmocka_unit_test(test_conformant_go_info_order),
		cmocka_unit_test(test_conformant_go_no_block_size),
		cmocka_unit_test(test_default_export_name),
		cmocka_unit_test(test_extra_hflags_not_echoed),
		cmocka_unit_test(test_structured_ack),
		cmocka_unit_test(test_structured_unsup),
		cmocka_unit_test(test_structured_unsup_go_mode),
		cmocka_unit_test(test_structured_bad_reply),
		cmocka_unit_test(test_torus_reconnect),
		cmocka_unit_test(test_torus_structured_reconnect),
		cmocka_unit_test(test_zeroos_reconnect),
		cmocka_unit_test(test_closed_during_reply_payload),
		cmocka_unit_test(test_go_mode_closed),
		cmocka_unit_test(test_export_name_mode),
		cmocka_unit_test(test_export_name_mode_zeroes),
		cmocka_unit_test(test_go_unsup_auto_fallback),
		cmocka_unit_test(test_go_unsup_auto_fallback_zeroes),
		cmocka_unit_test(test_go_unsup_go_mode),
		cmocka_unit_test(test_err_unknown),
		cmocka_unit_test(test_err_unknown_default_export),
		cmocka_unit_test(test_err_long_message),
		cmocka_unit_test(test_err_tls_reqd),
		cmocka_unit_test(test_err_policy),
		cmocka_unit_test(test_wrong_option_reply),
		cmocka_unit_test(test_wrong_option_reply_structured),
		cmocka_unit_test(test_unexpected_go_reply),
		cmocka_unit_test(test_bad_reply_magic),
		cmocka_unit_test(test_bad_greeting_magic),
		cmocka_unit_test(test_reply_too_big),
		cmocka_unit_test(test_ack_without_info_export),
		cmocka_unit_test(test_malformed_info),
		cmocka_unit_test(test_oldstyle),
		cmocka_unit_test(test_no_fixed_newstyle_auto),
		cmocka_unit_test(test_no_fixed_newstyle_no_zeroes),
		cmocka_unit_test(test_no_fixed_newstyle_go_mode),
		cmocka_unit_test(test_closed_export_name_reply),
		cmocka_unit_test(test_closed_during_greeting),
		cmocka_unit_test(test_name_limits),
		cmocka_unit_test(test_feed_wrong_length),
		cmocka_unit_test(test_mode_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
