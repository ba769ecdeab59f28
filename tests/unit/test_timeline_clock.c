// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the timeline's clock (timeline/timeline_clock.c): each
 * stamp lies between two clock_gettime() reads around it, give or take
 * TL_CLOCK_SLACK_NS, and never before the previous stamp, in a busy loop
 * and across idle gaps longer than a pair's life; on the TSC where the
 * kernel's clock is on it, and on clock_gettime() alone; a pair read over
 * more than TL_CLOCK_PAIR_MAX_NS refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "timeline_clock.h"

struct worst {
	int64_t early, late;		/* ns outside the bracket */
	uint64_t backwards;
};

static void one(struct tl_clock *c, struct worst *w, uint64_t *prev)
{
	uint64_t before = now_ns(), t = tl_clock_now(c), after = now_ns();

	if ((int64_t)(before - t) > w->early)
		w->early = before - t;
	if ((int64_t)(t - after) > w->late)
		w->late = t - after;
	if (t < *prev)
		w->backwards++;
	*prev = t;
}

static void run(struct tl_clock *c)
{
	struct timespec gap = { .tv_nsec = 3000000 };
	struct worst w = { 0 };
	uint64_t prev = 0, end;
	int i;

	/* Busy for 0.3 s: renewed every millisecond, the rate refined. */
	end = now_ns() + 300000000ULL;
	while (now_ns() < end)
		one(c, &w, &prev);
	/* Idle gaps, each longer than a pair's life. */
	for (i = 0; i < 20; i++) {
		nanosleep(&gap, NULL);
		one(c, &w, &prev);
		one(c, &w, &prev);
	}
	print_message("early by up to %lld ns, late by up to %lld ns\n",
		      (long long)w.early, (long long)w.late);
	assert_true(w.early <= TL_CLOCK_SLACK_NS);
	assert_true(w.late <= TL_CLOCK_SLACK_NS);
	assert_int_equal(w.backwards, 0);
}

static void test_tsc(void **state)
{
	struct tl_clock c;

	(void)state;
	tl_clock_init(&c, true);
	if (!c.tsc)
		print_message("the kernel's clock is not on the TSC here: clock_gettime() only\n");
	run(&c);
}

/*
 * The pair check's bound: a pair read over more than TL_CLOCK_PAIR_MAX_NS
 * is refused, whatever the rate (the join's slack rests on it).
 */
static void test_pair_bound(void **state)
{
	static const uint64_t per_ms[] = { 1000000, 2100000, 3700000 };
	struct tl_clock c;
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(per_ms) / sizeof(per_ms[0]); i++) {
		uint64_t max = per_ms[i] / (1000000 / TL_CLOCK_PAIR_MAX_NS);

		memset(&c, 0, sizeof(c));
		c.renew = per_ms[i];	/* ticks per millisecond */
		assert_true(tl_clock_pair_ok(&c, 0));
		assert_true(tl_clock_pair_ok(&c, max));
		assert_false(tl_clock_pair_ok(&c, max + 1));
		assert_false(tl_clock_pair_ok(&c, 2 * max));
		assert_false(tl_clock_pair_ok(&c, c.renew / 2));
		assert_false(tl_clock_pair_ok(&c, c.renew));
	}
	/* on this machine's TSC, when the kernel's clock is on it */
	tl_clock_init(&c, true);
	if (c.tsc) {
		assert_true(tl_clock_pair_ok(&c, c.renew / 1000));
		assert_false(tl_clock_pair_ok(&c, c.renew / 500));
	}
}

static void test_gettime(void **state)
{
	struct tl_clock c;

	(void)state;
	tl_clock_init(&c, false);
	assert_false(c.tsc);
	run(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tsc),
		cmocka_unit_test(test_gettime),
		cmocka_unit_test(test_pair_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
