// SPDX-License-Identifier: GPL-2.0-only
/*
 * The SCSI target (see scsi_target.h): the unit's set-up, and each
 * command dispatched, on the synchronous path (scsi_execute()) or the
 * asynchronous one (scsi_prepare(), scsi_finish()). CDBs are parsed and
 * checked by proto/tcmu/tcmu_cdb_parse.c; the data commands are in
 * scsi_data.c, the replies and sense in scsi_reply.c, the pages the
 * target builds itself in scsi_pages.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scsi_pages.h"
#include "scsi_target.h"
#include "scsi_target_int.h"

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

void scsi_execute(struct scsi_lu *lu, const uint8_t *cdb, size_t cdb_len,
		  const struct iovec *iov, uint32_t iov_cnt,
		  struct scsi_reply *r)
{
	struct tcmu_cdb c;
	struct tcmu_sense s;
	int len;

	scsi_reply_good(r);
	if (tcmu_cdb_parse(cdb, cdb_len, &c, &s))
		return scsi_reply_sense(r, &s);
	if (scsi_write_protected(lu, &c, r))
		return;

	switch (c.cls) {
	case TCMU_CDB_TEST_UNIT_READY:
		return;
	case TCMU_CDB_READ:
		return scsi_read(lu, &c, iov, iov_cnt, r);
	case TCMU_CDB_WRITE:
		return scsi_write(lu, &c, iov, iov_cnt, r);
	case TCMU_CDB_SYNC:
		return scsi_sync(lu, &c, r);
	case TCMU_CDB_WRITE_SAME:
		return scsi_write_same(lu, &c, iov, iov_cnt, r);
	case TCMU_CDB_UNMAP:
		return scsi_unmap(lu, &c, iov, iov_cnt, r);
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
		return scsi_reply_check(r, SCSI_SK_ILLEGAL_REQUEST,
					SCSI_ASC_INVALID_OPCODE, 0);
	}
	if (len < 0)
		return scsi_reply_sense(r, &s);
	scsi_data_in(lu, &c, len, iov, iov_cnt, r);
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
	if (scsi_rw_checks(lu, c, scsi_iov_total(iov, cnt), r) || !c->blocks)
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

	n = scsi_unmap_checks(lu, c, iov, cnt, r);
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

	scsi_reply_good(r);
	memset(&io->bio, 0, sizeof(io->bio));
	io->bio.cdb = cdb;
	io->bio.cdb_max = cdb_len;
	if (tcmu_cdb_parse(cdb, cdb_len, &c, &s))
		return SCSI_PLAN_SYNC;
	if (scsi_write_protected(lu, &c, r))
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
		if (scsi_ws_checks(lu, &c, iov, iov_cnt, r, &zero))
			return SCSI_PLAN_DONE;
		if (!zero)
			return SCSI_PLAN_SYNC;	/* a pattern, many writes */
		return start(io, scsi_ws_trims(lu, &c) ? STORE_IO_TRIM :
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
	scsi_reply_good(r);
	/* As in scsi_data.c: a store that cannot trim has done nothing wrong. */
	if (io->bio.op == STORE_IO_TRIM && err == -EOPNOTSUPP)
		err = 0;
	if (err && io->bio.op == STORE_IO_FLUSH)
		scsi_flush_error(r, err, io->lba);
	else if (err)
		scsi_store_error(r, err, io->bio.op != STORE_IO_READ, io->lba);
}
