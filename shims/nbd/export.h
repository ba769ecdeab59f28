/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one export a shim serves: its name, size, block sizes, the store
 * stack, and the lock coreos-torus takes per volume.
 */
#ifndef SHIM_EXPORT_H
#define SHIM_EXPORT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "store_ops.h"
#include "nbd_wire.h"

struct shim_config;

struct export {
	char name[NBD_MAX_STRING + 1];
	uint64_t size;
	struct store *st;
	uint32_t min_block, pref_block, max_block;
	/* zeroos --advertise-trim; READ_ONLY over a read-only store */
	uint16_t extra_tflags;
	pthread_mutex_t lock;
	bool busy;			/* coreos: a connection holds it */
};

struct shaper;

/*
 * Builds the store stack the profile calls for; with --shape-at storage,
 * sh shapes the operations on the stores.
 */
int export_open(struct export *e, const struct shim_config *cfg,
		struct shaper *sh, char *err, size_t errlen);
void export_close(struct export *e);

static inline bool export_name_is(const struct export *e, const uint8_t *name,
				  size_t len)
{
	return strlen(e->name) == len && !memcmp(e->name, name, len);
}

/* coreos: one connection per volume. */
static inline bool export_try_lock(struct export *e)
{
	bool got;

	pthread_mutex_lock(&e->lock);
	got = !e->busy;
	e->busy = true;
	pthread_mutex_unlock(&e->lock);
	return got;
}

static inline void export_unlock(struct export *e)
{
	pthread_mutex_lock(&e->lock);
	e->busy = false;
	pthread_mutex_unlock(&e->lock);
}

#endif /* SHIM_EXPORT_H */
