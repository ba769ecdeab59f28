// SPDX-License-Identifier: GPL-2.0-only
/*
 * A read-only store through the registry, as the shims open it:
 * file:PATH,ro says read_only, reads the file, refuses writes, zeroes and
 * trims with -EROFS without touching it, and neither creates a missing
 * file nor extends a short one.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store.h"

#define SIZE	65536

static void test_file_ro(void **state)
{
	struct store_params p = { .copy = -1 };
	struct store_spec spec = { 0 };
	char path[64], arg[96], err[512];
	static uint8_t want[SIZE], got[SIZE];
	struct store *st;
	FILE *f;
	int fd, i;

	for (i = 0; i < SIZE; i++)
		want[i] = i * 7 + 3;
	snprintf(path, sizeof(path), "/tmp/test-file-ro.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, want, SIZE), SIZE);
	close(fd);

	snprintf(arg, sizeof(arg), "file:%s,ro", path);
	assert_int_equal(store_parse(&spec, arg, err, sizeof(err)), 0);
	st = store_open(&spec, &p, err, sizeof(err));
	assert_non_null(st);
	assert_true(st->read_only);
	assert_int_equal(st->size, SIZE);
	assert_int_equal(store_pread(st, got, SIZE, 0), 0);
	assert_memory_equal(got, want, SIZE);
	memset(got, 0, SIZE);
	assert_int_equal(store_pwrite(st, got, 4096, 0), -EROFS);
	assert_int_equal(store_zero(st, 4096, 0), -EROFS);
	assert_int_equal(store_trim(st, 4096, 0), -EROFS);
	assert_int_equal(store_flush(st), 0);
	store_close(st);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(got, 1, SIZE, f), SIZE);
	fclose(f);
	assert_memory_equal(got, want, SIZE);

	/* a short file is not extended to --size */
	p.size = 2 * SIZE;
	assert_null(store_open(&spec, &p, err, sizeof(err)));
	assert_non_null(strstr(err, "does not extend it"));
	unlink(path);

	/* nor a missing file created, with or without --size */
	p.size = 0;
	assert_null(store_open(&spec, &p, err, sizeof(err)));
	assert_non_null(strstr(err, "does not exist, and \",ro\" does not make it"));
	assert_int_equal(access(path, F_OK), -1);
	p.size = SIZE;
	assert_null(store_open(&spec, &p, err, sizeof(err)));
	assert_non_null(strstr(err, "does not exist, and \",ro\" does not make it"));
	assert_int_equal(access(path, F_OK), -1);
	store_spec_free(&spec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_ro),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
