// SPDX-License-Identifier: GPL-2.0-only
/*
 * torus's block layer: the volume is stored in fixed blocks (512 KiB by
 * default). Reads fetch whole blocks; a write that covers part of a block
 * reads the block, changes it and writes it back whole. TRIM clears only
 * the blocks the range covers entirely and then syncs, as torus does.
 * One scratch block, so operations are serialised by a mutex (torus
 * serves one request at a time anyway).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "blockio.h"
#include "blockmath.h"
#include "util.h"

struct torus_blocks {
	struct backend be;
	struct backend *child;
	struct blk_store blocks;	/* whole blocks of child */
	pthread_mutex_t lock;
};

static struct torus_blocks *to_tb(struct backend *be)
{
	return container_of(be, struct torus_blocks, be);
}

static int tb_get(void *ctx, uint64_t block, uint8_t *buf)
{
	struct torus_blocks *t = ctx;

	return backend_pread(t->child, buf, t->blocks.bs, block * t->blocks.bs);
}

static int tb_put(void *ctx, uint64_t block, const uint8_t *buf)
{
	struct torus_blocks *t = ctx;
	uint64_t off = block * t->blocks.bs;

	return buf ? backend_pwrite(t->child, buf, t->blocks.bs, off) :
		     backend_zero(t->child, t->blocks.bs, off);
}

static const struct blk_store_ops tb_store_ops = {
	.get = tb_get,
	.put = tb_put,
};

static int tb_pread(struct backend *be, void *buf, size_t len, uint64_t off)
{
	struct torus_blocks *t = to_tb(be);
	int ret;

	pthread_mutex_lock(&t->lock);
	ret = blk_store_read(&t->blocks, buf, len, off);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* data NULL writes zeroes. Partial blocks are read, changed, written. */
static int tb_write(struct torus_blocks *t, const uint8_t *data, size_t len,
		    uint64_t off)
{
	int ret;

	pthread_mutex_lock(&t->lock);
	ret = blk_store_write(&t->blocks, data, len, off);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

static int tb_pwrite(struct backend *be, const void *buf, size_t len,
		     uint64_t off)
{
	return tb_write(to_tb(be), buf, len, off);
}

/* Not reachable from the torus profile (no WRITE_ZEROES); kept exact. */
static int tb_zero(struct backend *be, size_t len, uint64_t off)
{
	return tb_write(to_tb(be), NULL, len, off);
}

static int tb_trim(struct backend *be, size_t len, uint64_t off)
{
	struct torus_blocks *t = to_tb(be);
	uint64_t first, end;
	int ret = 0;

	blk_whole_range(off, len, t->blocks.bs, &first, &end);
	if (first < end)
		ret = backend_zero(t->child, (end - first) * t->blocks.bs,
				   first * t->blocks.bs);
	return ret;
}

static int tb_flush(struct backend *be)
{
	return backend_flush(to_tb(be)->child);
}

static void tb_close(struct backend *be)
{
	struct torus_blocks *t = to_tb(be);

	backend_close(t->child);
	pthread_mutex_destroy(&t->lock);
	free(t->blocks.scratch);
	free(t);
}

static const struct backend_ops torus_blocks_ops = {
	.name = "torus-blocks",
	.pread = tb_pread,
	.pwrite = tb_pwrite,
	.zero = tb_zero,
	.trim = tb_trim,
	.flush = tb_flush,
	.close = tb_close,
};

/* The child's size must be a multiple of block_size (torus requires it). */
struct backend *torus_blocks_open(struct backend *child, uint32_t block_size,
				  char *err, size_t errlen)
{
	struct torus_blocks *t;

	if (!block_size || child->size % block_size) {
		snprintf(err, errlen,
			 "torus: the size (%llu bytes) must be a multiple of the %u-byte block size, as torus requires for its volumes",
			 (unsigned long long)child->size, block_size);
		goto fail;
	}
	t = calloc(1, sizeof(*t));
	if (!t || !(t->blocks.scratch = malloc(block_size))) {
		free(t);
		snprintf(err, errlen, "torus: out of memory");
		goto fail;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->child = child;
	t->blocks.ops = &tb_store_ops;
	t->blocks.ctx = t;
	t->blocks.bs = block_size;
	t->be.ops = &torus_blocks_ops;
	t->be.size = child->size;
	return &t->be;
fail:
	backend_close(child);
	return NULL;
}
