/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Latency and bandwidth shaping, to emulate the networks of the documents
 * (coreos-torus ran on 1 GbE). Every request gets a due time: its arrival
 * plus the latency, and not before its bytes (written data or read data) have
 * crossed a link of the given rate shared by all connections. Replies are
 * held until they are due. A serial profile therefore pays the latency per
 * request; a pipelined one overlaps it, as a real network would.
 */
#ifndef TORUS_STORAGE_SHAPE_H
#define TORUS_STORAGE_SHAPE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct shaper {
	uint64_t latency_ns;
	uint64_t rate;			/* bytes per second, 0: unlimited */
	pthread_mutex_t lock;
	uint64_t link_free_ns;		/* when the link has sent all so far */
};

void shaper_init(struct shaper *s, uint64_t latency_us, uint64_t rate);
void shaper_destroy(struct shaper *s);

static inline bool shaper_active(const struct shaper *s)
{
	return s->latency_ns || s->rate;
}

/*
 * Reserve bytes on a link free from *link_free, at time now: returns when
 * they have crossed it and moves *link_free there. Pure, for unit tests.
 */
uint64_t shape_reserve(uint64_t *link_free, uint64_t now, uint64_t bytes,
		       uint64_t rate);

/* The due time of a request of bytes that arrived at arrival_ns. */
uint64_t shaper_due(struct shaper *s, uint64_t arrival_ns, uint64_t bytes);

/* Sleep until due_ns (CLOCK_MONOTONIC); returns at once if past. */
void shaper_wait(uint64_t due_ns);

#endif /* TORUS_STORAGE_SHAPE_H */
