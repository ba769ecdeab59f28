/* SPDX-License-Identifier: GPL-2.0-only */
/* Small integer helpers shared by the engine and the shims. */
#ifndef TORUS_BITS_H
#define TORUS_BITS_H

#include <stdbool.h>
#include <stdint.h>

static inline bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

#endif /* TORUS_BITS_H */
