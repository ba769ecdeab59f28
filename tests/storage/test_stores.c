// SPDX-License-Identifier: GPL-2.0-only
/*
 * Every store of the registry that opens with nothing else running (its
 * bare name parses: memory, null, and any new one like them), through the
 * registry as the shims open it: its size, reads, writes that read back
 * (zeroes for a store that drops them; -EROFS, the data kept, for a
 * read-only one), zeroes, trims, flush and close. A new store is tested
 * here without a line of its own; the stores that need an argument or a
 * server have their own tests.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "store.h"

#define SIZE	(1u << 20)
#define LEN	8192
#define OFF	(3 * 4096)

static void check_one(const struct store_type *t)
{
	struct store_params p = { .size = SIZE, .sector_size = 512,
				  .block_size = 4096, .copy = -1 };
	static uint8_t before[LEN], buf[LEN], got[LEN], zero[LEN];
	struct store_spec spec = { 0 };
	char err[512];
	struct store *st;
	int i, ret;

	assert_int_equal(store_parse(&spec, t->name, err, sizeof(err)), 0);
	st = store_open(&spec, &p, err, sizeof(err));
	if (!st)
		fail_msg("store %s: %s", t->name, err);
	if (!(t->flags & STORE_OWN_SIZE))
		assert_int_equal(st->size, SIZE);
	assert_true(st->size >= OFF + LEN);

	assert_int_equal(store_pread(st, before, LEN, OFF), 0);
	for (i = 0; i < LEN; i++)
		buf[i] = i * 13 + 1;
	ret = store_pwrite(st, buf, LEN, OFF);
	assert_int_equal(store_pread(st, got, LEN, OFF), 0);
	if (st->read_only) {
		assert_int_equal(ret, -EROFS);
		assert_memory_equal(got, before, LEN);
		assert_int_equal(store_zero(st, LEN, OFF), -EROFS);
		assert_int_equal(store_trim(st, LEN, OFF), -EROFS);
	} else {
		assert_int_equal(ret, 0);
		assert_memory_equal(got, t->flags & STORE_NO_DATA ? zero : buf,
				    LEN);
		assert_int_equal(store_zero(st, 4096, OFF), 0);
		assert_int_equal(store_pread(st, got, LEN, OFF), 0);
		assert_memory_equal(got, zero, 4096);
		assert_int_equal(store_trim(st, 4096, OFF + 4096), 0);
		assert_int_equal(store_pread(st, got, LEN, OFF), 0);
		if (t->flags & STORE_TRIM_ZEROES)
			assert_memory_equal(got + 4096, zero, 4096);
	}
	assert_int_equal(store_flush(st), 0);
	store_close(st);
	store_spec_free(&spec);
}

static void test_stores(void **state)
{
	struct store_spec spec = { 0 };
	char err[512];
	int i, n = 0;

	for (i = 0; store_types[i]; i++) {
		if (store_parse(&spec, store_types[i]->name, err, sizeof(err))) {
			print_message("store %s: needs an argument (%s): its own tests\n",
				      store_types[i]->name, err);
			continue;
		}
		check_one(store_types[i]);
		print_message("store %s: ok\n", store_types[i]->name);
		n++;
	}
	store_spec_free(&spec);
	assert_true(n >= 2);		/* memory and null at least */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stores),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
