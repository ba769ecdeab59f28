// SPDX-License-Identifier: GPL-2.0-only
/* How large a ring to ask for (tcmu_client.h). */
#include "tcmu_client.h"
#include "tcmu_ring.h"

#define MAX_CMDS	65535u		/* what tcmu_sub_init() takes */

uint32_t tcmu_client_cmds_for(uint64_t data_size, uint32_t max_data,
			      uint32_t want, uint32_t least)
{
	uint64_t per_cmd = ((uint64_t)max_data + TCMU_DEF_BLK_SIZE - 1) /
			   TCMU_DEF_BLK_SIZE;
	uint64_t fit = per_cmd ? 4 * (data_size / TCMU_DEF_BLK_SIZE) / per_cmd :
		       want;
	uint64_t n = want;

	if (n > fit)
		n = fit > least ? fit : least;
	return n > MAX_CMDS ? MAX_CMDS : (uint32_t)n;
}
