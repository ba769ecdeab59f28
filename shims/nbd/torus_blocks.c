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
#include "blockmath.h"
#include "util.h"

struct torus_blocks {
	struct backend be;
	struct backend *child;
	uint32_t bs;
	uint8_t *scratch;
	pthread_mutex_t lock;
};

static struct torus_blocks *to_tb(struct backend *be)
{
	return container_of(be, struct torus_blocks, be);
}

static int tb_pread(struct backend *be, void *buf, size_t len, uint64_t off)
{
	struct torus_blocks *t = to_tb(be);
	uint64_t end = off + len;
	uint8_t *p = buf;
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	while (off < end) {
		struct blk_span s = blk_span_at(off, end, t->bs);

		if (blk_span_whole(&s, t->bs)) {
			ret = backend_pread(t->child, p, s.blen, off);
		} else {
			ret = backend_pread(t->child, t->scratch, t->bs,
					    s.block * t->bs);
			memcpy(p, t->scratch + s.boff, s.blen);
		}
		if (ret)
			break;
		p += s.blen;
		off += s.blen;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* data NULL writes zeroes. Partial blocks are read, changed, written. */
static int tb_write(struct torus_blocks *t, const uint8_t *data, size_t len,
		    uint64_t off)
{
	uint64_t end = off + len;
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	while (off < end && !ret) {
		struct blk_span s = blk_span_at(off, end, t->bs);
		uint64_t boff = s.block * t->bs;

		if (blk_span_whole(&s, t->bs)) {
			ret = data ? backend_pwrite(t->child, data, s.blen, off) :
				     backend_zero(t->child, s.blen, off);
		} else {
			ret = backend_pread(t->child, t->scratch, t->bs, boff);
			if (!ret) {
				if (data)
					memcpy(t->scratch + s.boff, data,
					       s.blen);
				else
					memset(t->scratch + s.boff, 0, s.blen);
				ret = backend_pwrite(t->child, t->scratch,
						     t->bs, boff);
			}
		}
		if (data)
			data += s.blen;
		off += s.blen;
	}
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

	blk_whole_range(off, len, t->bs, &first, &end);
	if (first < end)
		ret = backend_zero(t->child, (end - first) * t->bs,
				   first * t->bs);
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
	free(t->scratch);
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
	if (!t || !(t->scratch = malloc(block_size))) {
		free(t);
		snprintf(err, errlen, "torus: out of memory");
		goto fail;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->child = child;
	t->bs = block_size;
	t->be.ops = &torus_blocks_ops;
	t->be.size = child->size;
	return &t->be;
fail:
	backend_close(child);
	return NULL;
}
