// SPDX-License-Identifier: GPL-2.0-only
/* Byte ranges over a whole-block store (see blockio.h). */
#include <string.h>

#include "blockio.h"
#include "blockmath.h"

int blk_store_read(const struct blk_store *st, uint8_t *buf, size_t len,
		   uint64_t off)
{
	uint64_t end = off + len;
	int ret = 0;

	while (off < end && !ret) {
		struct blk_span s = blk_span_at(off, end, st->bs);

		if (blk_span_whole(&s, st->bs)) {
			ret = st->ops->get(st->ctx, s.block, buf);
		} else {
			ret = st->ops->get(st->ctx, s.block, st->scratch);
			memcpy(buf, st->scratch + s.boff, s.blen);
		}
		buf += s.blen;
		off += s.blen;
	}
	return ret;
}

int blk_store_write(const struct blk_store *st, const uint8_t *data,
		    size_t len, uint64_t off)
{
	uint64_t end = off + len;
	int ret = 0;

	while (off < end && !ret) {
		struct blk_span s = blk_span_at(off, end, st->bs);

		if (blk_span_whole(&s, st->bs)) {
			ret = st->ops->put(st->ctx, s.block, data);
		} else {
			ret = st->ops->get(st->ctx, s.block, st->scratch);
			if (!ret) {
				if (data)
					memcpy(st->scratch + s.boff, data,
					       s.blen);
				else
					memset(st->scratch + s.boff, 0, s.blen);
				ret = st->ops->put(st->ctx, s.block,
						   st->scratch);
			}
		}
		if (data)
			data += s.blen;
		off += s.blen;
	}
	return ret;
}
