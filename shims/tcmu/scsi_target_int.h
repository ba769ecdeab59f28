/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Internal to the SCSI target (scsi_target.c dispatches, on both paths):
 * the replies and the command's buffers (scsi_reply.c) and the data
 * commands with their checks (scsi_data.c). Each check returns 0, or -1
 * (or a negative count) with the reply made.
 */
#ifndef TCMU_SHIM_SCSI_TARGET_INT_H
#define TCMU_SHIM_SCSI_TARGET_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "scsi_target.h"

/* scsi_reply.c: the command's buffers. */
uint64_t scsi_iov_total(const struct iovec *iov, uint32_t cnt);
void scsi_iov_gather(const struct iovec *iov, uint32_t cnt, void *dst,
		     size_t len);
void scsi_iov_scatter(const struct iovec *iov, uint32_t cnt,
		      const void *src, size_t len);

/* scsi_reply.c: replies. */
void scsi_reply_good(struct scsi_reply *r);
void scsi_reply_check(struct scsi_reply *r, uint8_t key, uint8_t asc,
		      uint8_t ascq);
void scsi_reply_invalid(struct scsi_reply *r, uint16_t byte, int bit);
bool scsi_write_protected(const struct scsi_lu *lu,
			  const struct tcmu_cdb *c, struct scsi_reply *r);
void scsi_store_error(struct scsi_reply *r, int err, bool write,
		      uint64_t lba);
void scsi_flush_error(struct scsi_reply *r, int err, uint64_t lba);
void scsi_data_in(struct scsi_lu *lu, const struct tcmu_cdb *c, int len,
		  const struct iovec *iov, uint32_t cnt,
		  struct scsi_reply *r);

/* scsi_data.c: the checks the asynchronous path shares. */
int scsi_rw_checks(struct scsi_lu *lu, const struct tcmu_cdb *c,
		   uint64_t room, struct scsi_reply *r);
int scsi_ws_checks(struct scsi_lu *lu, const struct tcmu_cdb *c,
		   const struct iovec *iov, uint32_t cnt,
		   struct scsi_reply *r, bool *zero);
bool scsi_ws_trims(const struct scsi_lu *lu, const struct tcmu_cdb *c);
int scsi_unmap_checks(struct scsi_lu *lu, const struct tcmu_cdb *c,
		      const struct iovec *iov, uint32_t cnt,
		      struct scsi_reply *r);

/* scsi_data.c: the data commands. */
void scsi_read(struct scsi_lu *lu, const struct tcmu_cdb *c,
	       const struct iovec *iov, uint32_t cnt, struct scsi_reply *r);
void scsi_write(struct scsi_lu *lu, const struct tcmu_cdb *c,
		const struct iovec *iov, uint32_t cnt, struct scsi_reply *r);
void scsi_sync(struct scsi_lu *lu, const struct tcmu_cdb *c,
	       struct scsi_reply *r);
void scsi_write_same(struct scsi_lu *lu, const struct tcmu_cdb *c,
		     const struct iovec *iov, uint32_t cnt,
		     struct scsi_reply *r);
void scsi_unmap(struct scsi_lu *lu, const struct tcmu_cdb *c,
		const struct iovec *iov, uint32_t cnt, struct scsi_reply *r);

#endif /* TCMU_SHIM_SCSI_TARGET_INT_H */
