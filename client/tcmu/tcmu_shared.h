/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The submitters of one TCMU ring. Several may share it, as every process
 * writing to one TCMU device shares the kernel's (under its cmdr_lock):
 * then the ring's submitter state (proto/tcmu/tcmu_ring_sub.h) lives in
 * memory every submitter maps, after a header of their own: a
 * process-shared robust mutex, the owners (a small index each takes at
 * join, held as long as its "alive" mutex), and per cmd_id its owner and
 * its answer.
 *
 * Whoever walks the retired entries (under the lock, as the kernel's
 * tcmu_handle_completions) keeps each answer in its cmd_id's record and
 * pushes the cmd_id on its owner's done stack, a lock-free list the owner
 * takes whole: an owner's completions reach it without another lock pass,
 * whoever walked them. The owner copies its read data out, and its
 * blocks and cmd_ids go back at its next lock pass (or, when it is idle
 * and another needs room, at that one's). An owner that died is found by
 * its alive mutex and its commands released as they complete.
 *
 * A private ring (tcmu_shared_private()) has one submitter, its state in
 * private memory, no header and no lock; so does a shared ring's creator
 * until another joins (join_req and in_op, a two-flag handshake), and
 * while alone it completes its commands as it walks them, as a private
 * one does.
 */
#ifndef TORUS_TCMU_SHARED_H
#define TORUS_TCMU_SHARED_H

#include <pthread.h>

#include "tcmu_ring_sub.h"

#define TCMU_SHARED_OWNERS	64

struct tcmu_shared_rec;

struct tcmu_shared_owner {
	/* Held by the owner from join to leave: EOWNERDEAD says it died. */
	pthread_mutex_t alive;
	uint32_t state;			/* TCMU_OWNER_* */
	uint32_t busy;			/* its commands not yet released */
	uint32_t done;			/* its done stack's top, 0: empty */
	int32_t pid;
};

enum {
	TCMU_OWNER_FREE,
	TCMU_OWNER_LIVE,
	TCMU_OWNER_GONE,		/* left or died, commands still out */
};

/* The header before the ring's state, in the shared memory. */
struct tcmu_shared_state {
	uint32_t magic;
	uint32_t holder;		/* owner holding the lock */
	pthread_mutex_t lock;
	uint64_t size;			/* bytes, the ring's state included */
	uint64_t recs_off, sense_off, sub_off; /* records, senses, ring */
	uint32_t nr_ids;
	/* cmd_tail as of the last whole walk (release: its pushes visible) */
	uint32_t walked;
	/* Bumped when room comes back; a futex for who waits for it. */
	uint32_t room, room_waiters;
	/* Under the lock. */
	uint32_t nr_owners;		/* live ones */
	uint32_t join_req;		/* another asked in: creator, lock */
	uint32_t in_op;			/* the creator, alone, is in an op */
	struct tcmu_shared_owner owners[TCMU_SHARED_OWNERS];
};

struct tcmu_shared {
	struct tcmu_sub sub;		/* the ring, as this process maps it */
	struct tcmu_shared_state *st;	/* NULL: a private ring */
	struct tcmu_shared_rec *recs;	/* [cmd_id - 1] */
	uint8_t (*sense)[TCMU_SENSE_BUFFERSIZE]; /* [cmd_id - 1], on demand */
	uint16_t *spent;		/* taken and handled, to release */
	uint32_t nr_spent;
	bool solo;			/* the creator, no one joined yet */
	bool freed;			/* this lock pass gave room back */
	uint32_t owner;			/* this submitter's index */
	uint32_t recovered;		/* dead holders this one recovered from */
	uint64_t walk_ns;		/* spent walking for all owners */
};

/* A private ring: tcmu_sub_init()'s arguments. */
int tcmu_shared_private(struct tcmu_shared *sh, void *region,
			uint64_t region_size, uint32_t blk_size,
			uint32_t max_cmds, uint32_t max_data);
/* Bytes of shared memory tcmu_shared_create() lays out (0: none fits). */
uint64_t tcmu_shared_size(const void *region, uint64_t region_size,
			  uint32_t blk_size, uint32_t max_cmds,
			  uint32_t max_data);
/*
 * As tcmu_shared_private(), the state laid out in @mem (@mem_size bytes,
 * zeroed, mapped shared) for others to join; this one is owner 0.
 */
int tcmu_shared_create(struct tcmu_shared *sh, void *region,
		       uint64_t region_size, void *mem, uint64_t mem_size,
		       uint32_t blk_size, uint32_t max_cmds,
		       uint32_t max_data);
/*
 * Join the ring whose shared state is @mem: -EINVAL when the state does
 * not match the region, -E2BIG when @max_data exceeds the ring's commands,
 * -EUSERS when TCMU_SHARED_OWNERS submitters are in already.
 */
int tcmu_shared_join(struct tcmu_shared *sh, void *region,
		     uint64_t region_size, void *mem, uint64_t mem_size,
		     uint32_t max_data);
/*
 * Leave: this owner's commands still out are released as they complete,
 * by whoever reaps them. Frees what was allocated here.
 */
void tcmu_shared_free(struct tcmu_shared *sh);

/*
 * tcmu_sub_queue() under the lock; on a shared ring cmd_head is published
 * at once (others publish too). -EIO when the lock is lost. A submitter
 * with nothing of its own out that finds no room sleeps until another's
 * command is released (or 100 ms pass: -EBUSY then), where it would
 * otherwise spin.
 */
int tcmu_shared_queue(struct tcmu_shared *sh, const void *cdb,
		      uint32_t cdb_len, uint32_t data_len, const void *wbuf);
/* Publish everything queued (a shared ring's is already). */
void tcmu_shared_commit(struct tcmu_shared *sh);
/*
 * Walk what the handler retired, if no one has, handing every completion
 * to its owner (the time it took added to walk_ns: the kernel's work, done
 * here for every owner); then call @fn for this owner's, outside the lock
 * (their blocks are released at its next lock pass). Returns how many of this
 * owner's, -EPROTO when the handler broke the ring (stop using it), -EIO
 * when the lock is lost.
 */
int tcmu_shared_reap(struct tcmu_shared *sh, tcmu_done_fn fn, void *arg);
/* cmd_tail's bounds for a check: cleaned and published head, now. */
void tcmu_shared_bounds(struct tcmu_shared *sh, uint32_t *cleaned,
			uint32_t *pub);

#endif /* TORUS_TCMU_SHARED_H */
