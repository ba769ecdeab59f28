// SPDX-License-Identifier: GPL-2.0-only
/*
 * Block arithmetic of shims/nbd/blockmath.h: the read-modify-write split of
 * torus's 512 KiB blocks and 0-Disk's 4 KiB blocks, and torus's TRIM that
 * clears only whole blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "blockmath.h"

#define BS	(512u * 1024)

static void test_span_inside_one_block(void **state)
{
	struct blk_span s = blk_span_at(100, 612, BS);

	assert_int_equal(s.block, 0);
	assert_int_equal(s.boff, 100);
	assert_int_equal(s.blen, 512);
	assert_false(blk_span_whole(&s, BS));
}

static void test_span_whole_block(void **state)
{
	struct blk_span s = blk_span_at(BS, 3 * BS, BS);

	assert_int_equal(s.block, 1);
	assert_int_equal(s.boff, 0);
	assert_int_equal(s.blen, BS);
	assert_true(blk_span_whole(&s, BS));
}

/* 4 KiB straddling a block boundary: two partial spans, two RMWs */
static void test_span_straddle(void **state)
{
	uint64_t off = BS - 1024, end = off + 4096;
	struct blk_span s;
	int n = 0;

	s = blk_span_at(off, end, BS);
	assert_int_equal(s.block, 0);
	assert_int_equal(s.boff, BS - 1024);
	assert_int_equal(s.blen, 1024);
	off += s.blen;
	n++;
	s = blk_span_at(off, end, BS);
	assert_int_equal(s.block, 1);
	assert_int_equal(s.boff, 0);
	assert_int_equal(s.blen, 3072);
	off += s.blen;
	n++;
	assert_int_equal(off, end);
	assert_int_equal(n, 2);
}

/* iterating covers the range exactly, whatever the alignment */
static void test_span_iteration_covers(void **state)
{
	static const uint64_t offs[] = { 0, 1, 4095, 4096, BS - 1, 3 * BS + 7 };
	static const uint64_t lens[] = { 1, 512, 4096, BS, BS + 1, 5 * BS - 3 };
	unsigned int i, j;

	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		for (j = 0; j < sizeof(lens) / sizeof(lens[0]); j++) {
			uint64_t off = offs[i], end = off + lens[j], sum = 0;

			while (off < end) {
				struct blk_span s = blk_span_at(off, end, BS);

				assert_true(s.blen > 0);
				assert_true(s.boff + s.blen <= BS);
				assert_int_equal(s.block * BS + s.boff, off);
				sum += s.blen;
				off += s.blen;
			}
			assert_int_equal(sum, lens[j]);
		}
	}
}

static void test_whole_range(void **state)
{
	uint64_t first, end;

	/* 4 KiB trim inside a block: nothing cleared */
	blk_whole_range(4096, 4096, BS, &first, &end);
	assert_int_equal(first, end);
	/* [4 KiB, 1 MiB): only block 1 is whole */
	blk_whole_range(4096, (1 << 20) - 4096, BS, &first, &end);
	assert_int_equal(first, 1);
	assert_int_equal(end, 2);
	/* exact blocks */
	blk_whole_range(BS, 2 * BS, BS, &first, &end);
	assert_int_equal(first, 1);
	assert_int_equal(end, 3);
	/* a range inside one block but over a boundary */
	blk_whole_range(BS - 10, 20, BS, &first, &end);
	assert_int_equal(first, end);
	blk_whole_range(0, 0, BS, &first, &end);
	assert_int_equal(first, end);
}

/* 0-Disk: 4 KiB volume blocks */
static void test_zeroos_blocks(void **state)
{
	struct blk_span s = blk_span_at(4000, 5000, 4096);

	assert_int_equal(s.block, 0);
	assert_int_equal(s.boff, 4000);
	assert_int_equal(s.blen, 96);
	s = blk_span_at(4096, 5000, 4096);
	assert_int_equal(s.block, 1);
	assert_int_equal(s.blen, 904);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_span_inside_one_block),
		cmocka_unit_test(test_span_whole_block),
		cmocka_unit_test(test_span_straddle),
		cmocka_unit_test(test_span_iteration_covers),
		cmocka_unit_test(test_whole_range),
		cmocka_unit_test(test_zeroos_blocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
