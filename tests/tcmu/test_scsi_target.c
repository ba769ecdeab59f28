// SPDX-License-Identifier: GPL-2.0-only
/*
 * The handler host's SCSI target (shims/tcmu/scsi_target.c), byte by byte:
 * every reply it builds, every check it makes, the data it moves between
 * scattered buffers and a fake store, and the sense it returns; and
 * that its asynchronous path (scsi_prepare, scsi_finish) answers as
 * scsi_execute() does.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scsi_target.h"
#include "tcmu_cdb_build.h"

#define BS		512u
#define NR_BLOCKS	2048u		/* 1 MiB */
#define MAX_XFER	(64u << 10)

/* ---- a store that records what it is asked ---- */

struct fake {
	struct store st;
	uint8_t *data;
	bool peek;
	int fail_read, fail_write, fail_flush, fail_trim;
	int flushes, trims, zeroes, writes;
	uint64_t trim_off[8], trim_len[8];
	uint64_t zero_off, zero_len;
};

static struct fake *to_fake(struct store *st)
{
	return (struct fake *)st;
}

static int f_pread(struct store *st, void *buf, size_t len, uint64_t off)
{
	struct fake *f = to_fake(st);

	assert_true(off + len <= st->size);
	if (f->fail_read)
		return f->fail_read;
	memcpy(buf, f->data + off, len);
	return 0;
}

static int f_pwrite(struct store *st, const void *buf, size_t len,
		    uint64_t off)
{
	struct fake *f = to_fake(st);

	assert_true(off + len <= st->size);
	if (f->fail_write)
		return f->fail_write;
	f->writes++;
	memcpy(f->data + off, buf, len);
	return 0;
}

static int f_zero(struct store *st, size_t len, uint64_t off)
{
	struct fake *f = to_fake(st);

	f->zeroes++;
	f->zero_off = off;
	f->zero_len = len;
	memset(f->data + off, 0, len);
	return 0;
}

static int f_trim(struct store *st, size_t len, uint64_t off)
{
	struct fake *f = to_fake(st);

	if (f->fail_trim)
		return f->fail_trim;
	if (f->trims < 8) {
		f->trim_off[f->trims] = off;
		f->trim_len[f->trims] = len;
	}
	f->trims++;
	memset(f->data + off, 0, len);
	return 0;
}

static int f_flush(struct store *st)
{
	struct fake *f = to_fake(st);

	f->flushes++;
	return f->fail_flush;
}

static const void *f_peek(struct store *st, size_t len, uint64_t off)
{
	struct fake *f = to_fake(st);

	return f->peek ? f->data + off : NULL;
}

static void f_close(struct store *st)
{
}

static const struct store_ops fake_ops = {
	.name = "fake",
	.pread = f_pread,
	.pwrite = f_pwrite,
	.zero = f_zero,
	.trim = f_trim,
	.flush = f_flush,
	.peek = f_peek,
	.close = f_close,
};

struct env {
	struct fake fake;
	struct scsi_target t;
	struct scsi_lu lu;
	struct scsi_reply r;
	uint8_t buf[256 * 1024];	/* data buffers point in here */
};

static int setup_with(void **state, uint64_t blocks, bool lbprz)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	e->fake.st.ops = &fake_ops;
	e->fake.st.size = (uint64_t)NR_BLOCKS * BS;
	e->fake.data = calloc(1, e->fake.st.size);
	assert_non_null(e->fake.data);
	assert_int_equal(scsi_target_init(&e->t, blocks * BS, BS, MAX_XFER,
					  lbprz, 0x0123456789abcdefull), 0);
	assert_int_equal(scsi_lu_init(&e->lu, &e->t, &e->fake.st), 0);
	*state = e;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, NR_BLOCKS, true);
}

static int teardown(void **state)
{
	struct env *e = *state;

	scsi_lu_free(&e->lu);
	free(e->fake.data);
	free(e);
	return 0;
}

/* Run a CDB with one data buffer of @len bytes at e->buf. */
static struct scsi_reply *run(struct env *e, const uint8_t *cdb,
			      size_t cdb_len, size_t len)
{
	struct iovec iov = { .iov_base = e->buf, .iov_len = len };

	scsi_execute(&e->lu, cdb, cdb_len, &iov, len ? 1 : 0, &e->r);
	return &e->r;
}

static void assert_good(const struct scsi_reply *r)
{
	assert_int_equal(r->status, SCSI_STATUS_GOOD);
	assert_int_equal(r->sense_len, 0);
}

static void assert_sense(const struct scsi_reply *r, uint8_t key, uint8_t asc,
			 uint8_t ascq)
{
	assert_int_equal(r->status, SCSI_STATUS_CHECK_CONDITION);
	assert_int_equal(r->sense_len, TCMU_SENSE_FIXED_LEN);
	assert_int_equal(r->sense[0] & 0x7f, 0x70);
	assert_int_equal(r->sense[2] & 0x0f, key);
	assert_int_equal(r->sense[12], asc);
	assert_int_equal(r->sense[13], ascq);
}

/* INVALID FIELD IN CDB pointing at @byte (and @bit, or -1). */
static void assert_field(const struct scsi_reply *r, uint16_t byte, int bit)
{
	assert_sense(r, SCSI_SK_ILLEGAL_REQUEST, SCSI_ASC_INVALID_FIELD_IN_CDB,
		     0);
	assert_int_equal(r->sense[15] & 0xc0, 0xc0);	/* SKSV, C/D */
	if (bit >= 0)
		assert_int_equal(r->sense[15] & 0x0f, 0x08 | bit);
	else
		assert_int_equal(r->sense[15] & 0x08, 0);
	assert_int_equal(r->sense[16] << 8 | r->sense[17], byte);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static void inquiry(uint8_t cdb[6], bool evpd, uint8_t page, uint16_t len)
{
	tcmu_cdb_inquiry(cdb, evpd, page, len);
}

/* ---- INQUIRY ---- */

static void test_inquiry_standard(void **state)
{
	struct env *e = *state;
	uint8_t cdb[6];
	struct scsi_reply *r;

	memset(e->buf, 0xee, 96);
	inquiry(cdb, false, 0, 96);
	r = run(e, cdb, 6, 96);
	assert_good(r);
	assert_int_equal(e->buf[0], 0x00);
	assert_int_equal(e->buf[1], 0x00);
	assert_int_equal(e->buf[2], 0x06);		/* SPC-4 */
	assert_int_equal(e->buf[3], 0x12);		/* HISUP, format 2 */
	assert_int_equal(e->buf[4], 74 - 5);
	assert_int_equal(e->buf[7], 0x02);		/* CMDQUE */
	assert_memory_equal(e->buf + 8, "TORUS   ", 8);
	assert_memory_equal(e->buf + 16, "tcmu-shim       ", 16);
	assert_memory_equal(e->buf + 32, "0001", 4);
	assert_int_equal(e->buf[58], 0x00);
	assert_int_equal(e->buf[59], 0xa0);		/* SAM-5 */
	assert_int_equal(e->buf[60], 0x04);
	assert_int_equal(e->buf[61], 0x60);		/* SPC-4 */
	/* The rest of the buffer is zeroed and the short length reported. */
	assert_int_equal(r->read_len, 74);
	assert_int_equal(e->buf[74], 0);
	assert_int_equal(e->buf[95], 0);
}

static void test_inquiry_truncated(void **state)
{
	struct env *e = *state;
	struct tcmu_inquiry inq;
	uint8_t cdb[6];
	struct scsi_reply *r;

	memset(e->buf, 0xee, 64);
	inquiry(cdb, false, 0, 36);
	r = run(e, cdb, 6, 36);
	assert_good(r);
	assert_int_equal(r->read_len, -1);		/* all of it */
	assert_int_equal(tcmu_inquiry_std_decode(e->buf, 36, &inq, NULL), 0);
	assert_string_equal(inq.vendor, "TORUS");
	assert_string_equal(inq.product, "tcmu-shim");
	assert_true(inq.cmdque);
	assert_int_equal(e->buf[36], 0xee);		/* untouched */

	/* Allocation length 5 of a 64-byte buffer: 5 bytes, then zeroes. */
	memset(e->buf, 0xee, 64);
	inquiry(cdb, false, 0, 5);
	r = run(e, cdb, 6, 64);
	assert_good(r);
	assert_int_equal(r->read_len, 5);
	assert_int_equal(e->buf[4], 74 - 5);
	assert_int_equal(e->buf[5], 0);
}

static void test_inquiry_bad(void **state)
{
	struct env *e = *state;
	uint8_t cdb[6];

	inquiry(cdb, true, 0x99, 64);
	assert_field(run(e, cdb, 6, 64), 2, -1);
	/* A page code without EVPD (the parser's check). */
	inquiry(cdb, false, 0, 64);
	cdb[2] = 0x80;
	assert_field(run(e, cdb, 6, 64), 2, -1);
}

static void test_vpd_supported(void **state)
{
	struct env *e = *state;
	static const uint8_t want[] = {
		0x00, 0x00, 0x00, 0x06, 0x00, 0x80, 0x83, 0xb0, 0xb1, 0xb2,
	};
	uint8_t cdb[6];
	struct scsi_reply *r;

	inquiry(cdb, true, 0x00, 255);
	r = run(e, cdb, 6, 255);
	assert_good(r);
	assert_memory_equal(e->buf, want, sizeof(want));
	assert_int_equal(r->read_len, sizeof(want));
}

static void test_vpd_serial_and_ids(void **state)
{
	struct env *e = *state;
	uint8_t cdb[6];
	struct scsi_reply *r;

	inquiry(cdb, true, 0x80, 255);
	r = run(e, cdb, 6, 255);
	assert_good(r);
	assert_int_equal(e->buf[1], 0x80);
	assert_int_equal(e->buf[3], 16);
	assert_memory_equal(e->buf + 4, "0123456789abcdef", 16);

	inquiry(cdb, true, 0x83, 255);
	r = run(e, cdb, 6, 255);
	assert_good(r);
	assert_int_equal(e->buf[1], 0x83);
	assert_int_equal(e->buf[2] << 8 | e->buf[3], 12 + 4 + 24);
	/* NAA, binary, logical unit: 3 then the low 60 bits of the id. */
	assert_int_equal(e->buf[4], 0x01);
	assert_int_equal(e->buf[5], 0x03);
	assert_int_equal(e->buf[7], 8);
	assert_true(be64(e->buf + 8) == 0x3123456789abcdefull);
	/* T10 vendor ID, ASCII: vendor then serial. */
	assert_int_equal(e->buf[16], 0x02);
	assert_int_equal(e->buf[17], 0x01);
	assert_int_equal(e->buf[19], 24);
	assert_memory_equal(e->buf + 20, "TORUS   0123456789abcdef", 24);
}

static void test_vpd_block_limits(void **state)
{
	struct env *e = *state;
	struct tcmu_block_limits bl;
	uint8_t cdb[6];
	struct scsi_reply *r;

	inquiry(cdb, true, 0xb0, 64);
	r = run(e, cdb, 6, 64);
	assert_good(r);
	assert_int_equal(e->buf[1], 0xb0);
	assert_int_equal(e->buf[3], 0x3c);
	assert_int_equal(e->buf[4], 0x01);		/* WSNZ */
	assert_int_equal(tcmu_vpd_block_limits_decode(e->buf, 64, &bl, NULL),
			 0);
	/* 128 blocks as both, as tcmu-runner (the kernel's hw_max_sectors). */
	assert_int_equal(bl.max_transfer, 128);
	assert_int_equal(bl.opt_transfer, 128);
	assert_int_equal(bl.opt_granularity, 8);
	assert_int_equal(bl.max_unmap_lbas, (1u << 30) / BS);
	assert_int_equal(bl.max_unmap_descs, SCSI_MAX_UNMAP_DESCS);
	assert_int_equal(bl.unmap_granularity, 8);
	assert_true(bl.max_write_same == (1u << 30) / BS);
}

/* Commands of up to --max-command-data, but the page offers 128 blocks. */
static uint32_t offered(struct env *e, uint32_t block_size, uint32_t max,
			bool opt)
{
	struct tcmu_block_limits bl;
	uint8_t cdb[6];

	assert_int_equal(scsi_target_init(&e->t, 1u << 26, block_size, max,
					  true, 1), 0);
	inquiry(cdb, true, 0xb0, 64);
	assert_good(run(e, cdb, 6, 64));
	assert_int_equal(tcmu_vpd_block_limits_decode(e->buf, 64, &bl, NULL),
			 0);
	return opt ? bl.opt_transfer : bl.max_transfer;
}

static void test_vpd_transfer_lengths(void **state)
{
	struct env *e = *state;

	assert_int_equal(offered(e, 512, 8u << 20, false), 128);
	assert_int_equal(offered(e, 512, 8u << 20, true), 128);
	assert_int_equal(offered(e, 4096, 8u << 20, false), 128);
	assert_int_equal(offered(e, 4096, 8u << 20, true), 128);
	/* A smaller --max-command-data lowers both. */
	assert_int_equal(offered(e, 512, 16u << 10, false), 32);
	assert_int_equal(offered(e, 512, 16u << 10, true), 32);
	assert_int_equal(offered(e, 4096, 4096, false), 1);
}

static void test_vpd_characteristics_provisioning(void **state)
{
	struct env *e = *state;
	uint8_t cdb[6];
	struct scsi_reply *r;

	inquiry(cdb, true, 0xb1, 64);
	r = run(e, cdb, 6, 64);
	assert_good(r);
	assert_int_equal(e->buf[3], 0x3c);
	assert_int_equal(e->buf[4] << 8 | e->buf[5], 1);	/* non-rotating */

	inquiry(cdb, true, 0xb2, 64);
	r = run(e, cdb, 6, 64);
	assert_good(r);
	assert_int_equal(e->buf[1], 0xb2);
	assert_int_equal(e->buf[3], 4);
	assert_int_equal(e->buf[5], 0x80 | 0x40 | 0x04);	/* LBPU LBPWS LBPRZ */
	assert_int_equal(e->buf[6] & 0x07, 2);		/* thin */
	assert_int_equal(r->read_len, 8);
}

/* ---- READ CAPACITY ---- */

static void test_read_capacity(void **state)
{
	struct env *e = *state;
	struct tcmu_capacity cap;
	uint8_t cdb[16] = { SCSI_READ_CAPACITY_10 };
	struct scsi_reply *r;

	r = run(e, cdb, 10, 8);
	assert_good(r);
	assert_int_equal(be32(e->buf), NR_BLOCKS - 1);
	assert_int_equal(be32(e->buf + 4), BS);

	tcmu_cdb_read_capacity16(cdb, 32);
	r = run(e, cdb, 16, 32);
	assert_good(r);
	assert_int_equal(tcmu_read_capacity16_decode(e->buf, 32, &cap, NULL),
			 0);
	assert_true(cap.last_lba == NR_BLOCKS - 1);
	assert_int_equal(cap.block_len, BS);
	assert_true(cap.lbpme);
	assert_true(cap.lbprz);
	assert_int_equal(e->buf[14], 0xc0);

	/* Allocation length 12: the least a target returns. */
	memset(e->buf, 0xee, 32);
	tcmu_cdb_read_capacity16(cdb, 12);
	r = run(e, cdb, 16, 12);
	assert_good(r);
	assert_int_equal(be32(e->buf + 8), BS);
	assert_int_equal(e->buf[12], 0xee);
}

static void test_read_capacity_large(void **state)
{
	struct env *e;
	uint8_t cdb[16] = { SCSI_READ_CAPACITY_10 };
	struct scsi_reply *r;

	/* 2^32 + 1 blocks: (10) cannot say it; the store is never read. */
	setup_with(state, (1ull << 32) + 1, false);
	e = *state;
	r = run(e, cdb, 10, 8);
	assert_good(r);
	assert_int_equal(be32(e->buf), 0xffffffff);
	tcmu_cdb_read_capacity16(cdb, 32);
	r = run(e, cdb, 16, 32);
	assert_good(r);
	assert_true(be64(e->buf) == 1ull << 32);
	assert_int_equal(e->buf[14], 0x80);		/* LBPME, no LBPRZ */
	teardown(state);
}

/* ---- MODE SENSE ---- */

static void mode_sense6(uint8_t cdb[6], bool dbd, uint8_t pc, uint8_t page,
			uint8_t alloc)
{
	memset(cdb, 0, 6);
	cdb[0] = SCSI_MODE_SENSE_6;
	cdb[1] = dbd ? 0x08 : 0;
	cdb[2] = pc << 6 | page;
	cdb[4] = alloc;
}

static void test_mode_sense6_caching(void **state)
{
	struct env *e = *state;
	uint8_t cdb[6];
	struct scsi_reply *r;

	mode_sense6(cdb, false, 0, 0x08, 255);
	r = run(e, cdb, 6, 255);
	assert_good(r);
	assert_int_equal(r->read_len, 4 + 8 + 20);
	assert_int_equal(e->buf[0], 4 + 8 + 20 - 1);
	assert_int_equal(e->buf[2], 0x10);		/* DPOFUA */
	assert_int_equal(e->buf[3], 8);
	assert_int_equal(be32(e->buf + 4), NR_BLOCKS);
	assert_int_equal(be32(e->buf + 8), BS);
	assert_int_equal(e->buf[12], 0x08);
	assert_int_equal(e->buf[13], 0x12);
	assert_int_equal(e->buf[14], 0x04);		/* WCE */

	/* DBD: no block descriptor. */
	mode_sense6(cdb, true, 0, 0x08, 255);
	r = run(e, cdb, 6, 255);
	assert_good(r);
	assert_int_equal(e->buf[0], 4 + 20 - 1);
	assert_int_equal(e->buf[3], 0);
	assert_int_equal(e->buf[4], 0x08);
	assert_int_equal(e->buf[6], 0x04);

	/* Changeable values: nothing is. */
	mode_sense6(cdb, true, 1, 0x08, 255);
	r = run(e, cdb, 6, 255);
	assert_good(r);
	assert_int_equal(e->buf[4], 0x08);
	assert_int_equal(e->buf[6], 0x00);

	/* Allocation length 4: the header says how much there was. */
	memset(e->buf, 0xee, 16);
	mode_sense6(cdb, false, 0, 0x08, 4);
	r = run(e, cdb, 6, 4);
	assert_good(r);
	assert_int_equal(e->buf[0], 4 + 8 + 20 - 1);
	assert_int_equal(e->buf[4], 0xee);
}

static void test_mode_sense_all_pages(void **state)
{
	struct env *e = *state;
	uint8_t cdb[10];
	struct scsi_reply *r;

	mode_sense6(cdb, true, 0, 0x3f, 255);
	r = run(e, cdb, 6, 255);
	assert_good(r);
	assert_int_equal(e->buf[0], 4 + 20 + 12 - 1);
	assert_int_equal(e->buf[4], 0x08);
	assert_int_equal(e->buf[24], 0x0a);
	assert_int_equal(e->buf[25], 0x0a);
	assert_int_equal(e->buf[27], 0x10);

	/* Every subpage of every page: the same, we have no subpages. */
	mode_sense6(cdb, true, 0, 0x3f, 255);
	cdb[3] = 0xff;
	assert_good(run(e, cdb, 6, 255));
	assert_int_equal(e->buf[0], 4 + 20 + 12 - 1);

	/* MODE SENSE(10) with LLBAA: the long block descriptor. */
	memset(cdb, 0, 10);
	cdb[0] = SCSI_MODE_SENSE_10;
	cdb[1] = 0x10;
	cdb[2] = 0x0a;
	cdb[8] = 255;
	r = run(e, cdb, 10, 255);
	assert_good(r);
	assert_int_equal(e->buf[0] << 8 | e->buf[1], 8 + 16 + 12 - 2);
	assert_int_equal(e->buf[3], 0x10);
	assert_int_equal(e->buf[4], 0x01);		/* LONGLBA */
	assert_int_equal(e->buf[6] << 8 | e->buf[7], 16);
	assert_true(be64(e->buf + 8) == NR_BLOCKS);
	assert_int_equal(be32(e->buf + 20), BS);
	assert_int_equal(e->buf[24], 0x0a);
}

static void test_mode_sense_bad(void **state)
{
	struct env *e = *state;
	uint8_t cdb[6];

	mode_sense6(cdb, false, 0, 0x1c, 255);
	assert_field(run(e, cdb, 6, 255), 2, 5);
	mode_sense6(cdb, false, 0, 0x08, 255);
	cdb[3] = 0x01;
	assert_field(run(e, cdb, 6, 255), 3, -1);
	mode_sense6(cdb, false, 3, 0x08, 255);
	assert_sense(run(e, cdb, 6, 255), SCSI_SK_ILLEGAL_REQUEST, 0x39, 0);
}

/* ---- READ and WRITE ---- */

static void rw10(uint8_t cdb[10], uint8_t op, uint32_t lba, uint16_t blocks,
		 bool fua)
{
	memset(cdb, 0, 10);
	cdb[0] = op;
	cdb[1] = fua ? 0x08 : 0;
	cdb[2] = lba >> 24;
	cdb[3] = lba >> 16;
	cdb[4] = lba >> 8;
	cdb[5] = lba;
	cdb[7] = blocks >> 8;
	cdb[8] = blocks;
}

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = seed + i * 7;
}

static void test_write_read_one_buffer(void **state)
{
	struct env *e = *state;
	uint8_t cdb[16], want[4 * BS];

	fill(want, sizeof(want), 1);
	memcpy(e->buf, want, sizeof(want));
	rw10(cdb, SCSI_WRITE_10, 10, 4, false);
	assert_good(run(e, cdb, 10, sizeof(want)));
	assert_memory_equal(e->fake.data + 10 * BS, want, sizeof(want));
	assert_int_equal(e->fake.flushes, 0);

	memset(e->buf, 0, sizeof(want));
	tcmu_cdb_read16(cdb, 10, 4);
	assert_good(run(e, cdb, 16, sizeof(want)));
	assert_memory_equal(e->buf, want, sizeof(want));

	/* FUA: the write is flushed before it completes. */
	tcmu_cdb_write16(cdb, 20, 1, true);
	assert_good(run(e, cdb, 16, BS));
	assert_int_equal(e->fake.flushes, 1);
}

/* Three buffers of odd sizes, as a ring's data area may hand out. */
static void scattered(struct env *e, struct iovec iov[3])
{
	iov[0] = (struct iovec){ e->buf, 1000 };
	iov[1] = (struct iovec){ e->buf + 4096, 48 };
	iov[2] = (struct iovec){ e->buf + 8192, 4 * BS - 1048 };
}

static void test_scattered_buffers(void **state)
{
	struct env *e = *state;
	uint8_t cdb[16], want[4 * BS];
	struct iovec iov[3];
	int peek;

	fill(want, sizeof(want), 3);
	scattered(e, iov);
	memcpy(iov[0].iov_base, want, 1000);
	memcpy(iov[1].iov_base, want + 1000, 48);
	memcpy(iov[2].iov_base, want + 1048, sizeof(want) - 1048);
	tcmu_cdb_write16(cdb, 100, 4, false);
	scsi_execute(&e->lu, cdb, 16, iov, 3, &e->r);
	assert_good(&e->r);
	assert_memory_equal(e->fake.data + 100 * BS, want, sizeof(want));

	/* Back through the bounce buffer, then straight from peek. */
	for (peek = 0; peek < 2; peek++) {
		e->fake.peek = peek;
		memset(e->buf, 0, 3 * 4096);
		tcmu_cdb_read16(cdb, 100, 4);
		scsi_execute(&e->lu, cdb, 16, iov, 3, &e->r);
		assert_good(&e->r);
		assert_memory_equal(iov[0].iov_base, want, 1000);
		assert_memory_equal(iov[1].iov_base, want + 1000, 48);
		assert_memory_equal(iov[2].iov_base, want + 1048,
				    sizeof(want) - 1048);
	}
}

static void test_rw_checks(void **state)
{
	struct env *e = *state;
	uint8_t cdb[16];
	struct scsi_reply *r;

	/* Past the end, and a first block that does not exist. */
	tcmu_cdb_read16(cdb, NR_BLOCKS - 1, 2);
	assert_sense(run(e, cdb, 16, 2 * BS), SCSI_SK_ILLEGAL_REQUEST,
		     SCSI_ASC_LBA_OUT_OF_RANGE, 0);
	tcmu_cdb_write16(cdb, NR_BLOCKS, 0, false);
	assert_sense(run(e, cdb, 16, 0), SCSI_SK_ILLEGAL_REQUEST,
		     SCSI_ASC_LBA_OUT_OF_RANGE, 0);
	/* Zero blocks at an existing LBA: nothing to do. */
	tcmu_cdb_read16(cdb, NR_BLOCKS - 1, 0);
	assert_good(run(e, cdb, 16, 0));

	/* Over the block limits' maximum transfer length. */
	rw10(cdb, SCSI_READ_10, 0, MAX_XFER / BS + 1, false);
	assert_field(run(e, cdb, 10, MAX_XFER + BS), 7, -1);
	/* READ(6) of 0 means 256 blocks: 128 KiB, over the limit too. */
	memset(cdb, 0, 6);
	cdb[0] = SCSI_READ_6;
	assert_field(run(e, cdb, 6, 128 << 10), 4, -1);
	cdb[4] = 2;
	cdb[3] = 5;
	fill(e->fake.data + 5 * BS, 2 * BS, 9);
	r = run(e, cdb, 6, 2 * BS);
	assert_good(r);
	assert_memory_equal(e->buf, e->fake.data + 5 * BS, 2 * BS);

	/* Buffers smaller than the transfer. */
	tcmu_cdb_write16(cdb, 0, 2, false);
	assert_field(run(e, cdb, 16, BS), 10, -1);
	assert_int_equal(e->fake.writes, 0);
}

static void test_store_errors(void **state)
{
	struct env *e = *state;
	uint8_t cdb[16];
	struct scsi_reply *r;

	e->fake.fail_read = -EIO;
	tcmu_cdb_read16(cdb, 7, 1);
	r = run(e, cdb, 16, BS);
	assert_sense(r, SCSI_SK_MEDIUM_ERROR, SCSI_ASC_UNRECOVERED_READ_ERROR,
		     0);
	assert_int_equal(r->sense[0], 0xf0);		/* VALID: the LBA */
	assert_int_equal(be32(r->sense + 3), 7);
	assert_int_equal(r->error, EIO);

	e->fake.fail_write = -EIO;
	tcmu_cdb_write16(cdb, 8, 1, false);
	assert_sense(run(e, cdb, 16, BS), SCSI_SK_MEDIUM_ERROR,
		     SCSI_ASC_WRITE_ERROR, 0);
	e->fake.fail_write = -ENOSPC;
	assert_sense(run(e, cdb, 16, BS), SCSI_SK_DATA_PROTECT,
		     SCSI_ASC_WRITE_PROTECTED, 0x07);

	e->fake.fail_flush = -EIO;
	memset(cdb, 0, 10);
	cdb[0] = SCSI_SYNCHRONIZE_CACHE_10;
	assert_sense(run(e, cdb, 10, 0), SCSI_SK_MEDIUM_ERROR,
		     SCSI_ASC_WRITE_ERROR, 0);
}

static void test_sync_cache(void **state)
{
	struct env *e = *state;
	uint8_t cdb[16];

	tcmu_cdb_sync16(cdb, 0, 0);
	assert_good(run(e, cdb, 16, 0));
	assert_int_equal(e->fake.flushes, 1);
	tcmu_cdb_sync16(cdb, NR_BLOCKS, 1);
	assert_sense(run(e, cdb, 16, 0), SCSI_SK_ILLEGAL_REQUEST,
		     SCSI_ASC_LBA_OUT_OF_RANGE, 0);
	assert_int_equal(e->fake.flushes, 1);
	/* A store with no flush at all: the opcode, as tcmu-runner says. */
	e->fake.fail_flush = -EOPNOTSUPP;
	tcmu_cdb_sync16(cdb, 0, 0);
	assert_sense(run(e, cdb, 16, 0), SCSI_SK_ILLEGAL_REQUEST,
		     SCSI_ASC_INVALID_OPCODE, 0);
}

/* A store without a volatile cache: MODE SENSE says WCE is off. */
static void test_no_write_cache(void **state)
{
	struct env *e = *state;
	uint8_t cdb[6];

	e->t.write_cache = false;
	mode_sense6(cdb, true, 0, 0x08, 255);
	assert_good(run(e, cdb, 6, 255));
	assert_int_equal(e->buf[4], 0x08);
	assert_int_equal(e->buf[6] & 0x04, 0);		/* no WCE */
}

/* ---- UNMAP and WRITE SAME ---- */

static size_t unmap_list(uint8_t *p, int n, const uint64_t *lba,
			 const uint32_t *blocks)
{
	size_t len = 8 + 16 * (size_t)n;
	int i, b;

	memset(p, 0, len);
	p[0] = (len - 2) >> 8;
	p[1] = len - 2;
	p[2] = (len - 8) >> 8;
	p[3] = len - 8;
	for (i = 0; i < n; i++) {
		for (b = 0; b < 8; b++)
			p[8 + 16 * i + b] = lba[i] >> (56 - 8 * b);
		for (b = 0; b < 4; b++)
			p[16 + 16 * i + b] = blocks[i] >> (24 - 8 * b);
	}
	return len;
}

static void test_unmap(void **state)
{
	struct env *e = *state;
	uint64_t lba[2] = { 16, 100 };
	uint32_t blocks[2] = { 8, 0 };
	uint8_t cdb[10];
	size_t len;

	memset(e->fake.data, 0xaa, 200 * BS);
	len = unmap_list(e->buf, 2, lba, blocks);
	tcmu_cdb_unmap(cdb, len);
	assert_good(run(e, cdb, 10, len));
	/* The empty descriptor asks for nothing. */
	assert_int_equal(e->fake.trims, 1);
	assert_true(e->fake.trim_off[0] == 16 * BS);
	assert_true(e->fake.trim_len[0] == 8 * BS);

	/* One bad descriptor: nothing is trimmed. */
	blocks[1] = 2;
	lba[1] = NR_BLOCKS - 1;
	len = unmap_list(e->buf, 2, lba, blocks);
	tcmu_cdb_unmap(cdb, len);
	assert_sense(run(e, cdb, 10, len), SCSI_SK_ILLEGAL_REQUEST,
		     SCSI_ASC_LBA_OUT_OF_RANGE, 0);
	assert_int_equal(e->fake.trims, 1);

	/* No parameter list: nothing to do. A list shorter than its header. */
	tcmu_cdb_unmap(cdb, 0);
	assert_good(run(e, cdb, 10, 0));
	tcmu_cdb_unmap(cdb, 4);
	assert_sense(run(e, cdb, 10, 4), SCSI_SK_ILLEGAL_REQUEST,
		     SCSI_ASC_PARAMETER_LIST_LENGTH, 0);

	/* ANCHOR: we cannot anchor. */
	len = unmap_list(e->buf, 1, lba, blocks);
	tcmu_cdb_unmap(cdb, len);
	cdb[1] = 0x01;
	assert_field(run(e, cdb, 10, len), 1, 0);
}

static void test_unmap_limits(void **state)
{
	struct env *e = *state;
	uint64_t lba[SCSI_MAX_UNMAP_DESCS + 1];
	uint32_t blocks[SCSI_MAX_UNMAP_DESCS + 1];
	uint8_t cdb[10];
	size_t len;
	int i;

	for (i = 0; i <= SCSI_MAX_UNMAP_DESCS; i++) {
		lba[i] = i;
		blocks[i] = 1;
	}
	len = unmap_list(e->buf, SCSI_MAX_UNMAP_DESCS + 1, lba, blocks);
	tcmu_cdb_unmap(cdb, len);
	assert_sense(run(e, cdb, 10, len), SCSI_SK_ILLEGAL_REQUEST,
		     SCSI_ASC_INVALID_FIELD_IN_PARAM, 0);
	len = unmap_list(e->buf, SCSI_MAX_UNMAP_DESCS, lba, blocks);
	tcmu_cdb_unmap(cdb, len);
	assert_good(run(e, cdb, 10, len));
	assert_int_equal(e->fake.trims, SCSI_MAX_UNMAP_DESCS);
}

static void test_write_same(void **state)
{
	struct env *e = *state;
	uint8_t cdb[16];
	uint32_t i;

	/* Zeroes with UNMAP, trimmed blocks read as zeroes: a trim. */
	memset(e->buf, 0, BS);
	tcmu_cdb_write_same16(cdb, 32, 16, true);
	assert_good(run(e, cdb, 16, BS));
	assert_int_equal(e->fake.trims, 1);
	assert_int_equal(e->fake.zeroes, 0);

	/* Zeroes without UNMAP: written as zeroes. */
	tcmu_cdb_write_same16(cdb, 64, 16, false);
	assert_good(run(e, cdb, 16, BS));
	assert_int_equal(e->fake.zeroes, 1);
	assert_true(e->fake.zero_off == 64 * BS);
	assert_true(e->fake.zero_len == 16 * BS);

	/* A pattern, more blocks than one transfer: every block gets it. */
	fill(e->buf, BS, 5);
	tcmu_cdb_write_same16(cdb, 0, MAX_XFER / BS + 3, true);
	assert_good(run(e, cdb, 16, BS));
	assert_int_equal(e->fake.trims, 1);
	assert_int_equal(e->fake.writes, 2);
	for (i = 0; i < MAX_XFER / BS + 3; i++)
		assert_memory_equal(e->fake.data + i * BS, e->buf, BS);
	assert_int_equal(e->fake.data[(MAX_XFER / BS + 3) * BS], 0);

	/* NDOB: no data-out, zeroes. */
	tcmu_cdb_write_same16(cdb, 0, 4, false);
	cdb[1] |= 0x01;
	assert_good(run(e, cdb, 16, 0));
	assert_int_equal(e->fake.zeroes, 2);
	assert_int_equal(e->fake.data[0], 0);

	/* Zero blocks (WSNZ), out of range, ANCHOR. */
	tcmu_cdb_write_same16(cdb, 0, 0, false);
	assert_field(run(e, cdb, 16, BS), 10, -1);
	tcmu_cdb_write_same16(cdb, NR_BLOCKS - 1, 2, false);
	assert_sense(run(e, cdb, 16, BS), SCSI_SK_ILLEGAL_REQUEST,
		     SCSI_ASC_LBA_OUT_OF_RANGE, 0);
	tcmu_cdb_write_same16(cdb, 0, 1, true);
	cdb[1] |= 0x10;
	assert_field(run(e, cdb, 16, BS), 1, 4);
}

static void test_write_same_no_lbprz(void **state)
{
	struct env *e;
	uint8_t cdb[16];

	/* Trimmed blocks may keep their data: zeroes are written. */
	setup_with(state, NR_BLOCKS, false);
	e = *state;
	memset(e->buf, 0, BS);
	tcmu_cdb_write_same16(cdb, 32, 16, true);
	assert_good(run(e, cdb, 16, BS));
	assert_int_equal(e->fake.trims, 0);
	assert_int_equal(e->fake.zeroes, 1);
	teardown(state);
}

/* ---- REPORT SUPPORTED OPERATION CODES ---- */

static void rsoc(uint8_t cdb[12], uint8_t options, uint8_t op, uint16_t sa,
		 uint32_t alloc)
{
	memset(cdb, 0, 12);
	cdb[0] = SCSI_MAINTENANCE_IN;
	cdb[1] = SCSI_MI_REPORT_SUPPORTED_OPCODES;
	cdb[2] = options;
	cdb[3] = op;
	cdb[4] = sa >> 8;
	cdb[5] = sa;
	cdb[6] = alloc >> 24;
	cdb[7] = alloc >> 16;
	cdb[8] = alloc >> 8;
	cdb[9] = alloc;
}

/*
 * A store that drops trims (an NBD server without TRIM): the device is
 * fully provisioned, and UNMAP and WRITE SAME's UNMAP bit are refused as
 * LIO refuses them, with nothing trimmed.
 */
static void test_not_thin(void **state)
{
	uint64_t lba = 16;
	uint32_t blocks = 8;
	struct tcmu_capacity cap;
	uint8_t cdb[16];
	struct env *e;
	size_t len;

	setup_with(state, NR_BLOCKS, true);
	e = *state;
	e->t.thin = false;

	tcmu_cdb_read_capacity16(cdb, 32);
	assert_good(run(e, cdb, 16, 32));
	assert_int_equal(tcmu_read_capacity16_decode(e->buf, 32, &cap, NULL),
			 0);
	assert_false(cap.lbpme);
	assert_false(cap.lbprz);

	inquiry(cdb, true, 0xb2, 64);
	assert_good(run(e, cdb, 6, 64));
	assert_int_equal(e->buf[5], 0);			/* no LBPU, LBPWS */
	assert_int_equal(e->buf[6] & 0x07, 0);		/* fully provisioned */
	inquiry(cdb, true, 0xb0, 64);
	assert_good(run(e, cdb, 6, 64));
	assert_int_equal(be32(e->buf + 20), 0);		/* no UNMAP blocks */
	assert_int_equal(be32(e->buf + 24), 0);

	len = unmap_list(e->buf, 1, &lba, &blocks);
	tcmu_cdb_unmap(cdb, len);
	assert_sense(run(e, cdb, 10, len), SCSI_SK_ILLEGAL_REQUEST,
		     SCSI_ASC_INVALID_OPCODE, 0);
	memset(e->buf, 0, BS);
	tcmu_cdb_write_same16(cdb, 32, 16, true);
	assert_sense(run(e, cdb, 16, BS), SCSI_SK_ILLEGAL_REQUEST,
		     SCSI_ASC_INVALID_OPCODE, 0);
	assert_int_equal(e->fake.trims, 0);
	/* Without the UNMAP bit, zeroes are written. */
	tcmu_cdb_write_same16(cdb, 32, 16, false);
	assert_good(run(e, cdb, 16, BS));
	assert_int_equal(e->fake.zeroes, 1);

	rsoc(cdb, 1, SCSI_UNMAP, 0, 64);
	assert_good(run(e, cdb, 12, 64));
	assert_int_equal(e->buf[1], 0x01);		/* not supported */
	rsoc(cdb, 1, SCSI_WRITE_SAME_16, 0, 64);
	assert_good(run(e, cdb, 12, 64));
	assert_int_equal(e->buf[5], 0x01);		/* NDOB, no UNMAP */
	teardown(state);
}

/*
 * A read-only store: MODE SENSE says WP, and every command that would
 * change data gets DATA PROTECT on both paths before the store sees it;
 * reads and flushes still work.
 */
static void test_write_protect(void **state)
{
	struct env *e = *state;
	struct iovec one = { e->buf, 4 * BS };
	uint8_t cdb[16], list[8 + 16];
	uint64_t lba = 8;
	uint32_t blocks = 4;
	struct scsi_io io;
	size_t len;

	mode_sense6(cdb, true, 0, 0x08, 255);
	assert_good(run(e, cdb, 6, 255));
	assert_int_equal(e->buf[2] & 0x80, 0);		/* writable */

	e->t.write_protect = true;
	mode_sense6(cdb, true, 0, 0x08, 255);
	assert_good(run(e, cdb, 6, 255));
	assert_int_equal(e->buf[2], 0x80 | 0x10);	/* WP, DPOFUA */

	fill(e->buf, 4 * BS, 3);
	rw10(cdb, SCSI_WRITE_10, 10, 4, false);
	assert_sense(run(e, cdb, 10, 4 * BS), SCSI_SK_DATA_PROTECT,
		     SCSI_ASC_WRITE_PROTECTED, 0);
	tcmu_cdb_write16(cdb, 10, 4, true);
	assert_int_equal(scsi_prepare(&e->lu, cdb, 16, &one, 1, &io, &e->r),
			 SCSI_PLAN_DONE);
	assert_sense(&e->r, SCSI_SK_DATA_PROTECT, SCSI_ASC_WRITE_PROTECTED, 0);
	tcmu_cdb_write_same16(cdb, 0, 8, true);
	assert_sense(run(e, cdb, 16, BS), SCSI_SK_DATA_PROTECT,
		     SCSI_ASC_WRITE_PROTECTED, 0);
	len = unmap_list(list, 1, &lba, &blocks);
	memcpy(e->buf, list, len);
	tcmu_cdb_unmap(cdb, len);
	assert_sense(run(e, cdb, 10, len), SCSI_SK_DATA_PROTECT,
		     SCSI_ASC_WRITE_PROTECTED, 0);
	assert_int_equal(e->fake.writes + e->fake.zeroes + e->fake.trims, 0);

	tcmu_cdb_read16(cdb, 10, 4);
	assert_good(run(e, cdb, 16, 4 * BS));
	tcmu_cdb_sync16(cdb, 0, 0);
	assert_good(run(e, cdb, 16, 0));
}

static void test_report_opcodes_one(void **state)
{
	struct env *e = *state;
	uint8_t cdb[12];
	struct scsi_reply *r;

	rsoc(cdb, 1, SCSI_WRITE_SAME_16, 0, 64);
	r = run(e, cdb, 12, 64);
	assert_good(r);
	assert_int_equal(e->buf[1], 0x03);		/* supported */
	assert_int_equal(e->buf[2] << 8 | e->buf[3], 16);
	assert_int_equal(e->buf[4], 0x93);
	assert_int_equal(e->buf[5], 0x09);		/* UNMAP, NDOB */
	assert_int_equal(r->read_len, 20);

	/* WRITE SAME(10) is not supported. */
	rsoc(cdb, 1, 0x41, 0, 64);
	r = run(e, cdb, 12, 64);
	assert_good(r);
	assert_int_equal(e->buf[1], 0x01);
	assert_int_equal(r->read_len, 4);

	/* With timeouts: CTDP and the descriptor after the usage data. */
	rsoc(cdb, 0x81, SCSI_READ_10, 0, 64);
	r = run(e, cdb, 12, 64);
	assert_good(r);
	assert_int_equal(e->buf[1], 0x83);
	assert_int_equal(e->buf[14] << 8 | e->buf[15], 10);
	assert_int_equal(r->read_len, 4 + 10 + 12);

	/* READ CAPACITY(16) by operation code and service action. */
	rsoc(cdb, 2, SCSI_SERVICE_ACTION_IN_16, SCSI_SAI_READ_CAPACITY_16, 64);
	assert_good(run(e, cdb, 12, 64));
	assert_int_equal(e->buf[1], 0x03);
	assert_int_equal(e->buf[4], 0x9e);
	rsoc(cdb, 2, SCSI_SERVICE_ACTION_IN_16, 0x11, 64);
	assert_good(run(e, cdb, 12, 64));
	assert_int_equal(e->buf[1], 0x01);

	/* The wrong form for the operation code. */
	rsoc(cdb, 1, SCSI_SERVICE_ACTION_IN_16, 0, 64);
	assert_field(run(e, cdb, 12, 64), 2, 2);
	rsoc(cdb, 2, SCSI_READ_10, 0, 64);
	assert_field(run(e, cdb, 12, 64), 2, 2);
}

static void test_report_opcodes_all(void **state)
{
	struct env *e = *state;
	uint8_t cdb[12];
	uint32_t len, i;
	bool ws16 = false;

	rsoc(cdb, 0, 0, 0, 4096);
	assert_good(run(e, cdb, 12, 4096));
	len = be32(e->buf);
	assert_int_equal(len % 8, 0);
	assert_true(len >= 8 * 15);
	for (i = 0; i < len / 8; i++) {
		const uint8_t *d = e->buf + 4 + 8 * i;

		if (d[0] == SCSI_WRITE_SAME_16)
			ws16 = true;
		if (d[0] == SCSI_SERVICE_ACTION_IN_16) {
			assert_int_equal(d[3], SCSI_SAI_READ_CAPACITY_16);
			assert_int_equal(d[5], 0x01);	/* SERVACTV */
		}
	}
	assert_true(ws16);
}

/* ---- the rest ---- */

static void test_unknown_and_tur(void **state)
{
	struct env *e = *state;
	static const uint8_t want[TCMU_SENSE_FIXED_LEN] = {
		0x70, 0, 0x05, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x20, 0x00,
	};
	uint8_t cdb[16] = { 0 };

	assert_good(run(e, cdb, 6, 0));
	cdb[0] = 0x04;					/* FORMAT UNIT */
	assert_sense(run(e, cdb, 6, 0), SCSI_SK_ILLEGAL_REQUEST,
		     SCSI_ASC_INVALID_OPCODE, 0);
	assert_memory_equal(e->r.sense, want, sizeof(want));
	cdb[0] = 0x41;					/* WRITE SAME(10) */
	assert_sense(run(e, cdb, 10, 0), SCSI_SK_ILLEGAL_REQUEST,
		     SCSI_ASC_INVALID_OPCODE, 0);
	/* A reserved bit in TEST UNIT READY. */
	cdb[0] = 0;
	cdb[2] = 0x01;
	assert_field(run(e, cdb, 6, 0), 2, 0);
}

/* ---- the asynchronous path: the same replies as scsi_execute() ---- */

/* The store's part, played synchronously on the fake store. */
static int fake_io(struct env *e, const struct store_io *io)
{
	static uint8_t tmp[MAX_XFER];
	struct store *st = &e->fake.st;
	size_t done = 0;
	uint32_t i;
	int ret;

	switch (io->op) {
	case STORE_IO_READ:
		ret = store_pread(st, tmp, io->len, io->off);
		for (i = 0; !ret && i < io->iov_cnt; i++) {
			memcpy(io->iov[i].iov_base, tmp + done,
			       io->iov[i].iov_len);
			done += io->iov[i].iov_len;
		}
		return ret;
	case STORE_IO_WRITE:
		for (i = 0; i < io->iov_cnt && done < io->len; i++) {
			memcpy(tmp + done, io->iov[i].iov_base,
			       io->iov[i].iov_len);
			done += io->iov[i].iov_len;
		}
		ret = store_pwrite(st, tmp, io->len, io->off);
		if (!ret && (io->flags & STORE_IO_FUA))
			ret = store_flush(st);
		return ret;
	case STORE_IO_FLUSH:
		return store_flush(st);
	case STORE_IO_ZERO:
		return store_zero(st, io->len, io->off);
	case STORE_IO_TRIM:
		return store_trim(st, io->len, io->off);
	}
	return -EINVAL;
}

/*
 * @cdb through scsi_prepare()/scsi_finish() and through scsi_execute(),
 * from the same data: the replies and the store's data are the same.
 * Returns what the asynchronous path planned.
 */
static enum scsi_plan same_reply(struct env *e, const uint8_t *cdb,
				 size_t cdb_len, const struct iovec *iov,
				 uint32_t cnt)
{
	static uint8_t data[NR_BLOCKS * BS], buf[sizeof(e->buf)];
	struct scsi_reply sync, async;
	enum scsi_plan plan;
	struct scsi_io io;

	memcpy(data, e->fake.data, sizeof(data));
	memcpy(buf, e->buf, sizeof(buf));
	plan = scsi_prepare(&e->lu, cdb, cdb_len, iov, cnt, &io, &async);
	if (plan == SCSI_PLAN_START)
		scsi_finish(&e->lu, &io, fake_io(e, &io.bio), &async);
	else if (plan == SCSI_PLAN_SYNC)
		scsi_execute(&e->lu, cdb, cdb_len, iov, cnt, &async);

	memcpy(e->fake.data, data, sizeof(data));
	memcpy(e->buf, buf, sizeof(buf));
	scsi_execute(&e->lu, cdb, cdb_len, iov, cnt, &sync);
	assert_memory_equal(&sync, &async, sizeof(sync));
	return plan;
}

static void test_async_same_replies(void **state)
{
	struct env *e = *state;
	struct iovec one = { e->buf, 4 * BS }, iov[3];
	uint8_t cdb[16], list[8 + 16 * 2];
	uint64_t lba[2] = { 8, 64 };
	uint32_t blocks[2] = { 4, 4 };
	size_t len;

	fill(e->buf, sizeof(e->buf), 5);
	fill(e->fake.data, NR_BLOCKS * BS, 6);
	scattered(e, iov);
	tcmu_cdb_write16(cdb, 10, 4, false);
	assert_int_equal(same_reply(e, cdb, 16, &one, 1), SCSI_PLAN_START);
	assert_int_equal(same_reply(e, cdb, 16, iov, 3), SCSI_PLAN_START);
	tcmu_cdb_write16(cdb, 10, 4, true);
	assert_int_equal(same_reply(e, cdb, 16, &one, 1), SCSI_PLAN_START);
	tcmu_cdb_read16(cdb, 10, 4);
	assert_int_equal(same_reply(e, cdb, 16, iov, 3), SCSI_PLAN_START);
	/* Refused before the store: out of range, too long, short buffers. */
	tcmu_cdb_read16(cdb, NR_BLOCKS - 1, 2);
	assert_int_equal(same_reply(e, cdb, 16, &one, 1), SCSI_PLAN_DONE);
	rw10(cdb, SCSI_READ_10, 0, MAX_XFER / BS + 1, false);
	assert_int_equal(same_reply(e, cdb, 10, &one, 1), SCSI_PLAN_DONE);
	tcmu_cdb_write16(cdb, 0, 8, false);
	assert_int_equal(same_reply(e, cdb, 16, &one, 1), SCSI_PLAN_DONE);
	tcmu_cdb_read16(cdb, 3, 0);
	assert_int_equal(same_reply(e, cdb, 16, NULL, 0), SCSI_PLAN_DONE);

	/* The store's errors: the same sense, the first block in it. */
	e->fake.fail_read = -EIO;
	tcmu_cdb_read16(cdb, 7, 1);
	assert_int_equal(same_reply(e, cdb, 16, &one, 1), SCSI_PLAN_START);
	e->fake.fail_write = -ENOSPC;
	tcmu_cdb_write16(cdb, 8, 1, false);
	assert_int_equal(same_reply(e, cdb, 16, &one, 1), SCSI_PLAN_START);
	e->fake.fail_write = -EROFS;
	assert_int_equal(same_reply(e, cdb, 16, &one, 1), SCSI_PLAN_START);
	e->fake.fail_flush = -EIO;
	tcmu_cdb_sync16(cdb, 0, 0);
	assert_int_equal(same_reply(e, cdb, 16, NULL, 0), SCSI_PLAN_START);
	tcmu_cdb_sync16(cdb, NR_BLOCKS, 1);
	assert_int_equal(same_reply(e, cdb, 16, NULL, 0), SCSI_PLAN_DONE);

	/* UNMAP: one range started, two run synchronously. */
	len = unmap_list(list, 1, lba, blocks);
	memcpy(e->buf, list, len);
	tcmu_cdb_unmap(cdb, len);
	assert_int_equal(same_reply(e, cdb, 10, &one, 1), SCSI_PLAN_START);
	e->fake.fail_trim = -EOPNOTSUPP;
	assert_int_equal(same_reply(e, cdb, 10, &one, 1), SCSI_PLAN_START);
	e->fake.fail_trim = -EIO;
	assert_int_equal(same_reply(e, cdb, 10, &one, 1), SCSI_PLAN_START);
	e->fake.fail_trim = 0;
	len = unmap_list(list, 2, lba, blocks);
	memcpy(e->buf, list, len);
	tcmu_cdb_unmap(cdb, len);
	assert_int_equal(same_reply(e, cdb, 10, &one, 1), SCSI_PLAN_SYNC);

	/* WRITE SAME: zeroes (with UNMAP: a trim) started, a pattern not. */
	memset(e->buf, 0, BS);
	tcmu_cdb_write_same16(cdb, 32, 16, true);
	assert_int_equal(same_reply(e, cdb, 16, &one, 1), SCSI_PLAN_START);
	tcmu_cdb_write_same16(cdb, 32, 16, false);
	assert_int_equal(same_reply(e, cdb, 16, &one, 1), SCSI_PLAN_START);
	e->buf[3] = 1;
	assert_int_equal(same_reply(e, cdb, 16, &one, 1), SCSI_PLAN_SYNC);
	tcmu_cdb_write_same16(cdb, 0, 0, false);
	assert_int_equal(same_reply(e, cdb, 16, &one, 1), SCSI_PLAN_DONE);

	/* Anything else is scsi_execute()'s. */
	inquiry(cdb, false, 0, 96);
	assert_int_equal(same_reply(e, cdb, 6, &one, 1), SCSI_PLAN_SYNC);
}

static void test_target_init(void **state)
{
	struct scsi_target t;

	assert_int_equal(scsi_target_init(&t, 1 << 20, 1024, 1 << 20, false,
					  1), -EINVAL);
	assert_int_equal(scsi_target_init(&t, 1 << 20, 512, 1000, false, 1),
			 -EINVAL);
	assert_int_equal(scsi_target_init(&t, 100, 512, 4096, false, 1),
			 -EINVAL);
	/* A partial last block is not offered. */
	assert_int_equal(scsi_target_init(&t, 10000, 4096, 1 << 20, false,
					  0xf), 0);
	assert_true(t.nr_blocks == 2);
	assert_int_equal(t.granularity, 1);
	assert_string_equal(t.serial, "000000000000000f");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_inquiry_standard, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inquiry_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inquiry_bad, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vpd_supported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vpd_serial_and_ids, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vpd_block_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vpd_transfer_lengths, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_vpd_characteristics_provisioning, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_capacity, setup, teardown),
		cmocka_unit_test(test_read_capacity_large),
		cmocka_unit_test_setup_teardown(test_mode_sense6_caching, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_sense_all_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_sense_bad, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_read_one_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scattered_buffers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rw_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmap_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_same, setup, teardown),
		cmocka_unit_test(test_write_same_no_lbprz),
		cmocka_unit_test(test_not_thin),
		cmocka_unit_test_setup_teardown(test_no_write_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_protect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_opcodes_one, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_opcodes_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_and_tur, setup, teardown),
		cmocka_unit_test(test_target_init),
		cmocka_unit_test_setup_teardown(test_async_same_replies, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
