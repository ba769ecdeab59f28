/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What tcmu_shared.c (the state, the lock, the owners) and
 * tcmu_shared_io.c (queuing, walking, taking completions) share. Not for
 * use outside them.
 */
#ifndef TORUS_TCMU_SHARED_INT_H
#define TORUS_TCMU_SHARED_INT_H

#include "tcmu_shared.h"

#define NO_ID		0

/* A cmd_id's life on a shared ring. */
enum {
	REC_FREE,
	REC_QUEUED,
	REC_DONE,		/* walked: answer kept, on its owner's stack */
	REC_SPENT,		/* its owner has it: to release */
};

/* One cmd_id's owner, and its answer once the handler retired it. */
struct tcmu_shared_rec {
	uint16_t owner;
	uint16_t next;			/* on its owner's done stack */
	uint8_t state;			/* REC_* */
	uint8_t status, uflags;
	uint32_t read_len;
};

static inline uint8_t rec_state(const struct tcmu_shared_rec *rec)
{
	return __atomic_load_n(&rec->state, __ATOMIC_ACQUIRE);
}

static inline void rec_set(struct tcmu_shared_rec *rec, uint8_t state)
{
	__atomic_store_n(&rec->state, state, __ATOMIC_RELEASE);
}

/* The lock: -EIO when it is lost; what this owner handled is released. */
int shared_lock(struct tcmu_shared *sh);
/* Room that came back in this pass is told (alone, there is no one to). */
void shared_unlock(struct tcmu_shared *sh);
/* Room came back (ring space, blocks, cmd_ids): wake who sleeps for it. */
void shared_room_back(struct tcmu_shared_state *st);
/* A command is over: its blocks and cmd_id go back. Under the lock. */
void shared_release(struct tcmu_shared *sh, uint16_t id);
/* Another owner still there (one that died is counted gone)? */
bool shared_owner_here(struct tcmu_shared *sh, uint32_t i,
		       uint64_t *checked);

#endif /* TORUS_TCMU_SHARED_INT_H */
