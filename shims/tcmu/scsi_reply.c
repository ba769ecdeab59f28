// SPDX-License-Identifier: GPL-2.0-only
/*
 * The SCSI target's replies (scsi_target_int.h): GOOD, CHECK CONDITION
 * with its sense, a store's errors turned into sense, data-in built by
 * the target; and the command's buffers they and the data commands move
 * data through.
 */
#include <errno.h>
#include <string.h>

#include "scsi_target.h"
#include "scsi_target_int.h"

/* ---- the command's buffers ---- */

uint64_t scsi_iov_total(const struct iovec *iov, uint32_t cnt)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* Copy the first @len bytes of the buffers to @dst. */
void scsi_iov_gather(const struct iovec *iov, uint32_t cnt, void *dst,
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
void scsi_iov_scatter(const struct iovec *iov, uint32_t cnt,
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

void scsi_reply_good(struct scsi_reply *r)
{
	memset(r, 0, sizeof(*r));
	r->read_len = -1;
}

void scsi_reply_sense(struct scsi_reply *r, const struct tcmu_sense *s)
{
	r->status = SCSI_STATUS_CHECK_CONDITION;
	r->sense_len = tcmu_sense_fixed(r->sense, sizeof(r->sense), s);
}

void scsi_reply_check(struct scsi_reply *r, uint8_t key, uint8_t asc,
		      uint8_t ascq)
{
	struct tcmu_sense s;

	tcmu_sense_set(&s, key, asc, ascq);
	scsi_reply_sense(r, &s);
}

void scsi_reply_invalid(struct scsi_reply *r, uint16_t byte, int bit)
{
	struct tcmu_sense s;

	tcmu_sense_invalid_field(&s, true, byte, bit);
	scsi_reply_sense(r, &s);
}

/*
 * A command that would change the data of a write-protected unit: DATA
 * PROTECT before anything reaches the store.
 */
bool scsi_write_protected(const struct scsi_lu *lu,
			  const struct tcmu_cdb *c, struct scsi_reply *r)
{
	if (!lu->t->write_protect ||
	    (c->cls != TCMU_CDB_WRITE && c->cls != TCMU_CDB_WRITE_SAME &&
	     c->cls != TCMU_CDB_UNMAP))
		return false;
	r->error = EROFS;
	scsi_reply_check(r, SCSI_SK_DATA_PROTECT, SCSI_ASC_WRITE_PROTECTED, 0);
	return true;
}

/* A store's failure: the first block of the command in INFORMATION. */
void scsi_store_error(struct scsi_reply *r, int err, bool write,
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
void scsi_flush_error(struct scsi_reply *r, int err, uint64_t lba)
{
	if (err == -EOPNOTSUPP) {
		r->error = EOPNOTSUPP;
		return scsi_reply_check(r, SCSI_SK_ILLEGAL_REQUEST,
					SCSI_ASC_INVALID_OPCODE, 0);
	}
	scsi_store_error(r, err, true, lba);
}

/* Data-in built in lu->resp: truncated to the allocation length. */
void scsi_data_in(struct scsi_lu *lu, const struct tcmu_cdb *c, int len,
		  const struct iovec *iov, uint32_t cnt,
		  struct scsi_reply *r)
{
	uint64_t room = scsi_iov_total(iov, cnt);
	size_t n = len;

	if (n > c->alloc_len)
		n = c->alloc_len;
	if (n > room)
		n = room;
	scsi_iov_scatter(iov, cnt, lu->resp, n);
	if (n < room)
		r->read_len = n;
}
