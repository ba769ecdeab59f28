/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared by the fuzz targets: the libFuzzer entry point and a check that,
 * unlike assert(), stays on in every build (the replay runs release code).
 */
#ifndef TORUS_FUZZ_H
#define TORUS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: invariant broken: %s\n",\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

/* Split sizes and choices drawn from a seed in the input (xorshift32). */
struct fuzz_rng {
	uint32_t s;
};

static inline void fuzz_rng_init(struct fuzz_rng *r, uint32_t seed)
{
	r->s = seed ? seed : 0x9e3779b9u;
}

static inline uint32_t fuzz_rng_next(struct fuzz_rng *r)
{
	uint32_t x = r->s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return r->s = x;
}

/*
 * A chunk size from 1 to max: single bytes, short runs, long runs and
 * everything at once, so that every message is seen cut at every point.
 */
static inline size_t fuzz_split(struct fuzz_rng *r, size_t max)
{
	uint32_t v = fuzz_rng_next(r);
	size_t n;

	if (!max)
		return 0;
	switch (v & 3) {
	case 0:
		n = 1;
		break;
	case 1:
		n = 1 + (v >> 2) % 32;
		break;
	case 2:
		n = 1 + (v >> 2) % 4096;
		break;
	default:
		n = max;
		break;
	}
	return n < max ? n : max;
}

#endif /* TORUS_FUZZ_H */
