/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The timeline's clock: CLOCK_MONOTONIC in ns, for the stamps a writer
 * takes on every I/O. Where the kernel keeps CLOCK_MONOTONIC on the TSC
 * (its clocksource is "tsc", x86-64), a stamp is one RDTSC mapped onto
 * CLOCK_MONOTONIC by a pair of readings of both, taken again every
 * millisecond, and the rate between the pairs. clock_gettime() reads the
 * same TSC behind a fence that waits for every earlier load, which is
 * what makes it the dearer of the two. Elsewhere a stamp is
 * clock_gettime(). fio chooses its own clock the same way.
 *
 * A stamp is within TL_CLOCK_SLACK_NS of clock_gettime() read at the same
 * moment, and never earlier than the writer's previous stamp. A clock
 * belongs to one thread.
 */
#ifndef TORUS_TIMELINE_CLOCK_H
#define TORUS_TIMELINE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "torus_clock.h"

/* Tested by tests/unit/test_timeline_clock.c. */
#define TL_CLOCK_SLACK_NS	200
/*
 * A pair whose reads are more than 1 µs apart (about 0.1 µs, usually) is
 * no pair: something got in between. Its midpoint is then off by half
 * that at most: what scripts/timelinelib.py's join allows (SLACK_NS).
 */
#define TL_CLOCK_PAIR_MAX_NS	1000ULL

struct tl_clock {
	bool tsc;			/* false: clock_gettime() */
	uint64_t tsc0, ns0;		/* the latest pair */
	uint64_t base_tsc, base_ns;	/* the pair the rate is measured from */
	uint64_t mult;			/* ns per tick, times 2^32 */
	uint64_t renew;			/* ticks from one pair to the next */
	uint64_t last;			/* the latest stamp */
};

/*
 * Sets c up: on the TSC when allow_tsc and the kernel's clocksource is
 * the TSC (taking about a millisecond to measure its rate), else on
 * clock_gettime().
 */
void tl_clock_init(struct tl_clock *c, bool allow_tsc);

/*
 * A pair's reads @gap ticks apart are close enough together to trust: at
 * most TL_CLOCK_PAIR_MAX_NS at c's rate.
 */
bool tl_clock_pair_ok(const struct tl_clock *c, uint64_t gap);

/* A new pair, and the stamp for now. */
uint64_t tl_clock_renew(struct tl_clock *c);

/* ns as the stamp for now: never before the clock's previous stamp. */
static inline uint64_t tl_clock_keep(struct tl_clock *c, uint64_t ns)
{
	if (ns < c->last)
		ns = c->last;
	c->last = ns;
	return ns;
}

static inline uint64_t tl_clock_now(struct tl_clock *c)
{
#if defined(__x86_64__)
	if (c->tsc) {
		uint64_t ticks = __builtin_ia32_rdtsc() - c->tsc0;

		/* Also a TSC behind the pair's (another CPU's): wraps high. */
		if (ticks >= c->renew)
			return tl_clock_renew(c);
		return tl_clock_keep(c, c->ns0 + ((ticks * c->mult) >> 32));
	}
#endif
	return now_ns();
}

#endif /* TORUS_TIMELINE_CLOCK_H */
