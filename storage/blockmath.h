/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Splitting byte ranges into fixed-size blocks: the read-modify-write of the
 * coreos profile (512 KiB blocks), the 0-Disk volume blocks (4 KiB) and
 * coreos-torus's TRIM, which only clears blocks the range covers whole. Pure
 * arithmetic, tested by tests/shims/test_blockmath.c.
 */
#ifndef TORUS_STORAGE_BLOCKMATH_H
#define TORUS_STORAGE_BLOCKMATH_H

#include <stdbool.h>
#include <stdint.h>

/* One block's part of a range. */
struct blk_span {
	uint64_t block;		/* block index */
	uint32_t boff;		/* offset of the part inside the block */
	uint32_t blen;		/* length of the part */
};

/*
 * The part of [off, end) that lies in the block holding off. Iterate with
 * off += span.blen until off == end.
 */
static inline struct blk_span blk_span_at(uint64_t off, uint64_t end,
					  uint32_t bs)
{
	struct blk_span s;
	uint64_t room;

	s.block = off / bs;
	s.boff = off % bs;
	room = bs - s.boff;
	s.blen = end - off < room ? end - off : room;
	return s;
}

static inline bool blk_span_whole(const struct blk_span *s, uint32_t bs)
{
	return s->boff == 0 && s->blen == bs;
}

/*
 * Blocks [*first, *end) that [off, off + len) covers entirely
 * (coreos-torus's TRIM: partial blocks at either edge keep their data). *first == *end when none.
 */
static inline void blk_whole_range(uint64_t off, uint64_t len, uint32_t bs,
				   uint64_t *first, uint64_t *end)
{
	*first = (off + bs - 1) / bs;
	*end = (off + len) / bs;
	if (*end < *first)
		*end = *first;
}

#endif /* TORUS_STORAGE_BLOCKMATH_H */
