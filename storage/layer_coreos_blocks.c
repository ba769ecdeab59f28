// SPDX-License-Identifier: GPL-2.0-only
/*
 * The coreos-torus server's block layer (nbd-shim's profile "coreos"): the
 * volume is stored in fixed blocks (512 KiB by default). Reads fetch whole
 * blocks; a write that covers part of a block reads the block, changes it
 * and writes it back whole. TRIM clears only the blocks the range covers
 * entirely, as coreos-torus's File.Trim does.
 *
 * coreos-torus never overwrites a block in place: a write makes a new
 * version and the one of the last sync stays in storage. A TRIM of a block
 * written since the last flush brings that version back instead of
 * clearing the block (observed on the real server: the old data reads
 * back). So the first write to a block after a flush keeps the block's
 * content (nothing for a block of zeroes), TRIM restores it, and FLUSH
 * forgets them all. A partial write reads the block anyway; a whole-block
 * write reads it only for this, from below the storage shaping
 * (coreos-torus moves nothing to keep the old version, so neither does the
 * emulated link).
 *
 * One scratch block, so operations are serialised by a mutex (coreos-torus
 * serves one request at a time anyway).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_ops.h"
#include "blockio.h"
#include "blockmath.h"
#include "torus_util.h"

/* A block's content as of the last flush, from its first write since. */
struct tb_saved {
	uint64_t key;			/* block + 1; 0: a free slot */
	uint8_t *old;			/* NULL: the block was zeroes */
};

struct coreos_blocks {
	struct store st;
	struct store *child;
	struct store *raw;		/* child without shaping, not owned */
	struct blk_store blocks;	/* whole blocks of child, for reads */
	uint8_t *buf;			/* one block, for writes */
	struct tb_saved *saved;		/* open addressing, a power of 2 */
	size_t saved_cap, saved_n;
	pthread_mutex_t lock;
};

#define TB_SAVED_MIN	64

static struct coreos_blocks *to_tb(struct store *st)
{
	return container_of(st, struct coreos_blocks, st);
}

static int tb_get(void *ctx, uint64_t block, uint8_t *buf)
{
	struct coreos_blocks *t = ctx;

	return store_pread(t->child, buf, t->blocks.bs, block * t->blocks.bs);
}

static int tb_put(void *ctx, uint64_t block, const uint8_t *buf)
{
	struct coreos_blocks *t = ctx;
	uint64_t off = block * t->blocks.bs;

	return buf ? store_pwrite(t->child, buf, t->blocks.bs, off) :
		     store_zero(t->child, t->blocks.bs, off);
}

static const struct blk_store_ops tb_store_ops = {
	.get = tb_get,
	.put = tb_put,
};

/* The slot of block: its entry, or the free slot where it would go. */
static struct tb_saved *saved_slot(const struct coreos_blocks *t,
				   uint64_t block)
{
	size_t mask = t->saved_cap - 1;
	size_t i = (block * 0x9e3779b97f4a7c15ull) >> 32 & mask;

	while (t->saved[i].key && t->saved[i].key != block + 1)
		i = (i + 1) & mask;
	return &t->saved[i];
}

static const struct tb_saved *saved_find(const struct coreos_blocks *t,
					 uint64_t block)
{
	const struct tb_saved *sv;

	if (!t->saved_n)
		return NULL;
	sv = saved_slot(t, block);
	return sv->key ? sv : NULL;
}

/* Keep the table at most half full. */
static int saved_grow(struct coreos_blocks *t)
{
	struct tb_saved *old = t->saved, *sv;
	size_t i, cap = t->saved_cap;

	t->saved_cap = cap ? cap * 2 : TB_SAVED_MIN;
	t->saved = calloc(t->saved_cap, sizeof(*t->saved));
	if (!t->saved) {
		t->saved = old;
		t->saved_cap = cap;
		return -ENOMEM;
	}
	for (i = 0; i < cap; i++) {
		if (!old[i].key)
			continue;
		sv = saved_slot(t, old[i].key - 1);
		*sv = old[i];
	}
	free(old);
	return 0;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	return !p[0] && !memcmp(p, p + 1, len - 1);
}

/* Remember what block held before its first write since the flush. */
static int saved_add(struct coreos_blocks *t, uint64_t block,
		     const uint8_t *content)
{
	struct tb_saved *sv;
	uint8_t *copy = NULL;

	if ((t->saved_n + 1) * 2 > t->saved_cap && saved_grow(t))
		return -ENOMEM;
	if (!all_zero(content, t->blocks.bs)) {
		copy = malloc(t->blocks.bs);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, content, t->blocks.bs);
	}
	sv = saved_slot(t, block);
	sv->key = block + 1;
	sv->old = copy;
	t->saved_n++;
	return 0;
}

/* After a flush the stored versions are the current ones. */
static void saved_clear(struct coreos_blocks *t)
{
	size_t i;

	if (!t->saved_n)
		return;
	for (i = 0; i < t->saved_cap; i++)
		free(t->saved[i].old);
	free(t->saved);
	t->saved = NULL;
	t->saved_cap = 0;
	t->saved_n = 0;
}

static int tb_pread(struct store *st, void *buf, size_t len, uint64_t off)
{
	struct coreos_blocks *t = to_tb(st);
	int ret;

	pthread_mutex_lock(&t->lock);
	ret = blk_store_read(&t->blocks, buf, len, off);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/*
 * data NULL writes zeroes. Partial blocks are read, changed, written back;
 * a block's first write since the flush keeps what it held (for whole
 * blocks that costs a read of their own, unshaped).
 */
static int tb_write_locked(struct coreos_blocks *t, const uint8_t *data,
			   size_t len, uint64_t off)
{
	uint32_t bs = t->blocks.bs;
	uint64_t end = off + len;
	struct blk_span s;
	bool first, whole;
	int ret = 0;

	while (off < end && !ret) {
		s = blk_span_at(off, end, bs);
		whole = blk_span_whole(&s, bs);
		first = !saved_find(t, s.block);
		if (!whole)
			ret = tb_get(t, s.block, t->buf);
		else if (first)
			ret = store_pread(t->raw, t->buf, bs,
					  s.block * bs);
		if (!ret && first)
			ret = saved_add(t, s.block, t->buf);
		if (ret)
			break;
		if (whole) {
			ret = tb_put(t, s.block, data);
		} else {
			if (data)
				memcpy(t->buf + s.boff, data, s.blen);
			else
				memset(t->buf + s.boff, 0, s.blen);
			ret = tb_put(t, s.block, t->buf);
		}
		if (data)
			data += s.blen;
		off += s.blen;
	}
	return ret;
}

static int tb_write(struct coreos_blocks *t, const uint8_t *data, size_t len,
		    uint64_t off)
{
	int ret;

	pthread_mutex_lock(&t->lock);
	ret = tb_write_locked(t, data, len, off);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

static int tb_pwrite(struct store *st, const void *buf, size_t len,
		     uint64_t off)
{
	return tb_write(to_tb(st), buf, len, off);
}

/* Not reachable from the coreos profile (no WRITE_ZEROES); kept exact. */
static int tb_zero(struct store *st, size_t len, uint64_t off)
{
	return tb_write(to_tb(st), NULL, len, off);
}

/*
 * Whole blocks only. A block written since the last flush gets back its
 * content of then; the others are cleared, runs of them at once.
 */
static int tb_trim(struct store *st, size_t len, uint64_t off)
{
	struct coreos_blocks *t = to_tb(st);
	uint64_t first, end, b, run;
	uint32_t bs = t->blocks.bs;
	const struct tb_saved *sv;
	int ret = 0, err;

	blk_whole_range(off, len, bs, &first, &end);
	pthread_mutex_lock(&t->lock);
	for (b = run = first; b < end; b++) {
		sv = saved_find(t, b);
		if (!sv)
			continue;
		if (run < b) {
			err = store_zero(t->child, (b - run) * bs, run * bs);
			ret = ret ? ret : err;
		}
		err = sv->old ? store_pwrite(t->child, sv->old, bs, b * bs) :
				store_zero(t->child, bs, b * bs);
		ret = ret ? ret : err;
		run = b + 1;
	}
	if (run < end) {
		err = store_zero(t->child, (end - run) * bs, run * bs);
		ret = ret ? ret : err;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

static int tb_flush(struct store *st)
{
	struct coreos_blocks *t = to_tb(st);
	int ret;

	pthread_mutex_lock(&t->lock);
	ret = store_flush(t->child);
	saved_clear(t);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

static void tb_close(struct store *st)
{
	struct coreos_blocks *t = to_tb(st);

	store_close(t->child);
	saved_clear(t);
	pthread_mutex_destroy(&t->lock);
	free(t->blocks.scratch);
	free(t->buf);
	free(t);
}

static const struct store_ops coreos_blocks_ops = {
	.name = "coreos-blocks",
	.pread = tb_pread,
	.pwrite = tb_pwrite,
	.zero = tb_zero,
	.trim = tb_trim,
	.flush = tb_flush,
	.close = tb_close,
};

/* The child's size must be a multiple of block_size (coreos-torus requires it). */
struct store *coreos_blocks_open(struct store *child, struct store *raw,
				  uint32_t block_size, char *err,
				  size_t errlen)
{
	struct coreos_blocks *t;

	if (!block_size || child->size % block_size) {
		snprintf(err, errlen,
			 "coreos: the size (%llu bytes) must be a multiple of the %u-byte block size, as coreos-torus requires for its volumes",
			 (unsigned long long)child->size, block_size);
		goto fail;
	}
	t = calloc(1, sizeof(*t));
	if (t) {
		t->blocks.scratch = malloc(block_size);
		t->buf = malloc(block_size);
	}
	if (!t || !t->blocks.scratch || !t->buf) {
		if (t) {
			free(t->blocks.scratch);
			free(t->buf);
		}
		free(t);
		snprintf(err, errlen, "coreos: out of memory");
		goto fail;
	}
	pthread_mutex_init(&t->lock, NULL);
	t->child = child;
	t->raw = raw;
	t->blocks.ops = &tb_store_ops;
	t->blocks.ctx = t;
	t->blocks.bs = block_size;
	t->st.ops = &coreos_blocks_ops;
	t->st.size = child->size;
	t->st.read_only = child->read_only;
	return &t->st;
fail:
	store_close(child);
	return NULL;
}
