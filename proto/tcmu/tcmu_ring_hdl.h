/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The handler's side of a TCMU command ring, no I/O: tcmu_hdl_next() hands
 * out commands with the CDB and iovecs as pointers, after checking every
 * offset and length in the entry against the region; tcmu_hdl_complete()
 * answers one and moves cmd_tail. The layout is tcmu_ring.h.
 */
#ifndef TORUS_TCMU_RING_HDL_H
#define TORUS_TCMU_RING_HDL_H

#include "tcmu_ring.h"

struct tcmu_hdl {
	uint8_t *base;
	uint64_t size;
	uint32_t cmdr_off, cmdr_size;	/* read once, checked */
	uint64_t data_off;
	uint32_t next;			/* next entry to read */
	uint32_t tail;			/* completions retired up to here */
};

struct tcmu_hdl_cmd {
	uint16_t cmd_id;
	uint8_t kflags;			/* the submitter's (a shared ring's wake tag) */
	/* In the ring: parse it before the next tcmu_hdl_complete(). */
	const uint8_t *cdb;
	uint32_t cdb_max;		/* bytes readable at cdb (<= TCMU_CDB_MAX) */
	uint32_t iov_cnt;
	struct iovec *iov;		/* caller's array, pointers into the region */
	uint32_t iov_max;		/* its size */
};

/* Check the mailbox (version 2, ring inside @size) and start at cmd_tail. */
int tcmu_hdl_init(struct tcmu_hdl *h, void *region, uint64_t size);
/*
 * Next command: 1 with @cmd filled, 0 when nothing is new, -EINVAL when
 * the entry is malformed (cmd->cmd_id set: complete it with a CHECK
 * CONDITION), -EPROTO when the ring cannot be walked (stop). PAD entries
 * are skipped, others are marked TCMU_UFLAG_UNKNOWN_OP and skipped.
 */
int tcmu_hdl_next(struct tcmu_hdl *h, struct tcmu_hdl_cmd *cmd);
/*
 * Whether cmd_head has moved past what tcmu_hdl_next() took (acquire):
 * the handler's last look before it sleeps.
 */
static inline bool tcmu_hdl_pending(const struct tcmu_hdl *h)
{
	return __atomic_load_n(tcmu_mb_head(h->base), __ATOMIC_ACQUIRE) !=
	       h->next;
}

/*
 * Complete the oldest unretired entry as @cmd_id (OOOC): status, sense
 * (up to TCMU_SENSE_BUFFERSIZE bytes, may be NULL), a short read's length
 * when @read_len >= 0; then cmd_tail moves (release store). -EPROTO when
 * nothing is outstanding.
 */
int tcmu_hdl_complete(struct tcmu_hdl *h, uint16_t cmd_id, uint8_t status,
		      const void *sense, uint32_t sense_len, int64_t read_len);

#endif /* TORUS_TCMU_RING_HDL_H */
