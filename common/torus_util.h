/* SPDX-License-Identifier: GPL-2.0-only */
/* Small helpers shared by the shims and the storage library. */
#ifndef TORUS_UTIL_H
#define TORUS_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "torus_clock.h"

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

#endif /* TORUS_UTIL_H */
