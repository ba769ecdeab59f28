/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The stores on a shim's command line: --store and the flags the stores
 * bring (storage/store.h), the same in both shims. A store's flags are
 * collected as they come and applied once --store is known, so their
 * order does not matter.
 */
#ifndef SHIM_STORE_H
#define SHIM_STORE_H

#include <getopt.h>

#include "store.h"

/* getopt values from here on are the stores' flags. */
#define SHIM_STORE_OPT		1000
#define SHIM_MAX_OPTS		64
#define SHIM_MAX_STORE_FLAGS	16

struct shim_store_flags {
	int n;
	const char *name[SHIM_MAX_STORE_FLAGS];
	const char *value[SHIM_MAX_STORE_FLAGS];
};

/* @base (NULL-terminated) and every store's flags into @out. */
void shim_options(struct option out[SHIM_MAX_OPTS],
		  const struct option *base);

/* getopt gave @val >= SHIM_STORE_OPT: note it. 0, or -1 (shim_bad). */
int shim_store_flag(struct shim_store_flags *sf, int val, const char *value);

/*
 * --store's value into spec: 0, or -1 (shim_bad). The noted flags,
 * applied to the chosen store: 0, or -1 (shim_bad).
 */
int shim_store_parse(struct store_spec *spec, const char *arg);
int shim_store_apply(struct store_spec *spec,
		     const struct shim_store_flags *sf);

#endif /* SHIM_STORE_H */
