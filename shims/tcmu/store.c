// SPDX-License-Identifier: GPL-2.0-only
/*
 * The store behind the device, from --backend: the storage library's
 * memory, null and file stores, the NBD store (backend_nbd.c) and the
 * tcmu-runner plugin host (runner/).
 */
#include <stdio.h>

#include "backends.h"
#include "shim.h"

static struct backend *open_kind(const struct shim_config *cfg, char *err,
				 size_t errlen)
{
	const struct store_spec *st = &cfg->store;
	unsigned int flags = st->direct ? BACKEND_FILE_DIRECT : 0;

	switch (st->kind) {
	case STORE_MEMORY:
		return backend_memory_open(cfg->size, err, errlen);
	case STORE_NULL:
		return backend_null_open(cfg->size, err, errlen);
	case STORE_FILE:
		return backend_file_open_flags(st->path, cfg->size, flags, err,
					       errlen);
	case STORE_NBD:
		return tcmu_nbd_backend_open(st->uri, cfg->timeout_s, err,
					     errlen);
	case STORE_RUNNER:
		return tcmu_runner_backend_open(st->subtype, cfg->plugin_dir,
						st->cfg, cfg->size,
						cfg->block_size, err, errlen);
	}
	snprintf(err, errlen, "unknown backend");
	return NULL;
}

struct backend *store_open(const struct shim_config *cfg, bool *lbprz,
			   char *err, size_t errlen)
{
	struct backend *be = open_kind(cfg, err, errlen);

	if (!be)
		return NULL;
	/*
	 * Only where a trim is known to leave zeroes: a file system may keep
	 * the data (no holes), and the others do not say.
	 */
	*lbprz = cfg->store.kind == STORE_MEMORY ||
		 cfg->store.kind == STORE_NULL;
	if (be->size < cfg->block_size) {
		snprintf(err, errlen,
			 "--backend %s: the store holds %llu bytes, less than one %u-byte block",
			 cfg->store.arg, (unsigned long long)be->size,
			 cfg->block_size);
		backend_close(be);
		return NULL;
	}
	return be;
}
