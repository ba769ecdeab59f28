// SPDX-License-Identifier: GPL-2.0-only
/*
 * The store behind the device, from --store: any store of the registry
 * (storage/store.h), checked to hold at least one block.
 */
#include <stdio.h>

#include "shim.h"

struct store *store_open_device(const struct shim_config *cfg,
				struct store_caps *caps, char *err,
				size_t errlen)
{
	struct store_params p = {
		.size = cfg->size,
		.sector_size = cfg->block_size,
		.block_size = cfg->block_size,
		.timeout_s = cfg->timeout_s,
		.name = "default",
		.copy = -1,
	};
	struct store *st = store_open(&cfg->store, &p, err, errlen);

	if (!st)
		return NULL;
	/*
	 * Only where a trim is known to leave zeroes: a file system may keep
	 * the data (no holes), and the others do not say.
	 */
	caps->lbprz = store_has(&cfg->store, STORE_TRIM_ZEROES);
	/*
	 * A store that drops trims is offered fully provisioned, so that no
	 * UNMAP is completed for work that never reaches the data.
	 */
	caps->thin = store_can_trim(&cfg->store, st);
	caps->lbprz = caps->lbprz && caps->thin;
	/* MODE SENSE's WCE, so that initiators flush when it matters. */
	caps->write_cache = store_write_cache(&cfg->store, st);
	if (st->size < cfg->block_size) {
		snprintf(err, errlen,
			 "--store %s: the store holds %llu bytes, less than one %u-byte block",
			 cfg->store.arg, (unsigned long long)st->size,
			 cfg->block_size);
		store_close(st);
		return NULL;
	}
	return st;
}
