// SPDX-License-Identifier: GPL-2.0-only
/*
 * Bandwidth and latency arithmetic of shims/nbd/shape.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "shape.h"

#define MS	1000000ULL

/* 1 GbE: 125 MB/s, so 64 KiB take 524.288 us */
static void test_reserve_idle_link(void **state)
{
	uint64_t link = 0;

	assert_int_equal(shape_reserve(&link, 10 * MS, 65536, 125000000),
			 10 * MS + 524288);
	assert_int_equal(link, 10 * MS + 524288);
}

/* a busy link queues transfers behind each other */
static void test_reserve_busy_link(void **state)
{
	uint64_t link = 0, t;

	t = shape_reserve(&link, 0, 1000000, 1000000000);	/* 1 ms */
	assert_int_equal(t, MS);
	t = shape_reserve(&link, 0, 1000000, 1000000000);
	assert_int_equal(t, 2 * MS);
	/* after an idle gap the link starts from now */
	t = shape_reserve(&link, 5 * MS, 1000000, 1000000000);
	assert_int_equal(t, 6 * MS);
}

static void test_due_latency_only(void **state)
{
	struct shaper s;

	shaper_init(&s, 250, 0);
	assert_true(shaper_active(&s));
	assert_int_equal(shaper_due(&s, MS, 4096), MS + 250000);
	shaper_destroy(&s);
	shaper_init(&s, 0, 0);
	assert_false(shaper_active(&s));
	assert_int_equal(shaper_due(&s, MS, 4096), MS);
	shaper_destroy(&s);
}

/* the later of latency and bandwidth wins */
static void test_due_both(void **state)
{
	struct shaper s;

	shaper_init(&s, 100, 1000000);		/* 100 us, 1 MB/s */
	assert_int_equal(shaper_due(&s, 0, 10), 100000);	/* 10 us of data */
	assert_int_equal(shaper_due(&s, 0, 1000), 1010000);	/* after the 10 */
	assert_int_equal(shaper_due(&s, 0, 0), 100000);	/* no data */
	shaper_destroy(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserve_idle_link),
		cmocka_unit_test(test_reserve_busy_link),
		cmocka_unit_test(test_due_latency_only),
		cmocka_unit_test(test_due_both),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
