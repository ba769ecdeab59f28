// SPDX-License-Identifier: GPL-2.0-only
/* The timeline's clock: see timeline_clock.h. */
#include <stdio.h>
#include <string.h>

#include "timeline_clock.h"

/*
 * A pair every millisecond keeps a stamp within a few ns of the kernel's
 * clock as NTP slews it. The rate comes from pairs at least RATE_MIN_NS
 * apart, where the few tens of ns each pair is off by no longer count;
 * the base pair moves every RATE_MAX_NS so that the rate follows a slew.
 */
#define RENEW_NS	1000000ULL
#define RATE_MIN_NS	100000000ULL
#define RATE_MAX_NS	16000000000ULL
#define PAIR_TRIES	4
#define INIT_TRIES	4

#if defined(__x86_64__)
static inline uint64_t tsc_ordered(void)
{
	__builtin_ia32_lfence();
	return __builtin_ia32_rdtsc();
}

/*
 * One pair: clock_gettime() between two TSC reads, the tightest of a few
 * tries, its TSC halfway between them (the call's own read is in there,
 * give or take half the gap). The gap, in ticks.
 */
static uint64_t pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX, a, b, n;
	int i;

	for (i = 0; i < PAIR_TRIES; i++) {
		a = tsc_ordered();
		n = now_ns();
		b = tsc_ordered();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = n;
		}
	}
	return best;
}

static bool kernel_on_tsc(void)
{
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			"re");
	char buf[32] = "";

	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return !strcmp(buf, "tsc\n");
}

/* The rate from the base pair to the latest. */
static void set_rate(struct tl_clock *c)
{
	double ticks = (double)(c->tsc0 - c->base_tsc);
	double ns = (double)(c->ns0 - c->base_ns);

	c->mult = (uint64_t)(ns / ticks * 4294967296.0);
	c->renew = (uint64_t)(ticks / ns * RENEW_NS);
}

#endif

bool tl_clock_pair_ok(const struct tl_clock *c, uint64_t gap)
{
	return gap <= c->renew / (RENEW_NS / TL_CLOCK_PAIR_MAX_NS);
}

uint64_t tl_clock_renew(struct tl_clock *c)
{
#if defined(__x86_64__)
	uint64_t tsc, ns, since;

	/*
	 * A pair whose reads were preempted apart is no pair: its
	 * clock_gettime() is this stamp, and the next stamp tries again.
	 * (The old pair stretched over a long idle would overflow.)
	 */
	if (!tl_clock_pair_ok(c, pair(&tsc, &ns)))
		return tl_clock_keep(c, ns);
	c->tsc0 = tsc;
	c->ns0 = ns;
	since = c->ns0 - c->base_ns;
	if (since >= RATE_MIN_NS)
		set_rate(c);
	if (since >= RATE_MAX_NS) {
		c->base_tsc = c->tsc0;
		c->base_ns = c->ns0;
	}
	return tl_clock_keep(c, c->ns0 +
			     (((__builtin_ia32_rdtsc() - c->tsc0) * c->mult) >> 32));
#else
	return now_ns();
#endif
}

void tl_clock_init(struct tl_clock *c, bool allow_tsc)
{
#if defined(__x86_64__)
	uint64_t gap_a, gap_b;
	int i;

	memset(c, 0, sizeof(*c));
	if (!allow_tsc || !kernel_on_tsc())
		return;
	/* A first rate, over a millisecond, for the first tenth of a second. */
	for (i = 0; i < INIT_TRIES; i++) {
		gap_a = pair(&c->base_tsc, &c->base_ns);
		while (now_ns() - c->base_ns < RENEW_NS)
			;
		gap_b = pair(&c->tsc0, &c->ns0);
		if (c->tsc0 <= c->base_tsc || c->ns0 <= c->base_ns)
			continue;
		set_rate(c);
		if (c->mult && c->renew && tl_clock_pair_ok(c, gap_a) &&
		    tl_clock_pair_ok(c, gap_b)) {
			c->tsc = true;
			return;
		}
	}
	/* Never a clean pair: clock_gettime() it is. */
	memset(c, 0, sizeof(*c));
#else
	memset(c, 0, sizeof(*c));
	(void)allow_tsc;
#endif
}
