/* SPDX-License-Identifier: GPL-2.0-only */
/* Monotonic time for deadlines and rates, in one place. */
#ifndef TORUS_CLOCK_H
#define TORUS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline uint64_t now_ms(void)
{
	return now_ns() / 1000000;
}

#endif /* TORUS_CLOCK_H */
