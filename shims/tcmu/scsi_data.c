// SPDX-License-Identifier: GPL-2.0-only
/*
 * The SCSI target's data commands (scsi_target_int.h): READ, WRITE,
 * SYNCHRONIZE CACHE, WRITE SAME and UNMAP executed against the store, and
 * the checks the asynchronous path shares with them.
 */
#include <errno.h>
#include <string.h>

#include "scsi_target.h"
#include "scsi_target_int.h"

/* The byte of a READ/WRITE CDB that holds its transfer length. */
static uint16_t xfer_len_byte(const struct tcmu_cdb *c)
{
	switch (c->len) {
	case 6:
		return 4;
	case 10:
		return 7;
	case 12:
		return 6;
	default:
		return 10;
	}
}

/* Range, the target's limit, and buffers that hold the data. */
int scsi_rw_checks(struct scsi_lu *lu, const struct tcmu_cdb *c,
		   uint64_t room, struct scsi_reply *r)
{
	struct tcmu_sense s;

	if (tcmu_cdb_check_range(c, lu->t->nr_blocks, &s)) {
		scsi_reply_sense(r, &s);
		return -1;
	}
	if (c->blocks > lu->t->max_xfer) {
		scsi_reply_invalid(r, xfer_len_byte(c), -1);
		return -1;
	}
	/* A ring whose buffers cannot hold the transfer: never from a kernel. */
	if (room < (uint64_t)c->blocks * lu->t->block_size) {
		scsi_reply_invalid(r, xfer_len_byte(c), -1);
		return -1;
	}
	return 0;
}

void scsi_read(struct scsi_lu *lu, const struct tcmu_cdb *c,
	       const struct iovec *iov, uint32_t cnt,
	       struct scsi_reply *r)
{
	size_t len = (size_t)c->blocks * lu->t->block_size;
	uint64_t off = c->lba * lu->t->block_size;
	const void *src;
	int ret = 0;

	if (scsi_rw_checks(lu, c, scsi_iov_total(iov, cnt), r) || !len)
		return;
	if (cnt == 1 || iov[0].iov_len >= len) {
		ret = store_pread(lu->st, iov[0].iov_base, len, off);
	} else if ((src = store_peek(lu->st, len, off))) {
		scsi_iov_scatter(iov, cnt, src, len);
		return;
	} else {
		/* Scattered buffers: one store read, then the copies. */
		ret = store_pread(lu->st, lu->bounce, len, off);
		if (!ret)
			scsi_iov_scatter(iov, cnt, lu->bounce, len);
	}
	if (ret)
		scsi_store_error(r, ret, false, c->lba);
}

void scsi_write(struct scsi_lu *lu, const struct tcmu_cdb *c,
		const struct iovec *iov, uint32_t cnt,
		struct scsi_reply *r)
{
	size_t len = (size_t)c->blocks * lu->t->block_size;
	uint64_t off = c->lba * lu->t->block_size;
	int ret;

	if (scsi_rw_checks(lu, c, scsi_iov_total(iov, cnt), r) || !len)
		return;
	if (cnt == 1 || iov[0].iov_len >= len) {
		ret = store_pwrite(lu->st, iov[0].iov_base, len, off);
	} else {
		scsi_iov_gather(iov, cnt, lu->bounce, len);
		ret = store_pwrite(lu->st, lu->bounce, len, off);
	}
	/* A store with no flush has no cache for FUA to write through. */
	if (!ret && (c->flags & TCMU_CDB_F_FUA)) {
		ret = store_flush(lu->st);
		if (ret == -EOPNOTSUPP)
			ret = 0;
	}
	if (ret)
		scsi_store_error(r, ret, true, c->lba);
}

void scsi_sync(struct scsi_lu *lu, const struct tcmu_cdb *c,
	       struct scsi_reply *r)
{
	struct tcmu_sense s;
	int ret;

	if (tcmu_cdb_check_range(c, lu->t->nr_blocks, &s)) {
		scsi_reply_sense(r, &s);
		return;
	}
	ret = store_flush(lu->st);
	if (ret)
		scsi_flush_error(r, ret, c->lba);
}

/* Trim is advisory: a store that cannot has done nothing wrong. */
static int trim(struct scsi_lu *lu, uint64_t lba, uint64_t blocks)
{
	int ret = store_trim(lu->st, blocks * lu->t->block_size,
			     lba * lu->t->block_size);

	return ret == -EOPNOTSUPP ? 0 : ret;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	return !len || (!p[0] && !memcmp(p, p + 1, len - 1));
}

/*
 * WRITE SAME's checks: 0 with *zero set when the block is all zeroes (it
 * is in lu->bounce unless NDOB), or -1 with the reply made.
 */
int scsi_ws_checks(struct scsi_lu *lu, const struct tcmu_cdb *c,
		   const struct iovec *iov, uint32_t cnt,
		   struct scsi_reply *r, bool *zero)
{
	uint32_t bs = lu->t->block_size;
	struct tcmu_sense s;

	if (c->flags & TCMU_CDB_F_ANCHOR) {
		scsi_reply_invalid(r, 1, 4);
		return -1;
	}
	/* WSNZ: zero blocks would mean "to the end", which we refuse. */
	if (!c->blocks) {
		scsi_reply_invalid(r, 10, -1);
		return -1;
	}
	if (tcmu_cdb_check_range(c, lu->t->nr_blocks, &s)) {
		scsi_reply_sense(r, &s);
		return -1;
	}
	if (c->blocks > lu->t->max_ws) {
		scsi_reply_invalid(r, 10, -1);
		return -1;
	}
	/* As LIO refuses it on a device that is not thin provisioned. */
	if ((c->flags & TCMU_CDB_F_UNMAP) && !lu->t->thin) {
		scsi_reply_check(r, SCSI_SK_ILLEGAL_REQUEST,
				 SCSI_ASC_INVALID_OPCODE, 0);
		return -1;
	}
	if (c->flags & TCMU_CDB_F_NDOB) {
		*zero = true;
		return 0;
	}
	if (scsi_iov_total(iov, cnt) < bs) {
		scsi_reply_invalid(r, 10, -1);
		return -1;
	}
	scsi_iov_gather(iov, cnt, lu->bounce, bs);
	*zero = all_zero(lu->bounce, bs);
	return 0;
}

/* Zeroes written with the UNMAP bit are a trim where a trim leaves zeroes. */
bool scsi_ws_trims(const struct scsi_lu *lu, const struct tcmu_cdb *c)
{
	return (c->flags & TCMU_CDB_F_UNMAP) && lu->t->lbprz;
}

void scsi_write_same(struct scsi_lu *lu, const struct tcmu_cdb *c,
		     const struct iovec *iov, uint32_t cnt,
		     struct scsi_reply *r)
{
	uint32_t bs = lu->t->block_size, per, done;
	uint64_t off = c->lba * bs;
	int ret = 0;
	bool zero;

	if (scsi_ws_checks(lu, c, iov, cnt, r, &zero))
		return;
	if (zero && scsi_ws_trims(lu, c))
		ret = trim(lu, c->lba, c->blocks);
	else if (zero)
		ret = store_zero(lu->st, (size_t)c->blocks * bs, off);
	else {
		/* The pattern repeated through the bounce buffer. */
		per = c->blocks < lu->t->max_xfer ? c->blocks : lu->t->max_xfer;
		for (done = 1; done < per; done++)
			memcpy(lu->bounce + (size_t)done * bs, lu->bounce, bs);
		for (done = 0; done < c->blocks && !ret; done += per) {
			uint32_t n = c->blocks - done < per ?
				     c->blocks - done : per;

			ret = store_pwrite(lu->st, lu->bounce, (size_t)n * bs,
					   off + (uint64_t)done * bs);
		}
	}
	if (ret)
		scsi_store_error(r, ret, true, c->lba);
}

/*
 * UNMAP's parameter list, parsed into lu->param and checked, every
 * descriptor before any block goes: the number of descriptors, or -1 with
 * the reply made.
 */
int scsi_unmap_checks(struct scsi_lu *lu, const struct tcmu_cdb *c,
		      const struct iovec *iov, uint32_t cnt,
		      struct scsi_reply *r)
{
	uint64_t room = scsi_iov_total(iov, cnt), total = 0, lba;
	size_t len = c->alloc_len;
	struct tcmu_sense s;
	uint32_t blocks;
	int n, i;

	/* As LIO: no UNMAP on a device that is not thin provisioned. */
	if (!lu->t->thin) {
		scsi_reply_check(r, SCSI_SK_ILLEGAL_REQUEST,
				 SCSI_ASC_INVALID_OPCODE, 0);
		return -1;
	}
	if (c->flags & TCMU_CDB_F_ANCHOR) {
		scsi_reply_invalid(r, 1, 0);
		return -1;
	}
	if (len > room)
		len = room;
	if (len > lu->param_len)
		len = lu->param_len;
	scsi_iov_gather(iov, cnt, lu->param, len);
	n = tcmu_unmap_parse(lu->param, len, SCSI_MAX_UNMAP_DESCS, &s);
	if (n < 0) {
		scsi_reply_sense(r, &s);
		return -1;
	}
	for (i = 0; i < n; i++) {
		tcmu_unmap_get(lu->param, i, &lba, &blocks);
		if (blocks && (lba >= lu->t->nr_blocks ||
			       blocks > lu->t->nr_blocks - lba)) {
			scsi_reply_check(r, SCSI_SK_ILLEGAL_REQUEST,
					 SCSI_ASC_LBA_OUT_OF_RANGE, 0);
			return -1;
		}
		total += blocks;
	}
	if (total > lu->t->max_unmap) {
		tcmu_sense_invalid_field(&s, false, 8 + 8, -1);
		scsi_reply_sense(r, &s);
		return -1;
	}
	return n;
}

void scsi_unmap(struct scsi_lu *lu, const struct tcmu_cdb *c,
		const struct iovec *iov, uint32_t cnt,
		struct scsi_reply *r)
{
	uint64_t lba;
	uint32_t blocks;
	int n, i, ret;

	n = scsi_unmap_checks(lu, c, iov, cnt, r);
	for (i = 0; i < n; i++) {
		tcmu_unmap_get(lu->param, i, &lba, &blocks);
		if (!blocks)
			continue;
		ret = trim(lu, lba, blocks);
		if (ret)
			return scsi_store_error(r, ret, true, lba);
	}
}
