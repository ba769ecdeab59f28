// SPDX-License-Identifier: GPL-2.0-only
/*
 * Which data-area blocks the submitter hands out (proto/tcmu/tcmu_ring_sub.c).
 * The kernel always takes the lowest free block, so a data area of any
 * size only ever has the in-flight data's worth of it touched, and only
 * that costs memory. This test plays both sides: it queues commands of
 * mixed sizes, completes them in a shuffled order as a handler would, and
 * reads the blocks each command got from the iovecs the handler sees.
 * The area (1000 blocks, not a multiple of 64) ends at a PROT_NONE page.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "tcmu_ring_hdl.h"
#include "tcmu_ring_sub.h"

#define CMDR		(64u << 10)
#define BLK		512u
#define NBLK		1000u
#define DATA		(NBLK * BLK)
#define SIZE		(TCMU_MB_SIZE + CMDR + DATA)
#define PG		4096u
#define MAPLEN		((SIZE + PG - 1) / PG * PG)
#define MAX_CMDS	64u
#define MAX_BLKS	16u

static uint8_t *base, *map;		/* the mapping, the region in it */
static struct tcmu_sub sub;
static struct tcmu_hdl hdl;
static const uint8_t cdb[16] = { 0x8a };

/* What the handler saw of one command: its lowest and highest block. */
struct cmd_blocks {
	uint16_t id;
	uint32_t lo, hi, nblks;
};

static int setup(void **state)
{
	(void)state;
	base = mmap(NULL, MAPLEN + PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	assert_true(base != MAP_FAILED);
	assert_int_equal(mprotect(base, MAPLEN, PROT_READ | PROT_WRITE), 0);
	/* The region's last byte is the last before the guard page. */
	map = base + MAPLEN - SIZE;
	assert_int_equal(tcmu_region_layout(map, SIZE, CMDR, DATA,
					    TCMU_RING_FLAGS), 0);
	assert_int_equal(tcmu_sub_init(&sub, map, SIZE, BLK, MAX_CMDS,
				       MAX_BLKS * BLK), 0);
	assert_int_equal(tcmu_hdl_init(&hdl, map, SIZE), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tcmu_sub_free(&sub);
	munmap(base, MAPLEN + PG);
	return 0;
}

/* Queue @nblks blocks' worth, publish, and fetch it as the handler. */
static int queue(uint32_t nblks, struct cmd_blocks *out)
{
	struct iovec iov[MAX_BLKS];
	struct tcmu_hdl_cmd hc = { .iov = iov, .iov_max = MAX_BLKS };
	uint32_t i, total = 0;
	int id;

	id = tcmu_sub_queue(&sub, cdb, sizeof(cdb), nblks * BLK, NULL);
	if (id < 0)
		return id;
	tcmu_sub_commit(&sub);
	assert_int_equal(tcmu_hdl_next(&hdl, &hc), 1);
	assert_int_equal(hc.cmd_id, id);
	out->id = id;
	out->lo = UINT32_MAX;
	out->hi = 0;
	for (i = 0; i < hc.iov_cnt; i++) {
		uint64_t off = (uint64_t)((uint8_t *)hc.iov[i].iov_base - map) -
			       hdl.data_off;
		uint32_t first = off / BLK;
		uint32_t last = (off + hc.iov[i].iov_len - 1) / BLK;

		assert_int_equal(off % BLK, 0);
		if (first < out->lo)
			out->lo = first;
		if (last > out->hi)
			out->hi = last;
		total += hc.iov[i].iov_len;
	}
	assert_int_equal(total, nblks * BLK);
	out->nblks = nblks;
	return id;
}

/* The handler completes @id (out of order is fine); the submitter reaps. */
static void complete(uint16_t id)
{
	assert_int_equal(tcmu_hdl_complete(&hdl, id, 0, NULL, 0, -1), 0);
	assert_int_equal(tcmu_sub_reap(&sub, NULL, NULL), 1);
}

static uint32_t rnd(uint32_t *state, uint32_t n)
{
	*state = *state * 1103515245u + 12345u;
	return (*state >> 16) % n;
}

/*
 * Phases of different depths and sizes, completions in a random order:
 * the highest block ever handed out stays below the most blocks that were
 * ever in flight at once (a block is only taken when all below it are in
 * use), wherever the earlier commands left their holes.
 */
static void test_mixed_stays_low(void **state)
{
	static const struct { uint32_t depth, max_blks, steps; } phase[] = {
		{ 4, 2, 3000 }, { 16, 16, 3000 }, { 2, 1, 3000 },
		{ 32, 8, 3000 }, { 1, 16, 1000 },
	};
	struct cmd_blocks out[MAX_CMDS];
	uint32_t seed = 22, hi_ever = 0, peak = 0, in_use = 0, p, i, n = 0;

	(void)state;
	for (p = 0; p < sizeof(phase) / sizeof(phase[0]); p++) {
		for (i = 0; i < phase[p].steps; i++) {
			uint32_t k;

			while (n < phase[p].depth) {
				uint32_t nb = 1 + rnd(&seed, phase[p].max_blks);

				assert_true(queue(nb, &out[n]) > 0);
				in_use += nb;
				if (in_use > peak)
					peak = in_use;
				if (out[n].hi > hi_ever)
					hi_ever = out[n].hi;
				/* All below the command's highest are in use. */
				if (out[n].hi >= in_use)
					fail_msg("phase %u: block %u handed out with %u blocks in use: the data area is touched beyond what is in flight",
						 p, out[n].hi, in_use);
				n++;
			}
			k = rnd(&seed, n);
			complete(out[k].id);
			in_use -= out[k].nblks;
			out[k] = out[--n];
		}
	}
	while (n) {
		complete(out[--n].id);
	}
	assert_int_equal(sub.st->free_blks, NBLK);
	if (hi_ever >= peak)
		fail_msg("highest block %u, at most %u blocks in flight",
			 hi_ever, peak);
	printf("highest block %u of %u, at most %u blocks in flight\n",
	       hi_ever, NBLK, peak);
}

/* The holes completions leave are filled lowest first. */
static void test_lowest_hole_first(void **state)
{
	struct cmd_blocks a, b, c, d, e;

	(void)state;
	assert_true(queue(4, &a) > 0);
	assert_true(queue(4, &b) > 0);
	assert_true(queue(4, &c) > 0);
	assert_int_equal(a.lo, 0);
	assert_int_equal(b.lo, 4);
	assert_int_equal(c.hi, 11);
	complete(b.id);
	assert_true(queue(2, &d) > 0);
	assert_int_equal(d.lo, 4);
	assert_int_equal(d.hi, 5);
	/* Two blocks of b's hole, then the first free past c. */
	assert_true(queue(3, &e) > 0);
	assert_int_equal(e.lo, 6);
	assert_int_equal(e.hi, 12);
	complete(a.id);
	complete(c.id);
	complete(d.id);
	complete(e.id);
	assert_true(queue(16, &a) > 0);
	assert_int_equal(a.lo, 0);
	assert_int_equal(a.hi, 15);
	complete(a.id);
}

/*
 * The whole area, up to its last block (the word past 960 is partial),
 * and no further: then -EBUSY until a block comes back, and the one that
 * came back is the one handed out.
 */
static void test_whole_area(void **state)
{
	struct cmd_blocks out[MAX_CMDS], x;
	uint32_t n = 0, used = 0;

	(void)state;
	while (used + MAX_BLKS <= NBLK && n < MAX_CMDS - 1) {
		assert_true(queue(MAX_BLKS, &out[n]) > 0);
		used += MAX_BLKS;
		n++;
	}
	assert_true(queue(NBLK - used, &out[n]) > 0);
	assert_int_equal(out[n].hi, NBLK - 1);
	n++;
	assert_int_equal(sub.st->free_blks, 0);
	assert_int_equal(tcmu_sub_queue(&sub, cdb, sizeof(cdb), BLK, NULL),
			 -EBUSY);
	complete(out[1].id);
	assert_true(queue(1, &x) > 0);
	assert_int_equal(x.lo, MAX_BLKS);
	complete(x.id);
	while (n) {
		if (--n != 1)
			complete(out[n].id);
	}
	assert_int_equal(sub.st->free_blks, NBLK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mixed_stays_low, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lowest_hole_first, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_whole_area, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
