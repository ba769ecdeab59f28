// SPDX-License-Identifier: GPL-2.0-only
/*
 * The SCSI target (see scsi_target.h): CDBs parsed and checked by
 * proto/tcmu/tcmu_cdb_parse.c, data moved between the command's iovecs and the
 * store, store errors turned into sense.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scsi_pages.h"
#include "scsi_target.h"

/* The most a WRITE SAME or an UNMAP may cover: big, but one store call. */
#define MAX_RANGE_BYTES		(1ull << 30)

int scsi_target_init(struct scsi_target *t, uint64_t size,
		     uint32_t block_size, uint32_t max_transfer, bool lbprz,
		     uint64_t id)
{
	static const char hex[] = "0123456789abcdef";
	int i;

	memset(t, 0, sizeof(*t));
	if ((block_size != 512 && block_size != 4096) ||
	    max_transfer < block_size || max_transfer % block_size ||
	    size < block_size)
		return -EINVAL;
	t->nr_blocks = size / block_size;
	t->block_size = block_size;
	t->max_xfer = max_transfer / block_size;
	t->max_unmap = MAX_RANGE_BYTES / block_size;
	t->max_ws = MAX_RANGE_BYTES / block_size;
	/* 4 KiB: the page the stores and the data area work in. */
	t->granularity = block_size < 4096 ? 4096 / block_size : 1;
	t->lbprz = lbprz;
	t->thin = true;
	t->write_cache = true;
	t->id = id;
	for (i = 0; i < 16; i++)
		t->serial[i] = hex[(id >> (60 - 4 * i)) & 0xf];
	return 0;
}

int scsi_lu_init(struct scsi_lu *lu, const struct scsi_target *t,
		 struct store *st)
{
	memset(lu, 0, sizeof(*lu));
	lu->t = t;
	lu->st = st;
	lu->bounce_len = (size_t)t->max_xfer * t->block_size;
	/* Aligned for stores that do direct I/O. */
	if (posix_memalign((void **)&lu->bounce, 4096, lu->bounce_len)) {
		lu->bounce = NULL;
		return -ENOMEM;
	}
	/* One descriptor more than allowed, so that too many are seen. */
	lu->param_len = 8 + (SCSI_MAX_UNMAP_DESCS + 1) * TCMU_UNMAP_DESC_LEN;
	lu->param = malloc(lu->param_len);
	if (!lu->param) {
		scsi_lu_free(lu);
		return -ENOMEM;
	}
	return 0;
}

void scsi_lu_free(struct scsi_lu *lu)
{
	free(lu->bounce);
	free(lu->param);
	lu->bounce = lu->param = NULL;
}

/* ---- the command's buffers ---- */

static uint64_t iov_total(const struct iovec *iov, uint32_t cnt)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* Copy the first @len bytes of the buffers to @dst. */
static void iov_gather(const struct iovec *iov, uint32_t cnt, void *dst,
		       size_t len)
{
	uint8_t *d = dst;
	uint32_t i;

	for (i = 0; i < cnt && len; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(d, iov[i].iov_base, n);
		d += n;
		len -= n;
	}
}

/* Fill the buffers from @src (@len bytes), zeroes after it. */
static void iov_scatter(const struct iovec *iov, uint32_t cnt,
			const void *src, size_t len)
{
	const uint8_t *s = src;
	uint32_t i;

	for (i = 0; i < cnt; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(iov[i].iov_base, s, n);
		memset((uint8_t *)iov[i].iov_base + n, 0, iov[i].iov_len - n);
		s += n;
		len -= n;
	}
}

/* ---- replies ---- */

static void good(struct scsi_reply *r)
{
	memset(r, 0, sizeof(*r));
	r->read_len = -1;
}

void scsi_reply_sense(struct scsi_reply *r, const struct tcmu_sense *s)
{
	r->status = SCSI_STATUS_CHECK_CONDITION;
	r->sense_len = tcmu_sense_fixed(r->sense, sizeof(r->sense), s);
}

static void check(struct scsi_reply *r, uint8_t key, uint8_t asc,
		  uint8_t ascq)
{
	struct tcmu_sense s;

	tcmu_sense_set(&s, key, asc, ascq);
	scsi_reply_sense(r, &s);
}

static void invalid_cdb(struct scsi_reply *r, uint16_t byte, int bit)
{
	struct tcmu_sense s;

	tcmu_sense_invalid_field(&s, true, byte, bit);
	scsi_reply_sense(r, &s);
}

/*
 * A command that would change the data of a write-protected unit: DATA
 * PROTECT before anything reaches the store.
 */
static bool write_protected(const struct scsi_lu *lu,
			    const struct tcmu_cdb *c, struct scsi_reply *r)
{
	if (!lu->t->write_protect ||
	    (c->cls != TCMU_CDB_WRITE && c->cls != TCMU_CDB_WRITE_SAME &&
	     c->cls != TCMU_CDB_UNMAP))
		return false;
	r->error = EROFS;
	check(r, SCSI_SK_DATA_PROTECT, SCSI_ASC_WRITE_PROTECTED, 0);
	return true;
}

/* A store's failure: the first block of the command in INFORMATION. */
static void store_error(struct scsi_reply *r, int err, bool write,
			uint64_t lba)
{
	struct tcmu_sense s;

	r->error = -err;
	if (err == -ENOSPC)
		tcmu_sense_set(&s, SCSI_SK_DATA_PROTECT,
			       SCSI_ASC_WRITE_PROTECTED, 0x07);
	else if (err == -EROFS)
		tcmu_sense_set(&s, SCSI_SK_DATA_PROTECT,
			       SCSI_ASC_WRITE_PROTECTED, 0);
	else
		tcmu_sense_set(&s, SCSI_SK_MEDIUM_ERROR,
			       write ? SCSI_ASC_WRITE_ERROR :
				       SCSI_ASC_UNRECOVERED_READ_ERROR, 0);
	s.info_valid = true;
	s.info = lba;
	scsi_reply_sense(r, &s);
}

/*
 * A store with no flush at all (a tcmu-runner plugin without the callout)
 * is answered as tcmu-runner answers it: the opcode is not supported.
 */
static void flush_error(struct scsi_reply *r, int err, uint64_t lba)
{
	if (err == -EOPNOTSUPP) {
		r->error = EOPNOTSUPP;
		return check(r, SCSI_SK_ILLEGAL_REQUEST,
			     SCSI_ASC_INVALID_OPCODE, 0);
	}
	store_error(r, err, true, lba);
}

/* Data-in built in lu->resp: truncated to the allocation length. */
static void data_in(struct scsi_lu *lu, const struct tcmu_cdb *c, int len,
		    const struct iovec *iov, uint32_t cnt,
		    struct scsi_reply *r)
{
	uint64_t room = iov_total(iov, cnt);
	size_t n = len;

	if (n > c->alloc_len)
		n = c->alloc_len;
	if (n > room)
		n = room;
	iov_scatter(iov, cnt, lu->resp, n);
	if (n < room)
		r->read_len = n;
}

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
static int rw_checks(struct scsi_lu *lu, const struct tcmu_cdb *c,
		     uint64_t room, struct scsi_reply *r)
{
	struct tcmu_sense s;

	if (tcmu_cdb_check_range(c, lu->t->nr_blocks, &s)) {
		scsi_reply_sense(r, &s);
		return -1;
	}
	if (c->blocks > lu->t->max_xfer) {
		invalid_cdb(r, xfer_len_byte(c), -1);
		return -1;
	}
	/* A ring whose buffers cannot hold the transfer: never from a kernel. */
	if (room < (uint64_t)c->blocks * lu->t->block_size) {
		invalid_cdb(r, xfer_len_byte(c), -1);
		return -1;
	}
	return 0;
}

/* ---- I/O ---- */

static void do_read(struct scsi_lu *lu, const struct tcmu_cdb *c,
		    const struct iovec *iov, uint32_t cnt,
		    struct scsi_reply *r)
{
	size_t len = (size_t)c->blocks * lu->t->block_size;
	uint64_t off = c->lba * lu->t->block_size;
	const void *src;
	int ret = 0;

	if (rw_checks(lu, c, iov_total(iov, cnt), r) || !len)
		return;
	if (cnt == 1 || iov[0].iov_len >= len) {
		ret = store_pread(lu->st, iov[0].iov_base, len, off);
	} else if ((src = store_peek(lu->st, len, off))) {
		iov_scatter(iov, cnt, src, len);
		return;
	} else {
		/* Scattered buffers: one store read, then the copies. */
		ret = store_pread(lu->st, lu->bounce, len, off);
		if (!ret)
			iov_scatter(iov, cnt, lu->bounce, len);
	}
	if (ret)
		store_error(r, ret, false, c->lba);
}

static void do_write(struct scsi_lu *lu, const struct tcmu_cdb *c,
		     const struct iovec *iov, uint32_t cnt,
		     struct scsi_reply *r)
{
	size_t len = (size_t)c->blocks * lu->t->block_size;
	uint64_t off = c->lba * lu->t->block_size;
	int ret;

	if (rw_checks(lu, c, iov_total(iov, cnt), r) || !len)
		return;
	if (cnt == 1 || iov[0].iov_len >= len) {
		ret = store_pwrite(lu->st, iov[0].iov_base, len, off);
	} else {
		iov_gather(iov, cnt, lu->bounce, len);
		ret = store_pwrite(lu->st, lu->bounce, len, off);
	}
	/* A store with no flush has no cache for FUA to write through. */
	if (!ret && (c->flags & TCMU_CDB_F_FUA)) {
		ret = store_flush(lu->st);
		if (ret == -EOPNOTSUPP)
			ret = 0;
	}
	if (ret)
		store_error(r, ret, true, c->lba);
}

static void do_sync(struct scsi_lu *lu, const struct tcmu_cdb *c,
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
		flush_error(r, ret, c->lba);
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
static int ws_checks(struct scsi_lu *lu, const struct tcmu_cdb *c,
		     const struct iovec *iov, uint32_t cnt,
		     struct scsi_reply *r, bool *zero)
{
	uint32_t bs = lu->t->block_size;
	struct tcmu_sense s;

	if (c->flags & TCMU_CDB_F_ANCHOR) {
		invalid_cdb(r, 1, 4);
		return -1;
	}
	/* WSNZ: zero blocks would mean "to the end", which we refuse. */
	if (!c->blocks) {
		invalid_cdb(r, 10, -1);
		return -1;
	}
	if (tcmu_cdb_check_range(c, lu->t->nr_blocks, &s)) {
		scsi_reply_sense(r, &s);
		return -1;
	}
	if (c->blocks > lu->t->max_ws) {
		invalid_cdb(r, 10, -1);
		return -1;
	}
	/* As LIO refuses it on a device that is not thin provisioned. */
	if ((c->flags & TCMU_CDB_F_UNMAP) && !lu->t->thin) {
		check(r, SCSI_SK_ILLEGAL_REQUEST, SCSI_ASC_INVALID_OPCODE, 0);
		return -1;
	}
	if (c->flags & TCMU_CDB_F_NDOB) {
		*zero = true;
		return 0;
	}
	if (iov_total(iov, cnt) < bs) {
		invalid_cdb(r, 10, -1);
		return -1;
	}
	iov_gather(iov, cnt, lu->bounce, bs);
	*zero = all_zero(lu->bounce, bs);
	return 0;
}

/* Zeroes written with the UNMAP bit are a trim where a trim leaves zeroes. */
static bool ws_trims(const struct scsi_lu *lu, const struct tcmu_cdb *c)
{
	return (c->flags & TCMU_CDB_F_UNMAP) && lu->t->lbprz;
}

static void do_write_same(struct scsi_lu *lu, const struct tcmu_cdb *c,
			  const struct iovec *iov, uint32_t cnt,
			  struct scsi_reply *r)
{
	uint32_t bs = lu->t->block_size, per, done;
	uint64_t off = c->lba * bs;
	int ret = 0;
	bool zero;

	if (ws_checks(lu, c, iov, cnt, r, &zero))
		return;
	if (zero && ws_trims(lu, c))
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
		store_error(r, ret, true, c->lba);
}

/*
 * UNMAP's parameter list, parsed into lu->param and checked, every
 * descriptor before any block goes: the number of descriptors, or -1 with
 * the reply made.
 */
static int unmap_checks(struct scsi_lu *lu, const struct tcmu_cdb *c,
			const struct iovec *iov, uint32_t cnt,
			struct scsi_reply *r)
{
	uint64_t room = iov_total(iov, cnt), total = 0, lba;
	size_t len = c->alloc_len;
	struct tcmu_sense s;
	uint32_t blocks;
	int n, i;

	/* As LIO: no UNMAP on a device that is not thin provisioned. */
	if (!lu->t->thin) {
		check(r, SCSI_SK_ILLEGAL_REQUEST, SCSI_ASC_INVALID_OPCODE, 0);
		return -1;
	}
	if (c->flags & TCMU_CDB_F_ANCHOR) {
		invalid_cdb(r, 1, 0);
		return -1;
	}
	if (len > room)
		len = room;
	if (len > lu->param_len)
		len = lu->param_len;
	iov_gather(iov, cnt, lu->param, len);
	n = tcmu_unmap_parse(lu->param, len, SCSI_MAX_UNMAP_DESCS, &s);
	if (n < 0) {
		scsi_reply_sense(r, &s);
		return -1;
	}
	for (i = 0; i < n; i++) {
		tcmu_unmap_get(lu->param, i, &lba, &blocks);
		if (blocks && (lba >= lu->t->nr_blocks ||
			       blocks > lu->t->nr_blocks - lba)) {
			check(r, SCSI_SK_ILLEGAL_REQUEST,
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

static void do_unmap(struct scsi_lu *lu, const struct tcmu_cdb *c,
		     const struct iovec *iov, uint32_t cnt,
		     struct scsi_reply *r)
{
	uint64_t lba;
	uint32_t blocks;
	int n, i, ret;

	n = unmap_checks(lu, c, iov, cnt, r);
	for (i = 0; i < n; i++) {
		tcmu_unmap_get(lu->param, i, &lba, &blocks);
		if (!blocks)
			continue;
		ret = trim(lu, lba, blocks);
		if (ret)
			return store_error(r, ret, true, lba);
	}
}

void scsi_execute(struct scsi_lu *lu, const uint8_t *cdb, size_t cdb_len,
		  const struct iovec *iov, uint32_t iov_cnt,
		  struct scsi_reply *r)
{
	struct tcmu_cdb c;
	struct tcmu_sense s;
	int len;

	good(r);
	if (tcmu_cdb_parse(cdb, cdb_len, &c, &s))
		return scsi_reply_sense(r, &s);
	if (write_protected(lu, &c, r))
		return;

	switch (c.cls) {
	case TCMU_CDB_TEST_UNIT_READY:
		return;
	case TCMU_CDB_READ:
		return do_read(lu, &c, iov, iov_cnt, r);
	case TCMU_CDB_WRITE:
		return do_write(lu, &c, iov, iov_cnt, r);
	case TCMU_CDB_SYNC:
		return do_sync(lu, &c, r);
	case TCMU_CDB_WRITE_SAME:
		return do_write_same(lu, &c, iov, iov_cnt, r);
	case TCMU_CDB_UNMAP:
		return do_unmap(lu, &c, iov, iov_cnt, r);
	case TCMU_CDB_INQUIRY:
		len = scsi_inquiry(lu->t, &c, lu->resp, &s);
		break;
	case TCMU_CDB_READ_CAPACITY_10:
	case TCMU_CDB_READ_CAPACITY_16:
		len = scsi_read_capacity(lu->t, &c, lu->resp, &s);
		break;
	case TCMU_CDB_MODE_SENSE:
		len = scsi_mode_sense(lu->t, &c, lu->resp, &s);
		break;
	case TCMU_CDB_REPORT_OPCODES:
		len = scsi_report_opcodes(lu->t, &c, lu->resp, &s);
		break;
	default:
		return check(r, SCSI_SK_ILLEGAL_REQUEST,
			     SCSI_ASC_INVALID_OPCODE, 0);
	}
	if (len < 0)
		return scsi_reply_sense(r, &s);
	data_in(lu, &c, len, iov, iov_cnt, r);
}

/* ---- the asynchronous path ---- */

static enum scsi_plan start(struct scsi_io *io, uint8_t op, uint64_t lba,
			    uint64_t blocks, uint32_t bs)
{
	io->bio.op = op;
	io->bio.off = lba * bs;
	io->bio.len = blocks * bs;
	io->lba = lba;
	return SCSI_PLAN_START;
}

static enum scsi_plan prepare_rw(struct scsi_lu *lu, const struct tcmu_cdb *c,
				 const struct iovec *iov, uint32_t cnt,
				 bool write, struct scsi_io *io,
				 struct scsi_reply *r)
{
	if (rw_checks(lu, c, iov_total(iov, cnt), r) || !c->blocks)
		return SCSI_PLAN_DONE;
	io->bio.iov = iov;
	io->bio.iov_cnt = cnt;
	if (write && (c->flags & TCMU_CDB_F_FUA))
		io->bio.flags |= STORE_IO_FUA;
	return start(io, write ? STORE_IO_WRITE : STORE_IO_READ, c->lba,
		     c->blocks, lu->t->block_size);
}

static enum scsi_plan prepare_unmap(struct scsi_lu *lu,
				    const struct tcmu_cdb *c,
				    const struct iovec *iov, uint32_t cnt,
				    struct scsi_io *io, struct scsi_reply *r)
{
	uint32_t blocks, one = 0;
	uint64_t lba, one_lba = 0;
	int n, i;

	n = unmap_checks(lu, c, iov, cnt, r);
	if (n < 0)
		return SCSI_PLAN_DONE;
	for (i = 0; i < n; i++) {
		tcmu_unmap_get(lu->param, i, &lba, &blocks);
		if (!blocks)
			continue;
		if (one)
			return SCSI_PLAN_SYNC;	/* several ranges */
		one = blocks;
		one_lba = lba;
	}
	if (!one)
		return SCSI_PLAN_DONE;
	return start(io, STORE_IO_TRIM, one_lba, one, lu->t->block_size);
}

enum scsi_plan scsi_prepare(struct scsi_lu *lu, const uint8_t *cdb,
			    size_t cdb_len, const struct iovec *iov,
			    uint32_t iov_cnt, struct scsi_io *io,
			    struct scsi_reply *r)
{
	struct tcmu_cdb c;
	struct tcmu_sense s;
	bool zero;

	good(r);
	memset(&io->bio, 0, sizeof(io->bio));
	io->bio.cdb = cdb;
	io->bio.cdb_max = cdb_len;
	if (tcmu_cdb_parse(cdb, cdb_len, &c, &s))
		return SCSI_PLAN_SYNC;
	if (write_protected(lu, &c, r))
		return SCSI_PLAN_DONE;

	switch (c.cls) {
	case TCMU_CDB_READ:
		return prepare_rw(lu, &c, iov, iov_cnt, false, io, r);
	case TCMU_CDB_WRITE:
		return prepare_rw(lu, &c, iov, iov_cnt, true, io, r);
	case TCMU_CDB_SYNC:
		if (tcmu_cdb_check_range(&c, lu->t->nr_blocks, &s)) {
			scsi_reply_sense(r, &s);
			return SCSI_PLAN_DONE;
		}
		return start(io, STORE_IO_FLUSH, c.lba, 0, 0);
	case TCMU_CDB_UNMAP:
		return prepare_unmap(lu, &c, iov, iov_cnt, io, r);
	case TCMU_CDB_WRITE_SAME:
		if (ws_checks(lu, &c, iov, iov_cnt, r, &zero))
			return SCSI_PLAN_DONE;
		if (!zero)
			return SCSI_PLAN_SYNC;	/* a pattern, many writes */
		return start(io, ws_trims(lu, &c) ? STORE_IO_TRIM :
			     STORE_IO_ZERO, c.lba, c.blocks,
			     lu->t->block_size);
	default:
		return SCSI_PLAN_SYNC;
	}
}

void scsi_finish(const struct scsi_lu *lu, const struct scsi_io *io, int err,
		 struct scsi_reply *r)
{
	(void)lu;
	good(r);
	/* As trim(): a store that cannot trim has done nothing wrong. */
	if (io->bio.op == STORE_IO_TRIM && err == -EOPNOTSUPP)
		err = 0;
	if (err && io->bio.op == STORE_IO_FLUSH)
		flush_error(r, err, io->lba);
	else if (err)
		store_error(r, err, io->bio.op != STORE_IO_READ, io->lba);
}
