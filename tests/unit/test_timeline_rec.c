// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for timeline record files (timeline/timeline_rec.c): what
 * tl_next() hands out comes back from tl_read() in order, across the
 * writer's batches, and a file that is not whole gets a message naming it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "timeline_rec.h"

static const char *const stamps[] = { "queued", "sent", "handed" };

struct seen {
	uint64_t n;
	int in_order;
};

static void check(void *arg, const struct tl_rec *rec)
{
	struct seen *s = arg;

	if (rec->key != s->n || rec->t[0] != 1000 + s->n ||
	    rec->t[2] != 3000 + s->n || rec->t[3] || rec->op != TL_OP_READ)
		s->in_order = 0;
	s->n++;
}

/* Writes n records to a fresh file; its path in path. */
static void write_recs(char *path, size_t len, uint64_t n)
{
	char err[256] = "";
	struct tl_writer *w;
	uint64_t i;
	int fd;

	snprintf(path, len, "/tmp/torus-tl-test.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	w = tl_open(path, "unit", "nbd-cookie", stamps, 3, err, sizeof(err));
	if (!w)
		fail_msg("tl_open: %s", err);
	for (i = 0; i < n; i++) {
		struct tl_rec *r = tl_next(w);

		r->key = i;
		r->op = TL_OP_READ;
		r->t[0] = 1000 + i;
		r->t[1] = 2000 + i;
		r->t[2] = 3000 + i;
	}
	assert_int_equal(tl_count(w), n);
	assert_int_equal(tl_close(w, err, sizeof(err)), 0);
}

static void test_round_trip(void **state)
{
	static const uint64_t counts[] = { 0, 1, 511, 512, 513, 5000 };
	char path[64], err[256];
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		struct seen s = { 0, 1 };

		write_recs(path, sizeof(path), counts[i]);
		assert_int_equal(tl_read(path, check, &s, err, sizeof(err)),
				 counts[i]);
		assert_int_equal(s.n, counts[i]);
		assert_true(s.in_order);
		unlink(path);
	}
}

static void test_cut_short(void **state)
{
	char path[64], err[256] = "", want[160];
	struct seen s = { 0, 1 };
	int fd;

	(void)state;
	write_recs(path, sizeof(path), 10);
	assert_int_equal(truncate(path, 512 + 9 * 64 + 10), 0);
	assert_int_equal(tl_read(path, check, &s, err, sizeof(err)), -EPROTO);
	snprintf(want, sizeof(want),
		 "timeline: cannot read %s: it ends inside a record (was its writer stopped?)",
		 path);
	assert_string_equal(err, want);

	/* Not a record file at all. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello", 5), 5);
	close(fd);
	assert_int_equal(tl_read(path, check, &s, err, sizeof(err)), -EPROTO);
	snprintf(want, sizeof(want),
		 "timeline: cannot read %s: not a timeline record file of version 1",
		 path);
	assert_string_equal(err, want);
	unlink(path);

	assert_int_equal(tl_read(path, check, &s, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "timeline: cannot read %s: %s", path,
		 strerror(ENOENT));
	assert_string_equal(err, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_cut_short),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
