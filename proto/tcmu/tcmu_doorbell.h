/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The doorbell: a page of the emulation's own, not of the kernel's ABI,
 * that lets the submitter skip the kick when the handler is awake. The
 * kernel's notify (uio_event_notify, a wake_up on the UIO wait queue)
 * costs almost nothing when the handler is not asleep in poll(); an
 * eventfd write() is a system call whatever the handler's state, so the
 * handler says here when it is about to sleep.
 *
 * The page lies in the region's memfd past the region (region_size
 * rounded up to TCMU_DOORBELL_ALIGN; proto/tcmu/tcmu_attach.h): a
 * handler host that finds the memfd that long keeps the flag and says so
 * in its reply. No wake-up is lost, by the usual pairing of two stores
 * each followed by a full barrier and a load of the other's:
 *
 *   handler: asleep = 1; barrier; cmd_head moved? don't sleep : poll();
 *            asleep = 0
 *   submitter: cmd_head published; barrier; asleep? clear it and write
 *              the eventfd
 *
 * Either the handler's look sees the new cmd_head, or the submitter's
 * load sees asleep and wakes it. The submitter that wakes the handler
 * clears the flag, as the kernel's first wake_up takes the handler off
 * its wait, so that those that publish while it wakes (a cross-CPU
 * wake-up takes microseconds) do not write again; the handler sets it
 * again, and looks, before every sleep. A submitter that kicks while the
 * handler is awake after all only leaves the eventfd's count set: the
 * handler's next poll() returns at once.
 */
#ifndef TORUS_TCMU_DOORBELL_H
#define TORUS_TCMU_DOORBELL_H

#include <stdbool.h>
#include <stdint.h>

/* Page-aligned for any page up to 64 KiB; one small page used. */
#define TCMU_DOORBELL_ALIGN	65536ull
#define TCMU_DOORBELL_SIZE	4096u

struct tcmu_doorbell {
	uint32_t handler_asleep;	/* the handler may be in poll() */
};

/* Where the doorbell page starts in the region's memfd. */
static inline uint64_t tcmu_doorbell_off(uint64_t region_size)
{
	return (region_size + TCMU_DOORBELL_ALIGN - 1) &
	       ~(TCMU_DOORBELL_ALIGN - 1);
}

/* The handler, before it looks at cmd_head one last time and sleeps. */
static inline void tcmu_doorbell_sleep(struct tcmu_doorbell *b)
{
	__atomic_store_n(&b->handler_asleep, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* The handler, awake again (or not gone to sleep after all). */
static inline void tcmu_doorbell_awake(struct tcmu_doorbell *b)
{
	__atomic_store_n(&b->handler_asleep, 0, __ATOMIC_RELAXED);
}

/*
 * The submitter, after publishing cmd_head: whether it must wake the
 * handler (always without a doorbell). Only one of those that find it
 * asleep is told to.
 */
static inline bool tcmu_doorbell_ring(struct tcmu_doorbell *b)
{
	if (!b)
		return true;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&b->handler_asleep, __ATOMIC_RELAXED))
		return false;
	return __atomic_exchange_n(&b->handler_asleep, 0, __ATOMIC_SEQ_CST);
}

#endif /* TORUS_TCMU_DOORBELL_H */
