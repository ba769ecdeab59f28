// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU ring (proto/tcmu/tcmu_ring_*.c), both sides in one process: the
 * layout byte for byte against the UAPI header, PAD at the wrap, a full
 * ring, data area exhaustion, out-of-order completion, and hostile entries
 * and tails. The region sits between PROT_NONE pages, so any access
 * outside it kills the test (and ASan watches the rest).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcmu_ring_hdl.h"
#include "tcmu_ring_sub.h"

#define CMDR	(4096u - 128u)		/* mailbox + ring: one page */
#define DATA	8192u			/* 16 blocks of 512 */
#define BLK	512u
#define SIZE	(128u + CMDR + DATA)
#define PG	4096u

static uint8_t *map, *rg;		/* guard page, region, guard page */
static struct tcmu_sub sub;
static struct tcmu_hdl hdl;
static struct iovec iov[8];
static struct tcmu_hdl_cmd hc = { .iov = iov, .iov_max = 8 };

static const uint8_t cdb16[16] = { 0x88, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
static const uint8_t cdb32[32] = { 0x7f, 0, 0, 0, 0, 0, 0, 24, 0, 0x09 };

static int setup(void **state)
{
	map = mmap(NULL, SIZE + 2 * PG, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	rg = map + PG;
	assert_int_equal(mprotect(rg, SIZE, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(tcmu_region_layout(rg, SIZE, CMDR, DATA,
					    TCMU_RING_FLAGS), 0);
	assert_int_equal(tcmu_sub_init(&sub, rg, SIZE, BLK, 16, 4096), 0);
	assert_int_equal(tcmu_hdl_init(&hdl, rg, SIZE), 0);
	return 0;
}

static int teardown(void **state)
{
	tcmu_sub_free(&sub);
	munmap(map, SIZE + 2 * PG);
	return 0;
}

static uint32_t rd32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static void wr32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void wr64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

struct seen {
	int n;
	uint16_t id[32];
	uint8_t status[32];
	uint8_t sense0[32];
	uint8_t data[4096];
	uint32_t data_len;
};

static void on_done(void *arg, const struct tcmu_done *d)
{
	struct seen *s = arg;

	s->id[s->n] = d->cmd_id;
	s->status[s->n] = d->status;
	s->sense0[s->n++] = d->sense[0];
	if (s->data_len)
		assert_int_equal(tcmu_sub_copy_out(&sub, d->cmd_id, s->data,
						   s->data_len), 0);
}

/* Queue, publish, take on the handler side, complete GOOD, reap. */
static void one_round(uint32_t cdb_len)
{
	uint8_t cdb[64] = { 0x00 };
	struct seen s = { 0 };
	int id;

	id = tcmu_sub_queue(&sub, cdb, cdb_len, 0, NULL);
	assert_true(id > 0);
	tcmu_sub_commit(&sub);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(hc.cmd_id, id);
	assert_int_equal(tcmu_hdl_complete(&hdl, id, 0, NULL, 0, -1), 0);
	assert_int_equal(tcmu_sub_reap(&sub, on_done, &s), 1);
	assert_int_equal(s.id[0], id);
}

static void test_layout_bytes(void **state)
{
	/* The UAPI layout the kernel and tcmu-runner agree on. */
	assert_int_equal(sizeof(struct tcmu_mailbox), 128);
	assert_int_equal(offsetof(struct tcmu_mailbox, cmd_head), 12);
	assert_int_equal(offsetof(struct tcmu_mailbox, cmd_tail), 64);
	assert_int_equal(sizeof(struct tcmu_cmd_entry_hdr), 8);
	assert_int_equal(sizeof(struct tcmu_cmd_entry), 112);
	assert_int_equal(offsetof(struct tcmu_cmd_entry, req.iov_cnt), 8);
	assert_int_equal(offsetof(struct tcmu_cmd_entry, req.cdb_off), 24);
	assert_int_equal(offsetof(struct tcmu_cmd_entry, req.iov), 48);
	assert_int_equal(offsetof(struct tcmu_cmd_entry, rsp.read_len), 12);
	assert_int_equal(offsetof(struct tcmu_cmd_entry, rsp.sense_buffer), 16);
	assert_int_equal(TCMU_DEF_CMDR_SIZE, (8u << 20) - 128);
	assert_int_equal(tcmu_region_size(TCMU_DEF_CMDR_SIZE,
					  TCMU_DEF_DATA_SIZE),
			 (8ull << 20) + (1ull << 30));

	/* The mailbox, little endian, at the kernel's offsets. */
	assert_int_equal(rg[0] | rg[1] << 8, 2);
	assert_int_equal(rg[2] | rg[3] << 8, TCMU_RING_FLAGS);
	assert_true((rg[2] | rg[3] << 8) & TCMU_MAILBOX_FLAG_CAP_OOOC);
	assert_int_equal(rd32(rg + 4), 128);
	assert_int_equal(rd32(rg + 8), CMDR);
	assert_int_equal(rd32(rg + 12), 0);
	assert_int_equal(rd32(rg + 64), 0);

	/* Sizes that are not multiples of 8 or do not fit are refused. */
	assert_int_equal(tcmu_region_layout(rg, SIZE, CMDR + 4, DATA, 0),
			 -EINVAL);
	assert_int_equal(tcmu_region_layout(rg, SIZE, CMDR, DATA + 1, 0),
			 -EINVAL);
}

static void test_entry_bytes_and_round_trip(void **state)
{
	uint8_t wbuf[1000], rbuf[700];
	const uint8_t *ring = rg + 128, *ent;
	uint8_t sense[18] = { 0x70, 0, 0x05 };
	struct seen s = { 0 };
	int id, i;

	for (i = 0; i < (int)sizeof(wbuf); i++)
		wbuf[i] = i * 7;
	id = tcmu_sub_queue(&sub, cdb16, 16, sizeof(wbuf), wbuf);
	assert_int_equal(id, 1);
	/* Nothing visible before the commit. */
	assert_int_equal(rd32(rg + 12), 0);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 0);
	tcmu_sub_commit(&sub);

	/* Two blocks side by side: one iovec; entry 48 + 16, min 112, + CDB. */
	ent = ring;
	assert_int_equal(rd32(ent) & 7, TCMU_OP_CMD);
	assert_int_equal(rd32(ent) & ~7u, 128);
	assert_int_equal(ent[4] | ent[5] << 8, 1);
	assert_int_equal(rd32(ent + 8), 1);
	assert_int_equal(rd32(ent + 12), 0);
	assert_int_equal(rd64(ent + 24), 128 + 112);
	assert_memory_equal(rg + rd64(ent + 24), cdb16, 16);
	assert_int_equal(rd64(ent + 48), 128 + CMDR);	/* first data block */
	assert_int_equal(rd64(ent + 56), sizeof(wbuf));
	assert_memory_equal(rg + 128 + CMDR, wbuf, sizeof(wbuf));
	assert_int_equal(rd32(rg + 12), 128);

	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(hc.cmd_id, 1);
	assert_ptr_equal(hc.cdb, rg + 128 + 112);
	assert_int_equal(hc.cdb_max, 16);
	assert_int_equal(hc.iov_cnt, 1);
	assert_ptr_equal(hc.iov[0].iov_base, rg + 128 + CMDR);
	assert_int_equal(hc.iov[0].iov_len, sizeof(wbuf));
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 0);
	assert_int_equal(tcmu_hdl_complete(&hdl, 1, 2, sense, sizeof(sense),
					   -1), 0);
	assert_int_equal(rd32(rg + 64), 128);
	assert_int_equal(ent[8], 2);		/* rsp.scsi_status */
	assert_int_equal(ent[16], 0x70);	/* rsp.sense_buffer */

	assert_int_equal(tcmu_sub_reap(&sub, on_done, &s), 1);
	assert_int_equal(s.id[0], 1);
	assert_int_equal(s.status[0], 2);
	assert_int_equal(s.sense0[0], 0x70);
	assert_int_equal(sub.st->free_blks, DATA / BLK);

	/* A read: the handler fills the iovec, the submitter copies out. */
	id = tcmu_sub_queue(&sub, cdb16, 16, sizeof(rbuf), NULL);
	assert_true(id > 0);
	tcmu_sub_commit(&sub);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(hc.iov_cnt, 1);
	memset(hc.iov[0].iov_base, 0x5a, hc.iov[0].iov_len);
	assert_int_equal(tcmu_hdl_complete(&hdl, id, 0, NULL, 0, 600), 0);
	memset(&s, 0, sizeof(s));
	s.data_len = sizeof(rbuf);
	assert_int_equal(tcmu_sub_reap(&sub, on_done, &s), 1);
	memset(rbuf, 0x5a, sizeof(rbuf));
	assert_memory_equal(s.data, rbuf, sizeof(rbuf));
	assert_int_equal(tcmu_sub_reap(&sub, on_done, &s), 0);
}

static void test_wrap_with_pad(void **state)
{
	const uint8_t *ring = rg + 128;
	int i, id;

	/* 144-byte entries: 27 of them leave 80 bytes before the end. */
	assert_int_equal(tcmu_cmd_entry_size(0, 32), 144);
	for (i = 0; i < 27; i++)
		one_round(32);
	assert_int_equal(sub.st->head, 27 * 144);
	id = tcmu_sub_queue(&sub, cdb32, 32, 0, NULL);
	assert_true(id > 0);
	tcmu_sub_commit(&sub);
	assert_int_equal(rd32(ring + 27 * 144), TCMU_OP_PAD | 80);
	assert_int_equal(rd32(ring) & 7, TCMU_OP_CMD);
	assert_int_equal(rd32(ring) & ~7u, 144);
	assert_int_equal(rd32(rg + 12), 144);

	/* The handler skips the PAD and finds the command at 0. */
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(hc.cmd_id, id);
	assert_ptr_equal(hc.cdb, rg + 128 + 112);
	assert_memory_equal(hc.cdb, cdb32, 32);
	assert_int_equal(tcmu_hdl_complete(&hdl, id, 0, NULL, 0, -1), 0);
	assert_int_equal(rd32(rg + 64), 144);
	assert_int_equal(tcmu_sub_reap(&sub, NULL, NULL), 1);
	assert_int_equal(tcmu_sub_ring_free(&sub), CMDR - 1);
}

static void test_full_ring(void **state)
{
	int i;

	/* Enough command slots to fill the ring with 128-byte entries. */
	tcmu_sub_free(&sub);
	assert_int_equal(tcmu_sub_init(&sub, rg, SIZE, BLK, 64, 4096), 0);
	assert_int_equal(CMDR / 128, 31);
	for (i = 0; i < 30; i++)
		assert_true(tcmu_sub_queue(&sub, cdb16, 16, 0, NULL) > 0);
	/* The 31st would fill it to the last byte, which stays free. */
	assert_int_equal(tcmu_sub_ring_free(&sub), 127);
	assert_int_equal(tcmu_sub_queue(&sub, cdb16, 16, 0, NULL), -EBUSY);
	tcmu_sub_commit(&sub);
	/* So a full ring never reads as empty. */
	assert_int_equal(rd32(rg + 12), 30 * 128);
	for (i = 0; i < 30; i++)
		assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 0);

	assert_int_equal(tcmu_hdl_complete(&hdl, 1, 0, NULL, 0, -1), 0);
	assert_int_equal(tcmu_sub_reap(&sub, NULL, NULL), 1);
	/* Ends exactly at the ring's end: no PAD, the head wraps to 0. */
	assert_true(tcmu_sub_queue(&sub, cdb16, 16, 0, NULL) > 0);
	assert_int_equal(sub.st->head, 0);
	assert_int_equal(tcmu_sub_ring_free(&sub), 127);
	assert_int_equal(tcmu_sub_queue(&sub, cdb16, 16, 0, NULL), -EBUSY);
}

static void test_data_exhaustion(void **state)
{
	uint8_t buf[2048] = { 1 };
	uint32_t head, ring_free;
	int id[4], i, more;

	for (i = 0; i < 4; i++)
		assert_true((id[i] = tcmu_sub_queue(&sub, cdb16, 16,
						    sizeof(buf), buf)) > 0);
	assert_int_equal(sub.st->free_blks, 0);
	head = sub.st->head;
	ring_free = tcmu_sub_ring_free(&sub);
	assert_int_equal(tcmu_sub_queue(&sub, cdb16, 16, 512, buf), -EBUSY);
	/* The refusal left nothing behind. */
	assert_int_equal(sub.st->head, head);
	assert_int_equal(tcmu_sub_ring_free(&sub), ring_free);
	assert_int_equal(sub.st->nr_free, 16 - 4);
	tcmu_sub_commit(&sub);

	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(tcmu_hdl_complete(&hdl, hc.cmd_id, 0, NULL, 0, -1),
			 0);
	assert_int_equal(tcmu_sub_reap(&sub, NULL, NULL), 1);
	assert_int_equal(sub.st->free_blks, 4);
	more = tcmu_sub_queue(&sub, cdb16, 16, 2048, buf);
	assert_true(more > 0);
	/* Never bigger than a command may be. */
	assert_int_equal(tcmu_sub_queue(&sub, cdb16, 16, 4097, buf), -EINVAL);
}

static void test_out_of_order(void **state)
{
	uint8_t a[512], b[1536], c[1024], d[1024];
	uint8_t *b_data;
	uint32_t len_a, len_b, len_c;
	struct seen s = { 0 };
	int ia, ib, ic, id;

	memset(a, 0xa, sizeof(a));
	memset(b, 0xb, sizeof(b));
	memset(c, 0xc, sizeof(c));
	memset(d, 0xd, sizeof(d));
	ia = tcmu_sub_queue(&sub, cdb16, 16, sizeof(a), a);
	ib = tcmu_sub_queue(&sub, cdb16, 16, sizeof(b), b);
	ic = tcmu_sub_queue(&sub, cdb16, 16, sizeof(c), c);
	assert_true(ia > 0 && ib > 0 && ic > 0);
	tcmu_sub_commit(&sub);
	len_a = len_b = len_c = 128;
	assert_int_equal(sub.st->free_blks, 16 - 1 - 3 - 2);

	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(hc.cmd_id, ib);
	b_data = hc.iov[0].iov_base;
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(hc.cmd_id, ic);

	/* C finishes first: it goes in A's entry, A's ring space comes back. */
	assert_int_equal(tcmu_hdl_complete(&hdl, ic, 0, NULL, 0, -1), 0);
	assert_int_equal(rg[128 + 4] | rg[128 + 5] << 8, ic);
	assert_int_equal(tcmu_sub_reap(&sub, on_done, &s), 1);
	assert_int_equal(s.id[0], ic);
	assert_int_equal(sub.st->cleaned, len_a);
	assert_int_equal(sub.st->free_blks, 16 - 1 - 3);	/* C's two came back */

	/* C's id and blocks go to D; B's data is untouched. */
	id = tcmu_sub_queue(&sub, cdb16, 16, sizeof(d), d);
	assert_int_equal(id, ic);
	tcmu_sub_commit(&sub);
	assert_memory_equal(b_data, b, sizeof(b));

	assert_int_equal(tcmu_hdl_complete(&hdl, ia, 0, NULL, 0, -1), 0);
	assert_int_equal(tcmu_hdl_complete(&hdl, ib, 0, NULL, 0, -1), 0);
	assert_int_equal(tcmu_sub_reap(&sub, on_done, &s), 2);
	assert_int_equal(s.id[1], ia);
	assert_int_equal(s.id[2], ib);
	assert_int_equal(sub.st->cleaned, len_a + len_b + len_c);
	assert_int_equal(sub.st->free_blks, 16 - 2);

	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(hc.cmd_id, id);
	assert_memory_equal(hc.iov[0].iov_base, d, sizeof(d));
	assert_int_equal(tcmu_hdl_complete(&hdl, id, 0, NULL, 0, -1), 0);
	assert_int_equal(tcmu_sub_reap(&sub, on_done, &s), 1);
	assert_int_equal(sub.st->free_blks, 16);
	assert_int_equal(sub.st->nr_free, 16);
	assert_int_equal(tcmu_sub_ring_free(&sub), CMDR - 1);
}

/* A hostile submitter: one hand-made CMD entry at @pos, head after it. */
static uint8_t *forge(uint32_t pos, uint32_t len, uint32_t op,
		      uint32_t iov_cnt, uint64_t cdb_off)
{
	uint8_t *ent = rg + 128 + pos;

	memset(ent, 0, len);
	wr32(ent, len | op);
	ent[4] = 7;
	wr32(ent + 8, iov_cnt);
	wr64(ent + 24, cdb_off);
	return ent;
}

static void publish(uint32_t head)
{
	wr32(rg + 12, head);
}

static void expect_bad_cmd(void)
{
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), -EINVAL);
	assert_int_equal(hc.cmd_id, 7);
	assert_int_equal(hc.iov_cnt, 0);
	/* The host answers it with a CHECK CONDITION, the ring moves on. */
	assert_int_equal(tcmu_hdl_complete(&hdl, 7, 2, NULL, 0, -1), 0);
	assert_int_equal(rd32(rg + 64), hdl.next);
}

static void test_hostile_entries(void **state)
{
	uint64_t ent_off = 128, data = 128 + CMDR;
	uint8_t *ent;

	/* iovec past the end of the region. */
	ent = forge(0, 256, TCMU_OP_CMD, 1, ent_off + 112);
	wr64(ent + 48, SIZE - 10);
	wr64(ent + 56, 100);
	publish(256);
	expect_bad_cmd();

	/* iovec pointing into the ring, not the data area. */
	ent = forge(256, 256, TCMU_OP_CMD, 1, ent_off + 256 + 112);
	wr64(ent + 48, 128);
	wr64(ent + 56, 16);
	publish(512);
	expect_bad_cmd();

	/* A length that wraps the address space. */
	ent = forge(512, 256, TCMU_OP_CMD, 1, ent_off + 512 + 112);
	wr64(ent + 48, data);
	wr64(ent + 56, UINT64_MAX);
	publish(768);
	expect_bad_cmd();

	/* More iovecs than the entry holds, and than the caller's array. */
	forge(768, 128, TCMU_OP_CMD, 1000, ent_off + 768 + 112);
	publish(896);
	expect_bad_cmd();
	ent = forge(896, 256, TCMU_OP_CMD, 9, ent_off + 896 + 240);
	publish(1152);
	expect_bad_cmd();

	/* CDB outside the region, inside the response area, past the entry. */
	forge(1152, 128, TCMU_OP_CMD, 0, 1ull << 40);
	publish(1280);
	expect_bad_cmd();
	forge(1280, 128, TCMU_OP_CMD, 0, ent_off + 1280 + 16);
	publish(1408);
	expect_bad_cmd();
	forge(1408, 128, TCMU_OP_CMD, 0, ent_off + 1408 + 128);
	publish(1536);
	expect_bad_cmd();

	/* Bidirectional data is never offered. */
	ent = forge(1536, 128, TCMU_OP_CMD, 0, ent_off + 1536 + 112);
	wr32(ent + 12, 1);
	publish(1664);
	expect_bad_cmd();

	/* A good one still works after all that, with cdb_max clamped. */
	ent = forge(1664, 128, TCMU_OP_CMD, 1, ent_off + 1664 + 112);
	wr64(ent + 48, data + DATA - 16);
	wr64(ent + 56, 16);
	publish(1792);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(hc.cdb_max, 16);
	assert_ptr_equal(hc.iov[0].iov_base, rg + SIZE - 16);
	memset(hc.iov[0].iov_base, 1, 16);
	assert_int_equal(tcmu_hdl_complete(&hdl, 7, 0, NULL, 0, -1), 0);

	/* Unknown opcodes: flagged, skipped, retired without a completion. */
	forge(1792, 64, TCMU_OP_TMR, 0, 0);
	forge(1856, 64, 5, 0, 0);
	publish(1920);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 0);
	assert_int_equal(rg[128 + 1792 + 7], TCMU_UFLAG_UNKNOWN_OP);
	assert_int_equal(rg[128 + 1856 + 7], TCMU_UFLAG_UNKNOWN_OP);
	assert_int_equal(rd32(rg + 64), 1920);
	/* Nothing outstanding: a completion is refused. */
	assert_int_equal(tcmu_hdl_complete(&hdl, 7, 0, NULL, 0, -1), -EPROTO);
}

static void test_hostile_ring(void **state)
{
	struct tcmu_hdl h2;

	/* Head outside the ring or not aligned. */
	publish(CMDR);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), -EPROTO);
	publish(12);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), -EPROTO);

	/* Entry lengths: zero, past the head, across the ring's end. */
	forge(0, 128, TCMU_OP_CMD, 0, 128 + 112);
	wr32(rg + 128, 0 | TCMU_OP_CMD);
	publish(128);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), -EPROTO);
	wr32(rg + 128, 256 | TCMU_OP_CMD);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), -EPROTO);
	wr32(rg + 128, 0xfffffff8 | TCMU_OP_PAD);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), -EPROTO);
	assert_int_equal(hdl.next, 0);

	/* A CMD entry shorter than the response it must carry. */
	wr32(rg + 128, 64 | TCMU_OP_CMD);
	publish(64);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), -EPROTO);

	/* Mailbox: wrong version, ring outside the region. */
	rg[0] = 1;
	assert_int_equal(tcmu_hdl_init(&h2, rg, SIZE), -EPROTONOSUPPORT);
	rg[0] = 2;
	wr32(rg + 8, SIZE);
	assert_int_equal(tcmu_hdl_init(&h2, rg, SIZE), -EINVAL);
	wr32(rg + 8, CMDR);
	assert_int_equal(tcmu_hdl_init(&h2, rg, 100), -EINVAL);
}

/* A head moved back over a command handed out: not handed out again. */
static void test_head_moved_back(void **state)
{
	uint8_t cdb[16] = { 0x00 };
	int a, b;

	a = tcmu_sub_queue(&sub, cdb, 16, 0, NULL);
	b = tcmu_sub_queue(&sub, cdb, 16, 0, NULL);
	assert_true(a > 0 && b > 0);
	tcmu_sub_commit(&sub);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(hc.cmd_id, a);
	publish(hdl.tail);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), -EPROTO);
	publish(sub.st->head);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(hc.cmd_id, b);
}

static void test_hostile_handler(void **state)
{
	int a, b;

	a = tcmu_sub_queue(&sub, cdb16, 16, 0, NULL);
	b = tcmu_sub_queue(&sub, cdb16, 16, 0, NULL);
	tcmu_sub_commit(&sub);

	/* A tail in the middle of an entry, past the head, misaligned. */
	wr32(rg + 64, 64);
	assert_int_equal(tcmu_sub_reap(&sub, NULL, NULL), -EPROTO);
	wr32(rg + 64, 384);
	assert_int_equal(tcmu_sub_reap(&sub, NULL, NULL), -EPROTO);
	wr32(rg + 64, 4);
	assert_int_equal(tcmu_sub_reap(&sub, NULL, NULL), -EPROTO);
	wr32(rg + 64, CMDR);
	assert_int_equal(tcmu_sub_reap(&sub, NULL, NULL), -EPROTO);
	/* Over an entry queued but not yet published. */
	assert_true(tcmu_sub_queue(&sub, cdb16, 16, 0, NULL) > 0);
	wr32(rg + 64, 384);
	assert_int_equal(tcmu_sub_reap(&sub, NULL, NULL), -EPROTO);

	/* A cmd_id that is not in flight, or one completed twice. */
	rg[128 + 4] = 9;
	wr32(rg + 64, 128);
	assert_int_equal(tcmu_sub_reap(&sub, NULL, NULL), -EPROTO);
	rg[128 + 4] = b;
	rg[128 + 128 + 4] = b;
	wr32(rg + 64, 256);
	assert_int_equal(tcmu_sub_reap(&sub, NULL, NULL), -EPROTO);
	assert_int_equal(sub.st->nr_free, 16 - 2);
	(void)a;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_layout_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_entry_bytes_and_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrap_with_pad, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_data_exhaustion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_head_moved_back, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hostile_handler, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
