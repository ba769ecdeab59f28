/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The stores a shim's --store names, in one registry (store.c). A store
 * is where data lives: memory, null, file, redis (0-Disk's layout), nbd
 * (an NBD export) and runner (a tcmu-runner plugin). Each brings, in its
 * own file, one struct store_type: its name, argument syntax, help, its
 * flags (options beyond --store, such as --plugin-dir), the parser and
 * the opener; the registry's STORES (bridges/store.c, over every store)
 * lists them. Both shims parse, list and open stores through this header
 * only, so a new store is its file, one line in STORES and one in its
 * folder's meson.build (CONTRIBUTING.md).
 *
 * Layers (replication, coreos-torus blocks, shaping) are not stores: they
 * are stacked over one by a shim's profile (store_ops.h).
 */
#ifndef TORUS_STORAGE_STORE_H
#define TORUS_STORAGE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "store_ops.h"

/* What the shim knows when it opens the store. */
struct store_params {
	uint64_t size;			/* --size; 0: the store's own */
	uint32_t sector_size;		/* the block the device is addressed in */
	uint32_t block_size;		/* the store's working block (redis) */
	unsigned int timeout_s;		/* connecting; 0: no limit */
	const char *name;		/* the export (redis's default vdisk) */
	int copy;			/* -1: the one copy; else its index */
};

/* A flag a store adds to the shims' command lines (--NAME ARG). */
struct store_flag {
	const char *name;		/* without the dashes */
	const char *arg;		/* "DIR", for --help */
	const char *help;		/* lines for --help, "\n" between */
	const char *dflt;		/* for --help's "(default: ...)"; NULL */
};

/* --size is required (the store has no size of its own). */
#define STORE_NEEDS_SIZE	(1u << 0)
/* The store's size is the device's: --size does not apply. */
#define STORE_OWN_SIZE		(1u << 1)
/* Trimmed blocks read back as zeroes. */
#define STORE_TRIM_ZEROES	(1u << 2)
/* Copies (params.copy >= 0) are separate data: the store can be replicated. */
#define STORE_COPIES		(1u << 3)
/* Each connection or ring must take its own store_session(). */
#define STORE_SESSIONS		(1u << 4)
/* Writes are dropped: every read returns zeroes (null). */
#define STORE_NO_DATA		(1u << 5)

struct store_type {
	const char *name;		/* "file": --store file:... */
	const char *usage;		/* "file:PATH[,direct]" */
	const char *help;		/* lines for --help, "\n" between */
	unsigned int flags;		/* STORE_* */
	const struct store_flag *store_flags;	/* NULL-terminated, or NULL */
	size_t priv_size;		/* the parsed argument, zeroed first */
	/*
	 * @arg: what follows "NAME:" in --store, NULL when there is no
	 * colon. 0, or -1 with the reason (and the fix) in err. NULL: the
	 * store takes no argument.
	 */
	int (*parse)(void *priv, const char *arg, char *err, size_t errlen);
	/* --NAME VALUE of one of store_flags: 0 or -1 as parse. */
	int (*set_flag)(void *priv, const char *name, const char *value,
			char *err, size_t errlen);
	struct store *(*open)(const void *priv, const struct store_params *p,
			      char *err, size_t errlen);
	/*
	 * Optional: false when the open store cannot pass a trim on (an NBD
	 * server that did not offer TRIM). NULL: every trim reaches the data.
	 */
	bool (*can_trim)(const struct store *st);
	/*
	 * Optional: whether the open store keeps written data in a volatile
	 * cache that a flush empties (a tcmu-runner plugin says so itself).
	 * NULL: it does, so initiators send their flushes.
	 */
	bool (*write_cache)(const struct store *st);
};

/* The registry: every store, NULL-terminated (store.c). */
extern const struct store_type *const store_types[];

/* --store as given, parsed; free with store_spec_free(). */
struct store_spec {
	const struct store_type *type;
	const char *arg;
	void *priv;
};

/*
 * Parse --store's value into spec (freeing what it held). 0, or -1 with
 * a message in err that names the problem and the stores' syntax.
 */
int store_parse(struct store_spec *spec, const char *arg, char *err,
		size_t errlen);
void store_spec_free(struct store_spec *spec);

/* The store that owns the flag --@name, or NULL. */
const struct store_type *store_flag_owner(const char *name);

/*
 * --@name @value for the chosen store: 0, or -1 with a message in err
 * (also when the flag belongs to another store).
 */
int store_set_flag(struct store_spec *spec, const char *name,
		   const char *value, char *err, size_t errlen);

/* Open the store; NULL with the reason in err. */
struct store *store_open(const struct store_spec *spec,
			 const struct store_params *p, char *err,
			 size_t errlen);

static inline bool store_has(const struct store_spec *spec,
			     unsigned int flag)
{
	return spec->type->flags & flag;
}

/* Whether @st, opened from @spec, passes trims on to its data. */
static inline bool store_can_trim(const struct store_spec *spec,
				  const struct store *st)
{
	return !spec->type->can_trim || spec->type->can_trim(st);
}

/* Whether @st, opened from @spec, reports a volatile write cache. */
static inline bool store_write_cache(const struct store_spec *spec,
				     const struct store *st)
{
	return !spec->type->write_cache || spec->type->write_cache(st);
}

/* "memory, null, file:PATH[,direct], ... or runner:SUBTYPE:CFG" */
const char *store_usages(void);

/* --help's list of stores, and the stores' flags as option entries. */
void store_help(FILE *f);
void store_flags_help(FILE *f);

#endif /* TORUS_STORAGE_STORE_H */
