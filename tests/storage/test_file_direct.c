// SPDX-License-Identifier: GPL-2.0-only
/*
 * The file store with O_DIRECT (STORE_FILE_DIRECT): aligned I/O goes
 * straight through, I/O that misses the alignment is bounced (a copy for
 * an unaligned buffer, read-modify-write for a partial block), and what
 * lands in the file is what a plain read of it says. The file lives in
 * $TMPDIR (or /var/tmp): tmpfs may refuse O_DIRECT, and then the test is
 * skipped.
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

#include "store_ops.h"

#define SIZE	(1u << 20)

struct env {
	char path[256];
	struct store *st;
	int plain;		/* the same file without O_DIRECT */
	uint8_t *buf;		/* page aligned, 128 KiB */
};

static int setup(void **state)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
	struct env *e = calloc(1, sizeof(*e));
	char err[256] = "";
	int fd;

	assert_non_null(e);
	snprintf(e->path, sizeof(e->path), "%s/test-file-direct.XXXXXX", dir);
	fd = mkstemp(e->path);
	assert_true(fd >= 0);
	close(fd);
	e->st = store_file_open_flags(e->path, SIZE, STORE_FILE_DIRECT,
				      err, sizeof(err));
	if (!e->st) {
		print_message("skipped: %s\n", err);
		unlink(e->path);
		free(e);
		*state = NULL;
		return 0;
	}
	e->plain = open(e->path, O_RDONLY);
	assert_true(e->plain >= 0);
	assert_int_equal(posix_memalign((void **)&e->buf, 4096, 128 << 10), 0);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	if (!e)
		return 0;
	store_close(e->st);
	close(e->plain);
	unlink(e->path);
	free(e->buf);
	free(e);
	return 0;
}

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = seed + i * 13;
}

/* What the file holds at [off, off + len), read without O_DIRECT. */
static void assert_file(struct env *e, uint64_t off, const uint8_t *want,
			size_t len)
{
	uint8_t *got = malloc(len);

	assert_non_null(got);
	/* The page cache may be stale only if O_DIRECT bypassed it badly. */
	assert_int_equal(pread(e->plain, got, len, off), (ssize_t)len);
	assert_memory_equal(got, want, len);
	free(got);
}

static void test_aligned(void **state)
{
	struct env *e = *state;
	uint8_t want[8192];

	if (!e)
		skip();
	fill(want, sizeof(want), 1);
	memcpy(e->buf, want, sizeof(want));
	assert_int_equal(store_pwrite(e->st, e->buf, 8192, 65536), 0);
	assert_file(e, 65536, want, 8192);
	memset(e->buf, 0, 8192);
	assert_int_equal(store_pread(e->st, e->buf, 8192, 65536), 0);
	assert_memory_equal(e->buf, want, 8192);
	assert_int_equal(store_flush(e->st), 0);
}

static void test_unaligned_buffer(void **state)
{
	struct env *e = *state;
	uint8_t want[4096];

	if (!e)
		skip();
	/* 4096 bytes at an aligned offset, from a buffer 3 bytes in. */
	fill(want, sizeof(want), 2);
	memcpy(e->buf + 3, want, sizeof(want));
	assert_int_equal(store_pwrite(e->st, e->buf + 3, 4096, 8192), 0);
	assert_file(e, 8192, want, 4096);
	memset(e->buf, 0, 8192);
	assert_int_equal(store_pread(e->st, e->buf + 5, 4096, 8192), 0);
	assert_memory_equal(e->buf + 5, want, 4096);
}

static void test_partial_blocks(void **state)
{
	struct env *e = *state;
	uint8_t around[12288], part[5000];

	if (!e)
		skip();
	/* Known data around, then 5000 bytes from offset 100 into it. */
	fill(around, sizeof(around), 3);
	memcpy(e->buf, around, sizeof(around));
	assert_int_equal(store_pwrite(e->st, e->buf, sizeof(around), 0), 0);
	fill(part, sizeof(part), 4);
	assert_int_equal(store_pwrite(e->st, part, sizeof(part), 100), 0);
	memcpy(around + 100, part, sizeof(part));
	assert_file(e, 0, around, sizeof(around));
	/* An unaligned read across the edge of the part. */
	assert_int_equal(store_pread(e->st, part, 777, 4999), 0);
	assert_memory_equal(part, around + 4999, 777);
}

static void test_end_of_file(void **state)
{
	struct env *e = *state;
	uint8_t want[512];

	if (!e)
		skip();
	/* The last 512 bytes, aligned or not. */
	fill(want, sizeof(want), 5);
	assert_int_equal(store_pwrite(e->st, want, 512, SIZE - 512), 0);
	assert_int_equal(store_pread(e->st, e->buf, 512, SIZE - 512), 0);
	assert_memory_equal(e->buf, want, 512);
	assert_int_equal(store_pread(e->st, e->buf + 1, 100, SIZE - 100),
			 0);
	assert_memory_equal(e->buf + 1, want + 412, 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_aligned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unaligned_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_end_of_file, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
