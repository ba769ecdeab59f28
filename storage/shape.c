// SPDX-License-Identifier: GPL-2.0-only
/*
 * Latency and bandwidth shaping; see shape.h.
 */
#include <errno.h>
#include <time.h>

#include "shape.h"
#include "torus_util.h"

void shaper_init(struct shaper *s, uint64_t latency_us, uint64_t rate)
{
	s->latency_ns = latency_us * 1000;
	s->rate = rate;
	s->link_free_ns = 0;
	pthread_mutex_init(&s->lock, NULL);
}

void shaper_destroy(struct shaper *s)
{
	pthread_mutex_destroy(&s->lock);
}

uint64_t shape_reserve(uint64_t *link_free, uint64_t now, uint64_t bytes,
		       uint64_t rate)
{
	uint64_t start = max_u64(*link_free, now);
	unsigned __int128 ns = (unsigned __int128)bytes * 1000000000u / rate;

	*link_free = start + (uint64_t)ns;
	return *link_free;
}

uint64_t shaper_due(struct shaper *s, uint64_t arrival_ns, uint64_t bytes)
{
	uint64_t due = arrival_ns + s->latency_ns;
	uint64_t sent;

	if (s->rate && bytes) {
		pthread_mutex_lock(&s->lock);
		sent = shape_reserve(&s->link_free_ns, arrival_ns, bytes,
				     s->rate);
		pthread_mutex_unlock(&s->lock);
		due = max_u64(due, sent);
	}
	return due;
}

void shaper_wait(uint64_t due_ns)
{
	struct timespec ts = {
		.tv_sec = due_ns / 1000000000u,
		.tv_nsec = due_ns % 1000000000u,
	};

	if (due_ns <= now_ns())
		return;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}
