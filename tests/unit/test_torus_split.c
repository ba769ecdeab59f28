// SPDX-License-Identifier: GPL-2.0-only
/*
 * common/torus_split.h: a request cut into pieces of at most a maximum,
 * finished by its last piece back; a flush as one piece of none; a stop
 * part way; and the waiting FIFO's order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "torus_split.h"

static void test_pieces(void **state)
{
	struct torus_split s;
	uint64_t l;

	(void)state;
	split_init(&s, 10);
	assert_false(split_all_sent(&s));
	l = split_next(&s, 4);
	assert_int_equal(l, 4);
	split_queued(&s, l);
	split_queued(&s, split_next(&s, 4));
	assert_int_equal(split_next(&s, 4), 2);
	split_queued(&s, 2);
	assert_true(split_all_sent(&s));
	assert_int_equal(s.pieces, 3);
	assert_false(split_back(&s, 0));
	/* The first error is kept. */
	assert_false(split_back(&s, 5));
	assert_true(split_back(&s, 7));
	assert_int_equal(s.error, 5);
}

static void test_flush(void **state)
{
	struct torus_split s;

	(void)state;
	split_init(&s, 0);
	assert_false(split_all_sent(&s));
	assert_int_equal(split_next(&s, 4), 0);
	split_queued(&s, 0);
	assert_true(split_all_sent(&s));
	assert_true(split_back(&s, 0));
	assert_int_equal(s.error, 0);
}

static void test_stop(void **state)
{
	struct torus_split s;

	(void)state;
	/* Part way, a piece still out: it finishes with that piece. */
	split_init(&s, 10);
	split_queued(&s, 4);
	assert_false(split_stop(&s, 9));
	assert_true(split_all_sent(&s));
	assert_true(split_back(&s, 0));
	assert_int_equal(s.error, 9);
	/* Before any piece: it finishes at once. */
	split_init(&s, 10);
	assert_true(split_stop(&s, 3));
	assert_true(split_all_sent(&s));
}

static void test_fifo(void **state)
{
	struct torus_split a, b, c;
	struct torus_fifo f;

	(void)state;
	fifo_init(&f);
	assert_null(fifo_pop(&f));
	fifo_push(&f, &a);
	fifo_push(&f, &b);
	assert_ptr_equal(fifo_pop(&f), &a);
	fifo_push(&f, &c);
	assert_ptr_equal(fifo_pop(&f), &b);
	assert_ptr_equal(fifo_pop(&f), &c);
	assert_null(fifo_pop(&f));
	/* Emptied, it takes new ones at its head again. */
	fifo_push(&f, &a);
	assert_ptr_equal(f.head, &a);
	assert_ptr_equal(fifo_pop(&f), &a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_flush),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_fifo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
