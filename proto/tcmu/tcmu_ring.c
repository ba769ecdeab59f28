// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU shared region's layout, common to both sides (see tcmu_ring.h);
 * the sides are tcmu_ring_sub.c and tcmu_ring_hdl.c.
 */
#include <errno.h>
#include <string.h>

#include "tcmu_ring.h"

uint64_t tcmu_region_size(uint32_t cmdr_size, uint64_t data_size)
{
	return (uint64_t)TCMU_MB_SIZE + cmdr_size + data_size;
}

int tcmu_region_layout(void *mem, uint64_t mem_size, uint32_t cmdr_size,
		       uint64_t data_size, uint16_t flags)
{
	struct tcmu_mailbox *mb = mem;

	if (!cmdr_size || cmdr_size % TCMU_ENT_ALIGN ||
	    cmdr_size > UINT32_MAX - TCMU_MB_SIZE ||
	    data_size > UINT64_MAX / 2 ||
	    tcmu_region_size(cmdr_size, data_size) > mem_size)
		return -EINVAL;
	memset(mb, 0, TCMU_MB_SIZE);
	mb->version = TCMU_MAILBOX_VERSION;
	mb->flags = flags;
	mb->cmdr_off = TCMU_MB_SIZE;
	mb->cmdr_size = cmdr_size;
	return 0;
}

uint32_t tcmu_cmd_entry_size(uint32_t iov_cnt, uint32_t cdb_len)
{
	uint32_t base = TCMU_IOV_OFF + iov_cnt * (uint32_t)sizeof(struct iovec);

	/* As the kernel: never shorter than the response needs. */
	if (base < TCMU_ENT_MIN)
		base = TCMU_ENT_MIN;
	return (base + cdb_len + TCMU_ENT_ALIGN - 1) & ~(TCMU_ENT_ALIGN - 1);
}
