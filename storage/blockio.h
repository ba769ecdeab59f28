/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Byte ranges over a store that only reads and writes whole blocks: the
 * coreos-torus block layer (512 KiB blocks over a child store; it writes with
 * a loop of its own, which keeps the blocks' previous versions) and the
 * 0-Disk Redis layout (4 KiB deduped blocks). A part of a block is read through a
 * scratch block; a partial write reads, changes and writes the block back.
 * The caller serialises calls that share the scratch block.
 */
#ifndef TORUS_STORAGE_BLOCKIO_H
#define TORUS_STORAGE_BLOCKIO_H

#include <stddef.h>
#include <stdint.h>

struct blk_store_ops {
	/* Read block number block, whole, into buf. */
	int (*get)(void *ctx, uint64_t block, uint8_t *buf);
	/* Write block number block, whole; buf NULL writes zeroes. */
	int (*put)(void *ctx, uint64_t block, const uint8_t *buf);
};

struct blk_store {
	const struct blk_store_ops *ops;
	void *ctx;
	uint32_t bs;
	uint8_t *scratch;	/* one block */
};

int blk_store_read(const struct blk_store *st, uint8_t *buf, size_t len,
		   uint64_t off);
/* data NULL writes zeroes. */
int blk_store_write(const struct blk_store *st, const uint8_t *data,
		    size_t len, uint64_t off);

#endif /* TORUS_STORAGE_BLOCKIO_H */
