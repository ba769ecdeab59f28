// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for SCSI CDBs and sense (proto/tcmu/tcmu_cdb_build.c,
 * tcmu_cdb_parse.c, tcmu_sense.c): every encoder's bytes, the reply
 * decoders, the target-side parser on every opcode it knows and on
 * malformed CDBs, UNMAP lists, and sense both ways.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tcmu_cdb_build.h"
#include "tcmu_cdb_parse.h"

/* ---- encoders ---- */

static void test_mode_sense6(void **state)
{
	static const uint8_t want[6] = { 0x1a, 0x08, 0x08, 0, 32, 0 };
	uint8_t cdb[6];

	(void)state;
	tcmu_cdb_mode_sense6(cdb, true, TCMU_MODE_PAGE_CACHING, 32);
	assert_memory_equal(cdb, want, 6);
}

static void test_mode_sense6_decode(void **state)
{
	/* Header (WP, DPOFUA), no descriptors, control page, caching page. */
	uint8_t buf[4 + 12 + 20] = { 3 + 12 + 20, 0, 0x90, 0 };
	struct tcmu_mode_info mi;
	const char *msg;

	(void)state;
	buf[4] = 0x0a;
	buf[5] = 10;
	buf[16] = 0x08;
	buf[17] = 18;
	buf[18] = 0x04;
	assert_int_equal(tcmu_mode_sense6_decode(buf, sizeof(buf), &mi, &msg), 0);
	assert_true(mi.wp);
	assert_true(mi.dpofua);
	assert_true(mi.has_caching);
	assert_true(mi.wce);

	/* Cut short by the allocation length: the caching page is missing. */
	assert_int_equal(tcmu_mode_sense6_decode(buf, 16, &mi, &msg), 0);
	assert_true(mi.wp);
	assert_false(mi.has_caching);

	/* WCE clear, no WP. */
	buf[2] = 0;
	buf[18] = 0;
	assert_int_equal(tcmu_mode_sense6_decode(buf, sizeof(buf), &mi, &msg), 0);
	assert_false(mi.wp);
	assert_false(mi.dpofua);
	assert_true(mi.has_caching);
	assert_false(mi.wce);

	/* A page length running past the data: no read past it. */
	buf[17] = 0xff;
	assert_int_equal(tcmu_mode_sense6_decode(buf, 19, &mi, &msg), 0);
	assert_true(mi.has_caching);

	assert_int_equal(tcmu_mode_sense6_decode(buf, 3, &mi, &msg), -1);
	assert_string_equal(msg, "MODE SENSE(6) reply shorter than its 4-byte header");
	buf[0] = 1;
	assert_int_equal(tcmu_mode_sense6_decode(buf, sizeof(buf), &mi, &msg), -1);
}

static void test_read16(void **state)
{
	static const uint8_t want[16] = {
		0x88, 0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
		0x00, 0x01, 0x02, 0x03, 0, 0,
	};
	uint8_t cdb[16];

	memset(cdb, 0xff, sizeof(cdb));
	tcmu_cdb_read16(cdb, 0x0123456789abcdefULL, 0x00010203);
	assert_memory_equal(cdb, want, 16);
}

static void test_write16(void **state)
{
	static const uint8_t want[16] = {
		0x8a, 0x08, 0, 0, 0, 0, 0, 0, 0x10, 0x00,
		0, 0, 0, 0x08, 0, 0,
	};
	uint8_t cdb[16];

	memset(cdb, 0xff, sizeof(cdb));
	tcmu_cdb_write16(cdb, 0x1000, 8, true);
	assert_memory_equal(cdb, want, 16);
	tcmu_cdb_write16(cdb, 0x1000, 8, false);
	assert_int_equal(cdb[1], 0);
	assert_memory_equal(cdb + 2, want + 2, 14);
}

static void test_sync16(void **state)
{
	static const uint8_t want[16] = { 0x91 };
	uint8_t cdb[16];

	memset(cdb, 0xff, sizeof(cdb));
	tcmu_cdb_sync16(cdb, 0, 0);
	assert_memory_equal(cdb, want, 16);
	tcmu_cdb_sync16(cdb, 7, 9);
	assert_int_equal(cdb[9], 7);
	assert_int_equal(cdb[13], 9);
}

static void test_write_same16(void **state)
{
	static const uint8_t want[16] = {
		0x93, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
		0xff, 0xff, 0xff, 0xff, 0, 0,
	};
	uint8_t cdb[16];

	tcmu_cdb_write_same16(cdb, 0xfffffffffffffffeULL, 0xffffffff, true);
	assert_memory_equal(cdb, want, 16);
	tcmu_cdb_write_same16(cdb, 0xfffffffffffffffeULL, 0xffffffff, false);
	assert_int_equal(cdb[1], 0);
}

static void test_unmap(void **state)
{
	static const uint8_t want_cdb[10] = {
		0x42, 0, 0, 0, 0, 0, 0, 0x00, 0x18, 0,
	};
	static const uint8_t want_param[24] = {
		0x00, 0x16, 0x00, 0x10, 0, 0, 0, 0,
		0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef,
		0x00, 0x00, 0x20, 0x00, 0, 0, 0, 0,
	};
	uint8_t cdb[10], param[32];

	memset(cdb, 0xff, sizeof(cdb));
	tcmu_cdb_unmap(cdb, TCMU_UNMAP_PARAM_LEN);
	assert_memory_equal(cdb, want_cdb, 10);
	memset(param, 0xff, sizeof(param));
	assert_int_equal(tcmu_unmap_param(param, sizeof(param), 0xdeadbeef,
					  0x2000), 24);
	assert_memory_equal(param, want_param, 24);
	assert_int_equal(param[24], 0xff);
	assert_int_equal(tcmu_unmap_param(param, 23, 1, 1), 0);
}

static void test_inquiry(void **state)
{
	static const uint8_t std[6] = { 0x12, 0, 0, 0x00, 0x24, 0 };
	static const uint8_t vpd[6] = { 0x12, 0x01, 0xb0, 0x00, 0x40, 0 };
	uint8_t cdb[6];

	memset(cdb, 0xff, sizeof(cdb));
	tcmu_cdb_inquiry(cdb, false, 0, 36);
	assert_memory_equal(cdb, std, 6);
	/* A page without EVPD would be invalid: the encoder drops it. */
	tcmu_cdb_inquiry(cdb, false, 0xb0, 36);
	assert_memory_equal(cdb, std, 6);
	tcmu_cdb_inquiry(cdb, true, 0xb0, 64);
	assert_memory_equal(cdb, vpd, 6);
	tcmu_cdb_inquiry(cdb, true, 0x83, 0x1234);
	assert_int_equal(cdb[3], 0x12);
	assert_int_equal(cdb[4], 0x34);
}

static void test_read_capacity16(void **state)
{
	static const uint8_t want[16] = {
		0x9e, 0x10, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0x20, 0, 0,
	};
	uint8_t cdb[16];

	memset(cdb, 0xff, sizeof(cdb));
	tcmu_cdb_read_capacity16(cdb, 32);
	assert_memory_equal(cdb, want, 16);
}

/* Every encoder's CDB is one the parser accepts as the same command. */
static void test_encoders_parse(void **state)
{
	struct tcmu_sense s;
	struct tcmu_cdb c;
	uint8_t cdb[16];

	tcmu_cdb_write16(cdb, 100, 8, true);
	assert_int_equal(tcmu_cdb_parse(cdb, 16, &c, &s), 0);
	assert_int_equal(c.cls, TCMU_CDB_WRITE);
	assert_int_equal(c.lba, 100);
	assert_int_equal(c.blocks, 8);
	assert_int_equal(c.flags, TCMU_CDB_F_FUA);

	tcmu_cdb_write_same16(cdb, 5, 6, true);
	assert_int_equal(tcmu_cdb_parse(cdb, 16, &c, &s), 0);
	assert_int_equal(c.cls, TCMU_CDB_WRITE_SAME);
	assert_int_equal(c.flags, TCMU_CDB_F_UNMAP);

	tcmu_cdb_read_capacity16(cdb, 32);
	assert_int_equal(tcmu_cdb_parse(cdb, 16, &c, &s), 0);
	assert_int_equal(c.cls, TCMU_CDB_READ_CAPACITY_16);
	assert_int_equal(c.alloc_len, 32);

	tcmu_cdb_inquiry(cdb, true, 0xb0, 64);
	assert_int_equal(tcmu_cdb_parse(cdb, 6, &c, &s), 0);
	assert_int_equal(c.cls, TCMU_CDB_INQUIRY);
	assert_int_equal(c.page, 0xb0);
	assert_int_equal(c.flags, TCMU_CDB_F_EVPD);
	assert_int_equal(c.alloc_len, 64);

	tcmu_cdb_unmap(cdb, 24);
	assert_int_equal(tcmu_cdb_parse(cdb, 10, &c, &s), 0);
	assert_int_equal(c.cls, TCMU_CDB_UNMAP);
	assert_int_equal(c.alloc_len, 24);
}

/* ---- reply decoders ---- */

static void test_capacity_decode(void **state)
{
	uint8_t r[32] = {
		0, 0, 0, 0, 0x01, 0x00, 0x00, 0x00,	/* last LBA 2^24 */
		0, 0, 0x10, 0x00,			/* 4096 */
		0x01, 0x03, 0xc0, 0x00,
	};
	struct tcmu_capacity cap;
	const char *msg = NULL;

	assert_int_equal(tcmu_read_capacity16_decode(r, 32, &cap, &msg), 0);
	assert_int_equal(cap.last_lba, 0x1000000);
	assert_int_equal(cap.block_len, 4096);
	assert_true(cap.prot_en);
	assert_int_equal(cap.phys_exp, 3);
	assert_true(cap.lbpme);
	assert_true(cap.lbprz);

	r[14] = 0x80;
	assert_int_equal(tcmu_read_capacity16_decode(r, 32, &cap, &msg), 0);
	assert_true(cap.lbpme);
	assert_false(cap.lbprz);

	/* Twelve bytes carry the size; the flags are absent, not garbage. */
	assert_int_equal(tcmu_read_capacity16_decode(r, 12, &cap, &msg), 0);
	assert_int_equal(cap.block_len, 4096);
	assert_false(cap.lbpme);

	assert_int_equal(tcmu_read_capacity16_decode(r, 11, &cap, &msg), -1);
	assert_non_null(strstr(msg, "shorter"));

	r[10] = r[11] = 0;
	assert_int_equal(tcmu_read_capacity16_decode(r, 32, &cap, &msg), -1);
	assert_non_null(strstr(msg, "block length"));

	memset(r, 0xff, 8);
	r[11] = 0x02;
	assert_int_equal(tcmu_read_capacity16_decode(r, 32, &cap, &msg), -1);
	assert_non_null(strstr(msg, "2^64"));
}

static void test_inquiry_decode(void **state)
{
	uint8_t r[36] = {
		0x00, 0x00, 0x06, 0x02, 31, 0x01, 0x00, 0x02,
		'L', 'I', 'O', '-', 'O', 'R', 'G', ' ',
		'T', 'C', 'M', 'U', ' ', 'd', 'e', 'v',
		'i', 'c', 'e', ' ', ' ', ' ', ' ', ' ',
		'0', '0', '0', '2',
	};
	struct tcmu_inquiry inq;
	const char *msg = NULL;

	assert_int_equal(tcmu_inquiry_std_decode(r, 36, &inq, &msg), 0);
	assert_int_equal(inq.qualifier, 0);
	assert_int_equal(inq.device_type, 0);
	assert_int_equal(inq.version, 6);
	assert_true(inq.protect);
	assert_true(inq.cmdque);
	assert_string_equal(inq.vendor, "LIO-ORG");
	assert_string_equal(inq.product, "TCMU device");
	assert_string_equal(inq.revision, "0002");

	r[0] = 0x7f;	/* qualifier 3: no device; the caller judges */
	assert_int_equal(tcmu_inquiry_std_decode(r, 36, &inq, &msg), 0);
	assert_int_equal(inq.qualifier, 3);
	assert_int_equal(inq.device_type, 0x1f);

	assert_int_equal(tcmu_inquiry_std_decode(r, 35, &inq, &msg), -1);
	r[4] = 30;
	assert_int_equal(tcmu_inquiry_std_decode(r, 36, &inq, &msg), -1);
	assert_non_null(strstr(msg, "additional length"));
	r[4] = 31;
	r[3] = 0x01;
	assert_int_equal(tcmu_inquiry_std_decode(r, 36, &inq, &msg), -1);
	assert_non_null(strstr(msg, "format"));
}

/*
 * fuzz/regressions/cdb/crash-14c42a84...: a NUL inside a field after a
 * space ("TCMU \0ev...") left the string ending in that space.
 */
static void test_inquiry_decode_embedded_nul(void **state)
{
	uint8_t r[36] = {
		0x00, 0x00, 0x06, 0x02, 31, 0x00, 0x00, 0x00,
		'A', ' ', 0, 'B', ' ', ' ', ' ', ' ',
		'T', 'C', 'M', 'U', ' ', 0, 'e', 'v',
		' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ',
		' ', 0, 0, 0,
	};
	struct tcmu_inquiry inq;
	const char *msg = NULL;

	assert_int_equal(tcmu_inquiry_std_decode(r, 36, &inq, &msg), 0);
	assert_string_equal(inq.vendor, "A");
	assert_string_equal(inq.product, "TCMU");
	assert_string_equal(inq.revision, "");
}

static void test_block_limits_decode(void **state)
{
	uint8_t r[64] = { 0x00, 0xb0, 0x00, 0x3c };
	struct tcmu_block_limits bl;
	const char *msg = NULL;

	r[6] = 0x00; r[7] = 0x08;		/* granularity 8 */
	r[8] = 0x00; r[9] = 0x00; r[10] = 0x00; r[11] = 0x80;
	r[12] = 0x00; r[13] = 0x00; r[14] = 0x00; r[15] = 0x40;
	r[20] = 0x00; r[21] = 0x40; r[22] = 0x00; r[23] = 0x00;
	r[24] = 0x00; r[25] = 0x00; r[26] = 0x00; r[27] = 0x01;
	r[28] = 0x00; r[29] = 0x00; r[30] = 0x00; r[31] = 0x08;
	r[43] = 0x99;
	assert_int_equal(tcmu_vpd_block_limits_decode(r, 64, &bl, &msg), 0);
	assert_int_equal(bl.opt_granularity, 8);
	assert_int_equal(bl.max_transfer, 128);
	assert_int_equal(bl.opt_transfer, 64);
	assert_int_equal(bl.max_unmap_lbas, 0x400000);
	assert_int_equal(bl.max_unmap_descs, 1);
	assert_int_equal(bl.unmap_granularity, 8);
	assert_int_equal(bl.max_write_same, 0x99);

	/* Shorter than its page length says. */
	assert_int_equal(tcmu_vpd_block_limits_decode(r, 63, &bl, &msg), -1);
	assert_non_null(strstr(msg, "page length"));

	/* SBC-2's short page: transfer limits, no unmap limits. */
	r[3] = 0x0c;
	assert_int_equal(tcmu_vpd_block_limits_decode(r, 16, &bl, &msg), 0);
	assert_int_equal(bl.max_transfer, 128);
	assert_int_equal(bl.max_unmap_lbas, 0);
	assert_int_equal(bl.max_write_same, 0);

	r[3] = 0x0b;
	assert_int_equal(tcmu_vpd_block_limits_decode(r, 64, &bl, &msg), -1);
	r[3] = 0x3c;
	r[1] = 0xb1;
	assert_int_equal(tcmu_vpd_block_limits_decode(r, 64, &bl, &msg), -1);
	assert_non_null(strstr(msg, "not the Block Limits"));
	assert_int_equal(tcmu_vpd_block_limits_decode(r, 3, &bl, &msg), -1);
}

/* ---- parser ---- */

static void parse_ok(const uint8_t *cdb, size_t len, struct tcmu_cdb *c)
{
	struct tcmu_sense s;

	if (tcmu_cdb_parse(cdb, len, c, &s))
		fail_msg("CDB 0x%02x rejected: key %x asc %02x field %u bit %u",
			 cdb[0], s.key, s.asc, s.field, s.bit);
}

/* A rejection with INVALID FIELD IN CDB at byte (and bit, -1: none). */
static void parse_field(const uint8_t *cdb, size_t len, int byte, int bit)
{
	struct tcmu_sense s;
	struct tcmu_cdb c;

	assert_int_equal(tcmu_cdb_parse(cdb, len, &c, &s), -1);
	assert_int_equal(s.key, SCSI_SK_ILLEGAL_REQUEST);
	assert_int_equal(s.asc, SCSI_ASC_INVALID_FIELD_IN_CDB);
	assert_int_equal(s.ascq, 0);
	assert_true(s.sksv);
	assert_true(s.cd);
	assert_int_equal(s.field, byte);
	if (bit < 0) {
		assert_false(s.bpv);
	} else {
		assert_true(s.bpv);
		assert_int_equal(s.bit, bit);
	}
}

static void parse_asc(const uint8_t *cdb, size_t len, uint8_t asc)
{
	struct tcmu_sense s;
	struct tcmu_cdb c;

	assert_int_equal(tcmu_cdb_parse(cdb, len, &c, &s), -1);
	assert_int_equal(s.key, SCSI_SK_ILLEGAL_REQUEST);
	assert_int_equal(s.asc, asc);
	assert_false(s.sksv);
}

static void test_cdb_len(void **state)
{
	assert_int_equal(tcmu_cdb_len(0x00), 6);
	assert_int_equal(tcmu_cdb_len(0x1f), 6);
	assert_int_equal(tcmu_cdb_len(0x28), 10);
	assert_int_equal(tcmu_cdb_len(0x5a), 10);
	assert_int_equal(tcmu_cdb_len(0x7f), 0);
	assert_int_equal(tcmu_cdb_len(0x60), 0);
	assert_int_equal(tcmu_cdb_len(0x88), 16);
	assert_int_equal(tcmu_cdb_len(0xa8), 12);
	assert_int_equal(tcmu_cdb_len(0xc0), 0);
	assert_int_equal(tcmu_cdb_len(0xff), 0);
}

static void test_parse_rw6(void **state)
{
	uint8_t r6[6] = { 0x08, 0x1f, 0xff, 0xfe, 0x00, 0x00 };
	uint8_t w6[6] = { 0x0a, 0x00, 0x00, 0x10, 0x08, 0x00 };
	struct tcmu_cdb c;

	parse_ok(r6, 6, &c);
	assert_int_equal(c.cls, TCMU_CDB_READ);
	assert_int_equal(c.len, 6);
	assert_int_equal(c.lba, 0x1ffffe);
	/* Transfer length 0 in a 6-byte CDB is 256 blocks. */
	assert_int_equal(c.blocks, 256);
	assert_int_equal(c.flags, 0);

	parse_ok(w6, 6, &c);
	assert_int_equal(c.cls, TCMU_CDB_WRITE);
	assert_int_equal(c.lba, 0x10);
	assert_int_equal(c.blocks, 8);

	r6[1] = 0x3f;		/* SCSI-2 LUN bits */
	parse_field(r6, 6, 1, 5);
	r6[1] = 0x1f;
	r6[5] = 0x04;		/* NACA */
	parse_field(r6, 6, 5, 2);
	r6[5] = 0xc0;		/* vendor bits pass */
	parse_ok(r6, 6, &c);
	parse_field(r6, 5, 5, -1);
}

static void test_parse_rw10(void **state)
{
	uint8_t r[10] = { 0x28, 0x18, 0x12, 0x34, 0x56, 0x78, 0x1f,
			  0x00, 0x10, 0x00 };
	uint8_t w[10] = { 0x2a, 0x08, 0, 0, 0, 1, 0, 0x00, 0x00, 0x00 };
	struct tcmu_cdb c;

	parse_ok(r, 10, &c);
	assert_int_equal(c.cls, TCMU_CDB_READ);
	assert_int_equal(c.len, 10);
	assert_int_equal(c.lba, 0x12345678);
	assert_int_equal(c.blocks, 16);
	assert_int_equal(c.flags, TCMU_CDB_F_FUA | TCMU_CDB_F_DPO);

	/* Zero blocks in a 10-byte CDB is no transfer, not 256. */
	parse_ok(w, 10, &c);
	assert_int_equal(c.cls, TCMU_CDB_WRITE);
	assert_int_equal(c.blocks, 0);
	assert_int_equal(c.flags, TCMU_CDB_F_FUA);

	r[1] = 0x20;		/* RDPROTECT */
	parse_field(r, 10, 1, 5);
	r[1] = 0x01;		/* RELADR */
	parse_field(r, 10, 1, 0);
	r[1] = 0x06;		/* READ: RARC and FUA_NV are hints */
	parse_ok(r, 10, &c);
	w[1] = 0x04;		/* WRITE: bit 2 reserved */
	parse_field(w, 10, 1, 2);
	w[1] = 0;
	w[6] = 0x40;
	parse_field(w, 10, 6, 6);
	w[6] = 0;
	w[9] = 0x01;		/* LINK */
	parse_field(w, 10, 9, 0);
	w[9] = 0;
	parse_field(w, 9, 9, -1);
}

static void test_parse_rw12(void **state)
{
	uint8_t r[12] = { 0xa8, 0, 0xff, 0xff, 0xff, 0xff,
			  0x00, 0x01, 0x00, 0x00, 0x00, 0 };
	uint8_t w[12] = { 0xaa, 0x08, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0 };
	struct tcmu_cdb c;

	parse_ok(r, 12, &c);
	assert_int_equal(c.cls, TCMU_CDB_READ);
	assert_int_equal(c.len, 12);
	assert_int_equal(c.lba, 0xffffffff);
	assert_int_equal(c.blocks, 0x10000);
	parse_ok(w, 12, &c);
	assert_int_equal(c.cls, TCMU_CDB_WRITE);
	assert_int_equal(c.lba, 2);
	assert_int_equal(c.blocks, 3);
	assert_int_equal(c.flags, TCMU_CDB_F_FUA);
	w[10] = 0x80;
	parse_field(w, 12, 10, 7);
	parse_field(r, 10, 10, -1);
}

static void test_parse_rw16(void **state)
{
	uint8_t r[16], w[16];
	struct tcmu_cdb c;

	tcmu_cdb_read16(r, 0xfffffffffffffffeULL, 1);
	parse_ok(r, 16, &c);
	assert_int_equal(c.cls, TCMU_CDB_READ);
	assert_int_equal(c.len, 16);
	assert_true(c.lba == 0xfffffffffffffffeULL);
	assert_int_equal(c.blocks, 1);

	/* The last block of a 2^64-block space: lba + count wraps to 0. */
	tcmu_cdb_read16(r, UINT64_MAX, 1);
	parse_asc(r, 16, SCSI_ASC_LBA_OUT_OF_RANGE);
	tcmu_cdb_read16(r, UINT64_MAX - 0xfffffffeULL, 0xffffffff);
	parse_asc(r, 16, SCSI_ASC_LBA_OUT_OF_RANGE);
	tcmu_cdb_read16(r, UINT64_MAX - 0xffffffffULL, 0xffffffff);
	parse_ok(r, 16, &c);
	/* No blocks: nothing can wrap. */
	tcmu_cdb_read16(r, UINT64_MAX, 0);
	parse_ok(r, 16, &c);

	tcmu_cdb_write16(w, 0, 8, false);
	w[1] = 0x01;		/* DLD2 */
	parse_field(w, 16, 1, 0);
	w[1] = 0;
	w[14] = 0x80;		/* DLD1 */
	parse_field(w, 16, 14, 7);
	w[14] = 0x3f;		/* group number */
	parse_ok(w, 16, &c);
	w[15] = 0x38;
	parse_field(w, 16, 15, 5);
	/* A 16-byte opcode in 10 bytes: bad length for its group. */
	parse_field(w, 10, 10, -1);
	parse_field(w, 15, 15, -1);
}

static void test_parse_sync(void **state)
{
	uint8_t s10[10] = { 0x35, 0x02, 0, 0, 0, 0x10, 0, 0x00, 0x20, 0 };
	uint8_t s16[16];
	struct tcmu_cdb c;

	parse_ok(s10, 10, &c);
	assert_int_equal(c.cls, TCMU_CDB_SYNC);
	assert_int_equal(c.lba, 16);
	assert_int_equal(c.blocks, 32);
	assert_int_equal(c.flags, TCMU_CDB_F_IMMED);
	s10[8] = 0;
	s10[1] = 0x04;		/* SYNC_NV, obsolete: ignored */
	parse_ok(s10, 10, &c);
	assert_int_equal(c.flags, TCMU_CDB_F_TO_END);
	s10[1] = 0x08;
	parse_field(s10, 10, 1, 3);
	s10[1] = 0x01;
	parse_field(s10, 10, 1, 0);

	tcmu_cdb_sync16(s16, 0, 0);
	parse_ok(s16, 16, &c);
	assert_int_equal(c.cls, TCMU_CDB_SYNC);
	assert_int_equal(c.len, 16);
	assert_int_equal(c.flags, TCMU_CDB_F_TO_END);
	tcmu_cdb_sync16(s16, UINT64_MAX, 2);
	parse_asc(s16, 16, SCSI_ASC_LBA_OUT_OF_RANGE);
}

static void test_parse_write_same(void **state)
{
	uint8_t ws[16];
	struct tcmu_cdb c;

	tcmu_cdb_write_same16(ws, 64, 0, true);
	ws[1] |= 0x11;		/* ANCHOR, NDOB */
	parse_ok(ws, 16, &c);
	assert_int_equal(c.cls, TCMU_CDB_WRITE_SAME);
	assert_int_equal(c.lba, 64);
	assert_int_equal(c.blocks, 0);
	assert_int_equal(c.flags, TCMU_CDB_F_UNMAP | TCMU_CDB_F_ANCHOR |
				  TCMU_CDB_F_NDOB | TCMU_CDB_F_TO_END);
	ws[1] = 0x02;		/* LBDATA */
	parse_field(ws, 16, 1, 1);
	ws[1] = 0x04;		/* PBDATA */
	parse_field(ws, 16, 1, 2);
	ws[1] = 0x80;		/* WRPROTECT */
	parse_field(ws, 16, 1, 7);
	tcmu_cdb_write_same16(ws, UINT64_MAX - 1, 2, false);
	parse_asc(ws, 16, SCSI_ASC_LBA_OUT_OF_RANGE);
}

static void test_parse_unmap(void **state)
{
	uint8_t u[10];
	struct tcmu_cdb c;

	tcmu_cdb_unmap(u, 0);
	u[1] = 0x01;
	u[6] = 0x3f;
	parse_ok(u, 10, &c);
	assert_int_equal(c.cls, TCMU_CDB_UNMAP);
	assert_int_equal(c.flags, TCMU_CDB_F_ANCHOR);
	assert_int_equal(c.alloc_len, 0);
	u[1] = 0x02;
	parse_field(u, 10, 1, 1);
	u[1] = 0;
	u[4] = 0x10;
	parse_field(u, 10, 4, 4);
}

static void test_parse_inquiry(void **state)
{
	uint8_t q[6] = { 0x12, 0, 0, 0, 0x24, 0 };
	struct tcmu_cdb c;

	parse_ok(q, 6, &c);
	assert_int_equal(c.cls, TCMU_CDB_INQUIRY);
	assert_int_equal(c.flags, 0);
	assert_int_equal(c.alloc_len, 36);
	q[2] = 0x80;		/* a page without EVPD */
	parse_field(q, 6, 2, -1);
	q[1] = 0x01;
	parse_ok(q, 6, &c);
	assert_int_equal(c.page, 0x80);
	q[1] = 0x02;		/* CMDDT */
	parse_field(q, 6, 1, 1);
}

static void test_parse_tur(void **state)
{
	uint8_t t[6] = { 0 };
	struct tcmu_cdb c;

	parse_ok(t, 6, &c);
	assert_int_equal(c.cls, TCMU_CDB_TEST_UNIT_READY);
	assert_int_equal(c.len, 6);
	t[3] = 0x01;
	parse_field(t, 6, 3, 0);
	parse_field(t, 1, 1, -1);
}

static void test_parse_read_capacity(void **state)
{
	uint8_t r10[10] = { 0x25 };
	uint8_t r16[16];
	struct tcmu_cdb c;

	parse_ok(r10, 10, &c);
	assert_int_equal(c.cls, TCMU_CDB_READ_CAPACITY_10);
	assert_int_equal(c.alloc_len, 8);
	r10[5] = 1;		/* an LBA without PMI */
	parse_field(r10, 10, 2, -1);
	r10[8] = 1;
	parse_ok(r10, 10, &c);
	assert_int_equal(c.flags, TCMU_CDB_F_PMI);
	r10[8] = 2;
	parse_field(r10, 10, 8, 1);
	r10[8] = 0;
	r10[5] = 0;
	r10[1] = 1;
	parse_field(r10, 10, 1, 0);

	tcmu_cdb_read_capacity16(r16, 32);
	parse_ok(r16, 16, &c);
	assert_int_equal(c.cls, TCMU_CDB_READ_CAPACITY_16);
	r16[1] = 0x12;		/* GET LBA STATUS: not served */
	parse_field(r16, 16, 1, 4);
	r16[1] = 0x30;
	parse_field(r16, 16, 1, 5);
	r16[1] = 0x10;
	r16[9] = 1;
	parse_field(r16, 16, 2, -1);
	r16[14] = 1;
	parse_ok(r16, 16, &c);
	assert_int_equal(c.lba, 1);
	assert_int_equal(c.flags, TCMU_CDB_F_PMI);
}

static void test_parse_mode_sense(void **state)
{
	uint8_t m6[6] = { 0x1a, 0x08, 0x7f, 0xff, 0xfc, 0 };
	uint8_t m10[10] = { 0x5a, 0x18, 0x88, 0x00, 0, 0, 0, 0x10, 0x00, 0 };
	struct tcmu_cdb c;

	parse_ok(m6, 6, &c);
	assert_int_equal(c.cls, TCMU_CDB_MODE_SENSE);
	assert_int_equal(c.flags, TCMU_CDB_F_DBD);
	assert_int_equal(c.pc, 1);
	assert_int_equal(c.page, 0x3f);
	assert_int_equal(c.subpage, 0xff);
	assert_int_equal(c.alloc_len, 0xfc);
	m6[1] = 0x10;
	parse_field(m6, 6, 1, 4);

	parse_ok(m10, 10, &c);
	assert_int_equal(c.cls, TCMU_CDB_MODE_SENSE);
	assert_int_equal(c.flags, TCMU_CDB_F_DBD | TCMU_CDB_F_LLBAA);
	assert_int_equal(c.pc, 2);
	assert_int_equal(c.page, 8);
	assert_int_equal(c.alloc_len, 0x1000);
	m10[5] = 0x02;
	parse_field(m10, 10, 5, 1);
}

static void test_parse_report_opcodes(void **state)
{
	uint8_t r[12] = { 0xa3, 0x0c, 0x82, 0x93, 0x00, 0x10,
			  0x00, 0x00, 0x02, 0x00, 0, 0 };
	struct tcmu_cdb c;

	parse_ok(r, 12, &c);
	assert_int_equal(c.cls, TCMU_CDB_REPORT_OPCODES);
	assert_int_equal(c.flags, TCMU_CDB_F_RCTD);
	assert_int_equal(c.rso_options, 2);
	assert_int_equal(c.rso_opcode, 0x93);
	assert_int_equal(c.rso_sa, 0x10);
	assert_int_equal(c.alloc_len, 0x200);
	r[2] = 0x04;
	parse_field(r, 12, 2, 2);
	r[2] = 0x08;
	parse_field(r, 12, 2, 3);
	r[2] = 0;
	r[10] = 1;
	parse_field(r, 12, 10, 0);
	r[10] = 0;
	r[1] = 0x0a;		/* REPORT TARGET PORT GROUPS: not served */
	parse_field(r, 12, 1, 4);
}

static void test_parse_unknown(void **state)
{
	static const uint8_t ops[] = {
		0x03,	/* REQUEST SENSE: the kernel's */
		0x2f,	/* VERIFY(10) */
		0x7f,	/* variable length */
		0x8f,	/* VERIFY(16) */
		0xa0,	/* REPORT LUNS */
		0xc0, 0xff,	/* vendor */
	};
	uint8_t cdb[16] = { 0 };
	size_t i;

	for (i = 0; i < sizeof(ops); i++) {
		cdb[0] = ops[i];
		parse_asc(cdb, 16, SCSI_ASC_INVALID_OPCODE);
	}
	parse_asc(cdb, 0, SCSI_ASC_INVALID_OPCODE);
}

/* ---- UNMAP parameter lists ---- */

static void test_unmap_param_parse(void **state)
{
	uint8_t p[8 + 3 * 16 + 8];
	struct tcmu_sense s;
	uint64_t lba;
	uint32_t nr;

	assert_int_equal(tcmu_unmap_param(p, sizeof(p), 0x1234, 16), 24);
	assert_int_equal(tcmu_unmap_parse(p, 24, 0, &s), 1);
	tcmu_unmap_get(p, 0, &lba, &nr);
	assert_int_equal(lba, 0x1234);
	assert_int_equal(nr, 16);

	/* Three descriptors, the last cut short by what was sent. */
	memset(p, 0, sizeof(p));
	p[1] = 6 + 48;
	p[3] = 48;
	p[8 + 7] = 1;
	p[8 + 16 + 7] = 2;
	p[8 + 32 + 7] = 3;
	p[8 + 32 + 11] = 4;
	assert_int_equal(tcmu_unmap_parse(p, 56, 0, &s), 3);
	tcmu_unmap_get(p, 2, &lba, &nr);
	assert_int_equal(lba, 3);
	assert_int_equal(nr, 4);
	assert_int_equal(tcmu_unmap_parse(p, 55, 0, &s), 2);
	/* A partial descriptor in the stated length is ignored. */
	p[3] = 40;
	assert_int_equal(tcmu_unmap_parse(p, 56, 0, &s), 2);
	/* The data length bounds the descriptor length. */
	p[3] = 48;
	p[1] = 6 + 16;
	assert_int_equal(tcmu_unmap_parse(p, 56, 0, &s), 1);
	p[1] = 6 + 48;

	/* Over the descriptor limit: a field in the parameter list. */
	assert_int_equal(tcmu_unmap_parse(p, 56, 2, &s), -1);
	assert_int_equal(s.key, SCSI_SK_ILLEGAL_REQUEST);
	assert_int_equal(s.asc, SCSI_ASC_INVALID_FIELD_IN_PARAM);
	assert_true(s.sksv);
	assert_false(s.cd);
	assert_int_equal(s.field, 2);
	assert_int_equal(tcmu_unmap_parse(p, 56, 3, &s), 3);

	/* A range that wraps past 2^64. */
	memset(p + 8 + 16, 0xff, 8);
	p[8 + 16 + 11] = 1;
	assert_int_equal(tcmu_unmap_parse(p, 56, 0, &s), -1);
	assert_int_equal(s.asc, SCSI_ASC_LBA_OUT_OF_RANGE);
	p[8 + 16 + 11] = 0;
	assert_int_equal(tcmu_unmap_parse(p, 56, 0, &s), 3);
	memset(p + 8 + 16, 0, 8);

	/* Empty, short, and a header that does not count itself. */
	assert_int_equal(tcmu_unmap_parse(p, 0, 0, &s), 0);
	assert_int_equal(tcmu_unmap_parse(p, 8, 0, &s), 0);
	assert_int_equal(tcmu_unmap_parse(p, 7, 0, &s), -1);
	assert_int_equal(s.asc, SCSI_ASC_PARAMETER_LIST_LENGTH);
	p[1] = 5;
	assert_int_equal(tcmu_unmap_parse(p, 56, 0, &s), -1);
	assert_int_equal(s.asc, SCSI_ASC_INVALID_FIELD_IN_PARAM);
	assert_int_equal(s.field, 0);
}

static void test_check_range(void **state)
{
	struct tcmu_cdb c = { .lba = 90, .blocks = 10 };
	struct tcmu_sense s;

	assert_int_equal(tcmu_cdb_check_range(&c, 100, &s), 0);
	c.blocks = 11;
	assert_int_equal(tcmu_cdb_check_range(&c, 100, &s), -1);
	assert_int_equal(s.asc, SCSI_ASC_LBA_OUT_OF_RANGE);
	c.lba = 100;
	c.blocks = 0;
	assert_int_equal(tcmu_cdb_check_range(&c, 100, &s), -1);
	c.lba = 99;
	assert_int_equal(tcmu_cdb_check_range(&c, 100, &s), 0);
	c.lba = UINT64_MAX;
	c.blocks = 1;
	assert_int_equal(tcmu_cdb_check_range(&c, UINT64_MAX, &s), -1);
}

/* ---- sense ---- */

static void test_sense_fixed_bytes(void **state)
{
	static const uint8_t want[18] = {
		0x70, 0, 0x05, 0, 0, 0, 0, 10, 0, 0, 0, 0,
		0x24, 0x00, 0, 0xcb, 0x00, 0x01,
	};
	static const uint8_t want_info[18] = {
		0xf0, 0, 0x03, 0x00, 0x00, 0x12, 0x34, 10, 0, 0, 0, 0,
		0x11, 0x00, 0, 0, 0, 0,
	};
	uint8_t buf[TCMU_SENSE_BUFFERSIZE];
	struct tcmu_sense s;

	tcmu_sense_invalid_field(&s, true, 1, 3);
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(tcmu_sense_fixed(buf, sizeof(buf), &s), 18);
	assert_memory_equal(buf, want, 18);
	assert_int_equal(buf[18], 0xee);
	assert_int_equal(tcmu_sense_fixed(buf, 17, &s), 0);

	tcmu_sense_set(&s, SCSI_SK_MEDIUM_ERROR,
		       SCSI_ASC_UNRECOVERED_READ_ERROR, 0);
	s.info_valid = true;
	s.info = 0x1234;
	assert_int_equal(tcmu_sense_fixed(buf, 18, &s), 18);
	assert_memory_equal(buf, want_info, 18);

	/* Too wide for the fixed format: VALID clear, field zero. */
	s.info = 0x100000000ULL;
	tcmu_sense_fixed(buf, 18, &s);
	assert_int_equal(buf[0], 0x70);
	assert_int_equal(buf[3] | buf[4] | buf[5] | buf[6], 0);
}

static void test_sense_round_trip(void **state)
{
	static const struct { uint8_t key, asc, ascq; } cases[] = {
		{ SCSI_SK_MEDIUM_ERROR, 0x11, 0x00 },
		{ SCSI_SK_NOT_READY, 0x04, 0x01 },
		{ SCSI_SK_ILLEGAL_REQUEST, 0x20, 0x00 },
		{ SCSI_SK_DATA_PROTECT, 0x27, 0x07 },
		{ SCSI_SK_UNIT_ATTENTION, 0x29, 0x00 },
		{ SCSI_SK_COMPLETED, 0x00, 0x00 },
	};
	uint8_t buf[18];
	struct tcmu_sense s, d;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tcmu_sense_set(&s, cases[i].key, cases[i].asc, cases[i].ascq);
		s.info_valid = i & 1;
		s.info = i * 1000;
		tcmu_sense_fixed(buf, sizeof(buf), &s);
		assert_int_equal(tcmu_sense_decode(buf, sizeof(buf), &d), 0);
		assert_int_equal(d.key, s.key);
		assert_int_equal(d.asc, s.asc);
		assert_int_equal(d.ascq, s.ascq);
		assert_int_equal(d.info_valid, s.info_valid);
		if (s.info_valid)
			assert_int_equal(d.info, s.info);
		assert_false(d.sksv);
	}

	tcmu_sense_invalid_field(&s, false, 0x1234, -1);
	tcmu_sense_fixed(buf, sizeof(buf), &s);
	assert_int_equal(tcmu_sense_decode(buf, sizeof(buf), &d), 0);
	assert_true(d.sksv);
	assert_false(d.cd);
	assert_false(d.bpv);
	assert_int_equal(d.field, 0x1234);
	assert_int_equal(d.asc, SCSI_ASC_INVALID_FIELD_IN_PARAM);

	tcmu_sense_invalid_field(&s, true, 15, 6);
	tcmu_sense_fixed(buf, sizeof(buf), &s);
	assert_int_equal(tcmu_sense_decode(buf, sizeof(buf), &d), 0);
	assert_true(d.cd);
	assert_true(d.bpv);
	assert_int_equal(d.bit, 6);
	assert_int_equal(d.field, 15);
}

static void test_sense_fixed_short(void **state)
{
	uint8_t buf[18];
	struct tcmu_sense s, d;

	tcmu_sense_invalid_field(&s, true, 2, -1);
	tcmu_sense_fixed(buf, sizeof(buf), &s);
	/* Cut at 14 bytes: ASC, no field pointer. */
	assert_int_equal(tcmu_sense_decode(buf, 14, &d), 0);
	assert_int_equal(d.asc, 0x24);
	assert_false(d.sksv);
	/* Cut at 8: the key alone. */
	assert_int_equal(tcmu_sense_decode(buf, 8, &d), 0);
	assert_int_equal(d.key, SCSI_SK_ILLEGAL_REQUEST);
	assert_int_equal(d.asc, 0);
	/* An additional length of 5 hides the ASC even in 18 bytes. */
	buf[7] = 5;
	assert_int_equal(tcmu_sense_decode(buf, 18, &d), 0);
	assert_int_equal(d.asc, 0);
	assert_int_equal(tcmu_sense_decode(buf, 2, &d), -1);
	assert_int_equal(tcmu_sense_decode(buf, 0, &d), -1);
	buf[0] = 0x00;
	assert_int_equal(tcmu_sense_decode(buf, 18, &d), -1);
	buf[0] = 0x7f;
	assert_int_equal(tcmu_sense_decode(buf, 18, &d), -1);
	/* Deferred errors (0x71) decode too. */
	buf[0] = 0x71;
	buf[7] = 10;
	assert_int_equal(tcmu_sense_decode(buf, 18, &d), 0);
	assert_int_equal(d.asc, 0x24);
}

static void test_sense_descriptor(void **state)
{
	uint8_t buf[8 + 12 + 8 + 4] = {
		0x72, 0x03, 0x11, 0x00, 0, 0, 0, 12 + 8,
		/* information: valid, 2^40 + 5 */
		0x00, 0x0a, 0x80, 0x00, 0, 0, 0x01, 0, 0, 0, 0, 5,
		/* sense key specific: field pointer, CDB byte 2 */
		0x02, 0x06, 0, 0, 0xc0, 0x00, 0x02, 0,
	};
	struct tcmu_sense d;

	assert_int_equal(tcmu_sense_decode(buf, 28, &d), 0);
	assert_int_equal(d.key, SCSI_SK_MEDIUM_ERROR);
	assert_int_equal(d.asc, 0x11);
	assert_true(d.info_valid);
	assert_true(d.info == 0x10000000005ULL);
	/* Not ILLEGAL REQUEST: the SKS is not a field pointer. */
	assert_true(d.sksv);
	assert_int_equal(d.field, 0);
	assert_int_equal(tcmu_sense_errno(&d), EIO);

	buf[1] = SCSI_SK_ILLEGAL_REQUEST;
	buf[2] = 0x24;
	assert_int_equal(tcmu_sense_decode(buf, 28, &d), 0);
	assert_true(d.cd);
	assert_int_equal(d.field, 2);

	/* The SKS descriptor cut off by the buffer: ignored, no overread. */
	assert_int_equal(tcmu_sense_decode(buf, 27, &d), 0);
	assert_true(d.info_valid);
	assert_false(d.sksv);
	/* A descriptor claiming more than the additional length. */
	buf[9] = 0x40;
	assert_int_equal(tcmu_sense_decode(buf, sizeof(buf), &d), 0);
	assert_false(d.info_valid);
	assert_false(d.sksv);
	/* Header only; cut inside the header. */
	assert_int_equal(tcmu_sense_decode(buf, 4, &d), 0);
	assert_int_equal(d.asc, 0x24);
	assert_int_equal(tcmu_sense_decode(buf, 3, &d), -1);
	/* Deferred descriptor format. */
	buf[0] = 0x73;
	assert_int_equal(tcmu_sense_decode(buf, 8, &d), 0);
	/* The VALID bit of byte 0 means nothing for 0x72: masked off. */
	buf[0] = 0xf2;
	assert_int_equal(tcmu_sense_decode(buf, 8, &d), 0);
}

static void test_sense_errno(void **state)
{
	static const struct { uint8_t key, asc, ascq; int err; } cases[] = {
		{ SCSI_SK_NO_SENSE, 0, 0, EIO },
		{ SCSI_SK_RECOVERED_ERROR, 0x17, 0x01, 0 },
		{ SCSI_SK_NOT_READY, 0x04, 0x01, EBUSY },
		{ SCSI_SK_NOT_READY, 0x3a, 0x00, ENOMEDIUM },
		{ SCSI_SK_MEDIUM_ERROR, 0x11, 0x00, EIO },
		{ SCSI_SK_HARDWARE_ERROR, 0x44, 0x00, EIO },
		{ SCSI_SK_ILLEGAL_REQUEST, 0x24, 0x00, EINVAL },
		{ SCSI_SK_ILLEGAL_REQUEST, 0x20, 0x00, EOPNOTSUPP },
		{ SCSI_SK_ILLEGAL_REQUEST, 0x21, 0x00, ERANGE },
		{ SCSI_SK_UNIT_ATTENTION, 0x29, 0x00, EAGAIN },
		{ SCSI_SK_DATA_PROTECT, 0x27, 0x00, EROFS },
		{ SCSI_SK_DATA_PROTECT, 0x27, 0x07, ENOSPC },
		{ SCSI_SK_DATA_PROTECT, 0x74, 0x71, EACCES },
		{ SCSI_SK_BLANK_CHECK, 0, 0, ENODATA },
		{ SCSI_SK_ABORTED_COMMAND, 0, 0, ECANCELED },
		{ SCSI_SK_VOLUME_OVERFLOW, 0, 0, ENOSPC },
		{ SCSI_SK_MISCOMPARE, 0x1d, 0, EILSEQ },
		{ SCSI_SK_COPY_ABORTED, 0, 0, EIO },
		{ 0xc, 0, 0, EIO },
		{ SCSI_SK_COMPLETED, 0, 0, 0 },
	};
	struct tcmu_sense s;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tcmu_sense_set(&s, cases[i].key, cases[i].asc, cases[i].ascq);
		if (tcmu_sense_errno(&s) != cases[i].err)
			fail_msg("key %x asc %02x/%02x: errno %d, want %d",
				 cases[i].key, cases[i].asc, cases[i].ascq,
				 tcmu_sense_errno(&s), cases[i].err);
	}
}

static void test_sense_msg(void **state)
{
	struct tcmu_sense s;
	char buf[128], small[8];

	tcmu_sense_set(&s, SCSI_SK_MEDIUM_ERROR, 0x11, 0x00);
	assert_string_equal(tcmu_sense_msg(&s, buf, sizeof(buf)),
		"MEDIUM ERROR: unrecovered read error (asc 0x11 ascq 0x00)");
	tcmu_sense_set(&s, SCSI_SK_DATA_PROTECT, 0x27, 0x07);
	assert_string_equal(tcmu_sense_msg(&s, buf, sizeof(buf)),
		"DATA PROTECT: space allocation failed write protect (asc 0x27 ascq 0x07)");
	tcmu_sense_set(&s, SCSI_SK_HARDWARE_ERROR, 0x99, 0x01);
	assert_string_equal(tcmu_sense_msg(&s, buf, sizeof(buf)),
		"HARDWARE ERROR: unknown condition (asc 0x99 ascq 0x01)");
	assert_string_equal(tcmu_sense_msg(&s, small, sizeof(small)),
			    "HARDWAR");
	assert_string_equal(tcmu_sense_key_str(0xc), "RESERVED SENSE KEY");
	assert_string_equal(tcmu_sense_key_str(0x15), "ILLEGAL REQUEST");
	assert_null(tcmu_sense_asc_str(0x24, 0x01));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read16),
		cmocka_unit_test(test_write16),
		cmocka_unit_test(test_sync16),
		cmocka_unit_test(test_write_same16),
		cmocka_unit_test(test_unmap),
		cmocka_unit_test(test_inquiry),
		cmocka_unit_test(test_read_capacity16),
		cmocka_unit_test(test_encoders_parse),
		cmocka_unit_test(test_capacity_decode),
		cmocka_unit_test(test_inquiry_decode),
		cmocka_unit_test(test_inquiry_decode_embedded_nul),
		cmocka_unit_test(test_block_limits_decode),
		cmocka_unit_test(test_cdb_len),
		cmocka_unit_test(test_parse_rw6),
		cmocka_unit_test(test_parse_rw10),
		cmocka_unit_test(test_parse_rw12),
		cmocka_unit_test(test_parse_rw16),
		cmocka_unit_test(test_parse_sync),
		cmocka_unit_test(test_parse_write_same),
		cmocka_unit_test(test_parse_unmap),
		cmocka_unit_test(test_parse_inquiry),
		cmocka_unit_test(test_parse_tur),
		cmocka_unit_test(test_parse_read_capacity),
		cmocka_unit_test(test_parse_mode_sense),
		cmocka_unit_test(test_parse_report_opcodes),
		cmocka_unit_test(test_parse_unknown),
		cmocka_unit_test(test_unmap_param_parse),
		cmocka_unit_test(test_check_range),
		cmocka_unit_test(test_sense_fixed_bytes),
		cmocka_unit_test(test_sense_round_trip),
		cmocka_unit_test(test_sense_fixed_short),
		cmocka_unit_test(test_sense_descriptor),
		cmocka_unit_test(test_sense_errno),
		cmocka_unit_test(test_sense_msg),
		cmocka_unit_test(test_mode_sense6),
		cmocka_unit_test(test_mode_sense6_decode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
