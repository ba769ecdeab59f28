/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The TCMU shared region, no I/O: the layout the kernel gives a user
 * backstore (<linux/target_core_user.h>) and what both sides of its
 * command ring need. The submitter (the kernel's role, played by the
 * engine) is tcmu_ring_sub.h, the handler that consumes the ring
 * tcmu_ring_hdl.h. Wake-ups (eventfd, UIO fd) belong to the owners.
 */
#ifndef TORUS_TCMU_RING_H
#define TORUS_TCMU_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * The UAPI header pulls in <linux/uio.h>, whose struct iovec clashes with
 * libc's (same layout): keep libc's, so that socket code can include both.
 */
#ifndef __LINUX_UIO_H
#define __LINUX_UIO_H
#endif
#include <linux/types.h>
#include <linux/target_core_user.h>

/* The kernel's defaults: an 8 MiB map before the data area, 1 GiB of data. */
#define TCMU_MB_SIZE		((uint32_t)sizeof(struct tcmu_mailbox))
#define TCMU_DEF_CMDR_SIZE	((8u << 20) - TCMU_MB_SIZE)
#define TCMU_DEF_DATA_SIZE	(1ull << 30)
#define TCMU_DEF_BLK_SIZE	4096u
/* What we offer: out-of-order completion and short reads. */
#define TCMU_RING_FLAGS		(TCMU_MAILBOX_FLAG_CAP_OOOC | \
				 TCMU_MAILBOX_FLAG_CAP_READ_LEN)
/* The longest CDB SCSI defines (variable length, 260 bytes). */
#define TCMU_CDB_MAX		260u

/* Entries: aligned, never shorter than a response, iovecs from here. */
#define TCMU_ENT_ALIGN		((uint32_t)TCMU_OP_ALIGN_SIZE)
#define TCMU_ENT_MIN		((uint32_t)sizeof(struct tcmu_cmd_entry))
#define TCMU_IOV_OFF		((uint32_t)offsetof(struct tcmu_cmd_entry, \
						    req.iov))

/* Bytes needed for a region of this ring and data size. */
uint64_t tcmu_region_size(uint32_t cmdr_size, uint64_t data_size);

/*
 * Lay out mailbox and ring in @mem (@mem_size bytes, at least
 * tcmu_region_size()): version 2, @flags, cmdr_off right after the
 * mailbox, head = tail = 0. The data area is left as it is.
 * -EINVAL when a size is not a multiple of 8 or does not fit.
 */
int tcmu_region_layout(void *mem, uint64_t mem_size, uint32_t cmdr_size,
		       uint64_t data_size, uint16_t flags);

/* Bytes of the entry a command with @iov_cnt iovecs and a CDB needs. */
uint32_t tcmu_cmd_entry_size(uint32_t iov_cnt, uint32_t cdb_len);

/* Bytes from @tail up to @head, going round a ring of @size. */
static inline uint32_t tcmu_ring_used(uint32_t head, uint32_t tail,
				      uint32_t size)
{
	return (head + size - tail) % size;
}

/* cmd_head and cmd_tail are packed: atomics go through their offset. */
static inline uint32_t *tcmu_mb_head(void *region)
{
	return (uint32_t *)((uint8_t *)region +
			    offsetof(struct tcmu_mailbox, cmd_head));
}

static inline uint32_t *tcmu_mb_tail(void *region)
{
	return (uint32_t *)((uint8_t *)region +
			    offsetof(struct tcmu_mailbox, cmd_tail));
}

#endif /* TORUS_TCMU_RING_H */
