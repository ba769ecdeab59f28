// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for timeline record files (timeline/timeline_rec.c): what
 * tl_next() hands out comes back from tl_read() in order, across the
 * writer's batches, its stamps as they were (not taken, before the first,
 * seconds apart); a version 1 file is still read; and a file that is not
 * whole gets a message naming it.
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
	assert_int_equal(truncate(path, 512 + 9 * sizeof(struct tl_disk) + 10),
			 0);
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
		 "timeline: cannot read %s: not a timeline record file of version 1 or 2",
		 path);
	assert_string_equal(err, want);
	unlink(path);

	assert_int_equal(tl_read(path, check, &s, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "timeline: cannot read %s: %s", path,
		 strerror(ENOENT));
	assert_string_equal(err, want);
}

/* Stamps the 48-byte record keeps as they were. */
static const uint64_t kept[][TL_STAMPS] = {
	{ 5000000000ULL, 5000000100ULL, 0, 5000000300ULL, 0 },
	{ 5000000000ULL, 4999999400ULL, 5000000000ULL, 5000000001ULL, 7 },
	{ 7000000000ULL, 7000000000ULL + 2147483647ULL,
	  7000000000ULL + 3000000000ULL, 7000000000ULL - 2147483647ULL,
	  7000000000ULL + 600 * 1000000000ULL },
	{ 0, 0, 0, 0, 0 },
};

struct kept_seen {
	unsigned int n;
	int same;
};

static void check_kept(void *arg, const struct tl_rec *rec)
{
	struct kept_seen *s = arg;
	unsigned int i;

	for (i = 0; i < TL_STAMPS; i++) {
		uint64_t want = kept[s->n][i];
		int64_t off = (int64_t)(rec->t[i] - want);

		/* 7 is no CLOCK_MONOTONIC stamp: beside t0 it is far before */
		if (s->n == 1 && i == 4)
			continue;
		/* beyond 2.1 s after t[0]: up to 1023 ns early */
		if (want > kept[s->n][0] + 2147483647ULL ?
		    off > 0 || off <= -1024 : off != 0)
			s->same = 0;
	}
	s->n++;
}

static void test_stamps_kept(void **state)
{
	struct kept_seen s = { 0, 1 };
	char path[64], err[256] = "";
	struct tl_writer *w;
	unsigned int i;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/torus-tl-test.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	w = tl_open(path, "unit", "nbd-cookie", stamps, 3, err, sizeof(err));
	assert_non_null(w);
	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		memcpy(tl_next(w)->t, kept[i], sizeof(kept[i]));
	assert_int_equal(tl_close(w, err, sizeof(err)), 0);
	assert_int_equal(tl_read(path, check_kept, &s, err, sizeof(err)),
			 sizeof(kept) / sizeof(kept[0]));
	assert_true(s.same);
	unlink(path);
}

/* A version 1 file (64-byte records) as 0842c28's writer left it. */
static void test_version_1(void **state)
{
	struct tl_header h = { .version = 1, .rec_size = 64, .nr_stamps = 3 };
	struct tl_rec r[3];
	struct seen s = { 0, 1 };
	char path[64], err[256] = "";
	unsigned int i;
	int fd;

	(void)state;
	memcpy(h.magic, TL_MAGIC, sizeof(h.magic));
	memset(r, 0, sizeof(r));
	for (i = 0; i < 3; i++) {
		r[i].key = i;
		r[i].op = TL_OP_READ;
		r[i].t[0] = 1000 + i;
		r[i].t[1] = 2000 + i;
		r[i].t[2] = 3000 + i;
	}
	snprintf(path, sizeof(path), "/tmp/torus-tl-test.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, &h, sizeof(h)), sizeof(h));
	assert_int_equal(write(fd, r, sizeof(r)), sizeof(r));
	close(fd);
	assert_int_equal(tl_read(path, check, &s, err, sizeof(err)), 3);
	assert_true(s.in_order);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_cut_short),
		cmocka_unit_test(test_stamps_kept),
		cmocka_unit_test(test_version_1),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
