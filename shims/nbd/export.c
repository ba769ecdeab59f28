// SPDX-License-Identifier: GPL-2.0-only
/*
 * Builds the export's store stack from the configuration: the layers a
 * profile wants over the store --store names (storage/store.h).
 *
 *   coreos    coreos-torus blocks (RMW) -> [shaped] -> [replicate R] -> R copies
 *   zeroos    [shaped] -> any store (redis: 0-Disk's layout)
 *   standard  [shaped] -> any store but redis and nbd (sessions)
 *
 * ("shaped" with --shape-at storage and --latency-us or --bandwidth.)
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "export.h"
#include "profile.h"
#include "shape.h"

/* Largest request the zeroos and standard profiles advertise. */
#define EXPORT_MAX_BLOCK	(32u << 20)

/* Copy @copy (-1: the only one) of the store --store names. */
static struct store *open_store(const struct shim_config *cfg, int copy,
				char *err, size_t errlen)
{
	struct store_params p = {
		.size = cfg->size,
		/* NBD addresses bytes: a plugin gets the common sector */
		.sector_size = 512,
		.block_size = cfg->block_size,
		.timeout_s = 30,
		.name = cfg->export_name,
		.copy = copy,
	};

	return store_open(&cfg->store, &p, err, errlen);
}

/* Storage shaping wraps the stores; writes to R replicas count R times. */
static struct store *maybe_shaped(struct store *st,
				  const struct shim_config *cfg,
				  struct shaper *sh, unsigned int factor,
				  char *err, size_t errlen)
{
	if (!st || !cfg->shape_storage || !shaper_active(sh))
		return st;
	return shaped_open(st, sh, factor, err, errlen);
}

/* coreos: R replicas, the store's copies 0 .. R-1 when R > 1. */
static struct store *open_coreos(const struct shim_config *cfg,
				  struct shaper *sh, char *err, size_t errlen)
{
	struct store *rep[64];
	struct store *st, *raw;
	int i;

	for (i = 0; i < cfg->replicas; i++) {
		rep[i] = open_store(cfg, cfg->replicas > 1 ? i : -1, err,
				    errlen);
		if (!rep[i]) {
			while (i--)
				store_close(rep[i]);
			return NULL;
		}
	}
	if (cfg->replicas == 1) {
		st = rep[0];
	} else {
		st = replicate_open(rep, cfg->replicas, err, errlen);
	}
	raw = st;
	st = maybe_shaped(st, cfg, sh, cfg->replicas, err, errlen);
	if (!st)
		return NULL;
	return coreos_blocks_open(st, raw, cfg->block_size, err, errlen);
}

int export_open(struct export *e, const struct shim_config *cfg,
		struct shaper *sh, char *err, size_t errlen)
{
	const struct profile *prof = cfg->profile;

	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->lock, NULL);
	snprintf(e->name, sizeof(e->name), "%s", cfg->export_name);
	if (prof == &profile_coreos)
		e->st = open_coreos(cfg, sh, err, errlen);
	else
		e->st = open_store(cfg, -1, err, errlen);
	if (prof != &profile_coreos)
		e->st = maybe_shaped(e->st, cfg, sh, 1, err, errlen);
	if (!e->st)
		return -1;
	e->size = e->st->size;
	e->min_block = 1;
	e->pref_block = cfg->block_size;
	e->max_block = EXPORT_MAX_BLOCK;
	if (cfg->advertise_trim)
		e->extra_tflags = NBD_FLAG_SEND_TRIM;
	if (e->st->read_only)
		e->extra_tflags |= NBD_FLAG_READ_ONLY;
	return 0;
}

void export_close(struct export *e)
{
	if (e->st && store_flush(e->st))
		fprintf(stderr, "nbd-shim: flushing the export on exit failed\n");
	store_close(e->st);
	e->st = NULL;
	pthread_mutex_destroy(&e->lock);
}
