// SPDX-License-Identifier: GPL-2.0-only
/*
 * The null store: reads return zeroes, writes are dropped. Replies point
 * into one read-only anonymous mapping of zeroes as large as the biggest
 * request, so nothing is copied or allocated per request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "store.h"
#include "torus_util.h"

/* As large as the biggest request any profile accepts. */
#define NULL_ZERO_LEN	(64u << 20)

struct null_store {
	struct store st;
	const uint8_t *zeroes;
};

static struct null_store *to_null(struct store *st)
{
	return container_of(st, struct null_store, st);
}

static int null_pread(struct store *st, void *buf, size_t len, uint64_t off)
{
	memset(buf, 0, len);
	return 0;
}

static int null_pwrite(struct store *st, const void *buf, size_t len,
		       uint64_t off)
{
	return 0;
}

static int null_zero(struct store *st, size_t len, uint64_t off)
{
	return 0;
}

static int null_flush(struct store *st)
{
	return 0;
}

static const void *null_peek(struct store *st, size_t len, uint64_t off)
{
	return len <= NULL_ZERO_LEN ? to_null(st)->zeroes : NULL;
}

static void null_close(struct store *st)
{
	struct null_store *n = to_null(st);

	munmap((void *)n->zeroes, NULL_ZERO_LEN);
	free(n);
}

static const struct store_ops null_ops = {
	.name = "null",
	.pread = null_pread,
	.pwrite = null_pwrite,
	.zero = null_zero,
	.trim = null_zero,
	.flush = null_flush,
	.peek = null_peek,
	.close = null_close,
};

struct store *store_null_open(uint64_t size, char *err, size_t errlen)
{
	struct null_store *n;
	void *z;

	n = calloc(1, sizeof(*n));
	if (!n) {
		snprintf(err, errlen, "null store: out of memory");
		return NULL;
	}
	z = mmap(NULL, NULL_ZERO_LEN, PROT_READ,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (z == MAP_FAILED) {
		snprintf(err, errlen, "null store: cannot map zeroes: %s",
			 strerror(errno));
		free(n);
		return NULL;
	}
	n->zeroes = z;
	n->st.ops = &null_ops;
	n->st.size = size;
	return &n->st;
}

/* The registry's entry (store.c): needs --size. */
static struct store *null_store_open(const void *priv,
				     const struct store_params *p,
				     char *err, size_t errlen)
{
	return store_null_open(p->size, err, errlen);
}

const struct store_type store_null = {
	.name = "null",
	.usage = "null",
	.help = "reads zeroes, drops writes (needs --size)",
	.flags = STORE_NEEDS_SIZE | STORE_TRIM_ZEROES | STORE_COPIES |
		 STORE_NO_DATA,
	.open = null_store_open,
};
