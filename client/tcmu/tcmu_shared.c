// SPDX-License-Identifier: GPL-2.0-only
/*
 * The submitters of one TCMU ring, alone or sharing it across processes
 * (see tcmu_shared.h). The ring itself is proto/tcmu/tcmu_ring_sub.c; this
 * file holds the shared state's layout, its lock, the owners (join, leave,
 * death) and the release of commands; queuing and who gets which
 * completion are tcmu_shared_io.c's.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tcmu_shared_int.h"

#define SHARED_MAGIC	0x544d5332u	/* "TMS2" */

static uint64_t align64(uint64_t v)
{
	return (v + 63) & ~63ull;
}

static uint64_t recs_off(void)
{
	return align64(sizeof(struct tcmu_shared_state));
}

/* Sense bytes apart: written only for an answer other than GOOD. */
static uint64_t sense_off(uint32_t nr_ids)
{
	return align64(recs_off() +
		       (uint64_t)nr_ids * sizeof(struct tcmu_shared_rec));
}

static uint64_t sub_off(uint32_t nr_ids)
{
	return align64(sense_off(nr_ids) +
		       (uint64_t)nr_ids * TCMU_SENSE_BUFFERSIZE);
}

static int mutex_init_shared(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int ret;

	pthread_mutexattr_init(&a);
	ret = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!ret)
		ret = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!ret)
		ret = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return -ret;
}

/* Room came back (ring space, blocks, cmd_ids): wake who sleeps for it. */
void shared_room_back(struct tcmu_shared_state *st)
{
	/* Dekker with wait_room(): one of the two sees the other. */
	__atomic_add_fetch(&st->room, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&st->room_waiters, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &st->room, FUTEX_WAKE, INT_MAX, NULL,
			NULL, 0);
}

/* A command is over: its blocks and cmd_id go back, its owner's count down. */
void shared_release(struct tcmu_shared *sh, uint16_t id)
{
	struct tcmu_shared_rec *rec = &sh->recs[id - 1];
	struct tcmu_shared_owner *o = &sh->st->owners[rec->owner];

	tcmu_sub_release(&sh->sub, id);
	rec_set(rec, REC_FREE);
	sh->freed = true;
	if (o->busy)
		o->busy--;
	if (o->state == TCMU_OWNER_GONE && !o->busy)
		o->state = TCMU_OWNER_FREE;
}

/*
 * What this owner took and handled since its last lock pass goes back:
 * each one still spent (one short of room may have released it, idle).
 */
static void settle(struct tcmu_shared *sh)
{
	uint32_t i;

	for (i = 0; i < sh->nr_spent; i++) {
		uint16_t id = sh->spent[i];
		const struct tcmu_shared_rec *rec = &sh->recs[id - 1];

		if (rec_state(rec) == REC_SPENT && rec->owner == sh->owner)
			shared_release(sh, id);
	}
	sh->nr_spent = 0;
}

/*
 * An owner left or died: its completions waiting on its stack or taken
 * and not yet released go back now, the rest as they complete.
 */
static void gone(struct tcmu_shared *sh, uint32_t i)
{
	struct tcmu_shared_owner *o = &sh->st->owners[i];
	uint32_t id;

	if (o->state == TCMU_OWNER_LIVE)
		sh->st->nr_owners--;
	o->state = TCMU_OWNER_GONE;
	__atomic_store_n(&o->done, NO_ID, __ATOMIC_RELAXED);
	for (id = 1; id <= sh->st->nr_ids; id++) {
		const struct tcmu_shared_rec *rec = &sh->recs[id - 1];
		uint8_t state = rec_state(rec);

		if (rec->owner == i &&
		    (state == REC_DONE || state == REC_SPENT))
			shared_release(sh, id);
	}
	if (!o->busy)
		o->state = TCMU_OWNER_FREE;
}

/*
 * After a holder died mid-change: the free blocks and cmd_ids again from
 * the commands out, and every cmd_id found free recorded free.
 */
static void rebuild(struct tcmu_shared *sh)
{
	uint32_t i;

	tcmu_sub_rebuild(&sh->sub);
	for (i = 0; i < sh->sub.st->nr_free; i++)
		rec_set(&sh->recs[sh->sub.free_ids[i] - 1], REC_FREE);
}

/*
 * The lock of a shared state. A holder that died (EOWNERDEAD) left it
 * held mid-change: the state is made consistent (its blocks and ids
 * rebuilt) and its owner counted gone, so that its commands are released
 * as they complete. Then what this owner handled since its last pass is
 * released. -EIO when the lock is lost.
 */
static int lock_shared(struct tcmu_shared *sh)
{
	struct tcmu_shared_state *st = sh->st;
	int ret;

	if (sh->solo) {
		/* Dekker with join_wait(): one of the two sees the other. */
		__atomic_store_n(&st->in_op, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&st->join_req, __ATOMIC_SEQ_CST))
			return 0;
		__atomic_store_n(&st->in_op, 0, __ATOMIC_RELEASE);
		sh->solo = false;
	}
	ret = pthread_mutex_lock(&st->lock);
	if (ret == EOWNERDEAD) {
		uint32_t dead = st->holder;

		pthread_mutex_consistent(&st->lock);
		rebuild(sh);
		if (dead < TCMU_SHARED_OWNERS && dead != sh->owner &&
		    st->owners[dead].state == TCMU_OWNER_LIVE)
			gone(sh, dead);
		sh->recovered++;
		ret = 0;
	}
	if (ret)
		return -EIO;
	st->holder = sh->owner;
	if (sh->nr_spent)
		settle(sh);
	return 0;
}

int shared_lock(struct tcmu_shared *sh)
{
	return sh->st ? lock_shared(sh) : 0;
}

/* Room that came back in this pass is told (alone, there is no one to). */
void shared_unlock(struct tcmu_shared *sh)
{
	bool freed = sh->freed;

	sh->freed = false;
	if (sh->solo) {
		__atomic_store_n(&sh->st->in_op, 0, __ATOMIC_RELEASE);
	} else if (sh->st) {
		pthread_mutex_unlock(&sh->st->lock);
		if (freed)
			shared_room_back(sh->st);
	}
}

/*
 * Become an owner: the first free index, its alive mutex held. @rebuild:
 * the creator died in an operation it ran without the lock.
 */
static int enter(struct tcmu_shared *sh, bool rebuild_state)
{
	struct tcmu_shared_state *st = sh->st;
	uint32_t i;
	int ret;

	ret = shared_lock(sh);
	if (ret < 0)
		return ret;
	if (rebuild_state)
		rebuild(sh);
	for (i = 0; i < TCMU_SHARED_OWNERS; i++)
		if (st->owners[i].state == TCMU_OWNER_FREE)
			break;
	if (i == TCMU_SHARED_OWNERS) {
		shared_unlock(sh);
		return -EUSERS;
	}
	ret = mutex_init_shared(&st->owners[i].alive);
	if (!ret)
		ret = -pthread_mutex_lock(&st->owners[i].alive);
	if (!ret) {
		st->owners[i].state = TCMU_OWNER_LIVE;
		st->owners[i].busy = 0;
		st->owners[i].done = NO_ID;
		st->owners[i].pid = getpid();
		st->nr_owners++;
		sh->owner = i;
	}
	shared_unlock(sh);
	return ret;
}

/*
 * Before a second submitter's first lock: the creator, alone so far, runs
 * without the mutex (its robust, process-shared path costs a single job
 * more than the rest of a command's queuing). It leaves that for good at
 * its next operation once it sees join_req; one it is in now is waited
 * for, unless it died in it: then true, the state to be rebuilt.
 */
static bool join_wait(struct tcmu_shared *sh)
{
	struct tcmu_shared_state *st = sh->st;
	struct tcmu_shared_owner *o = &st->owners[0];
	int ret;

	__atomic_store_n(&st->join_req, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&st->in_op, __ATOMIC_SEQ_CST)) {
		ret = pthread_mutex_trylock(&o->alive);
		if (ret == EOWNERDEAD || ret == 0) {
			if (ret == EOWNERDEAD)
				pthread_mutex_consistent(&o->alive);
			pthread_mutex_unlock(&o->alive);
			sh->recovered++;
			return true;
		}
		sched_yield();
	}
	return false;
}

int tcmu_shared_private(struct tcmu_shared *sh, void *region,
			uint64_t region_size, uint32_t blk_size,
			uint32_t max_cmds, uint32_t max_data)
{
	memset(sh, 0, sizeof(*sh));
	return tcmu_sub_init(&sh->sub, region, region_size, blk_size,
			     max_cmds, max_data);
}

uint64_t tcmu_shared_size(const void *region, uint64_t region_size,
			  uint32_t blk_size, uint32_t max_cmds,
			  uint32_t max_data)
{
	uint64_t size = tcmu_sub_state_size(region, region_size, blk_size,
					    max_cmds, max_data);

	return size ? sub_off(max_cmds) + size : 0;
}

/* This process's view of a shared state at @mem. */
static int map_state(struct tcmu_shared *sh, void *mem)
{
	struct tcmu_shared_state *st = mem;

	sh->st = st;
	sh->recs = (void *)((uint8_t *)mem + st->recs_off);
	sh->sense = (void *)((uint8_t *)mem + st->sense_off);
	sh->spent = calloc(st->nr_ids, sizeof(*sh->spent));
	return sh->spent ? 0 : -ENOMEM;
}

int tcmu_shared_create(struct tcmu_shared *sh, void *region,
		       uint64_t region_size, void *mem, uint64_t mem_size,
		       uint32_t blk_size, uint32_t max_cmds,
		       uint32_t max_data)
{
	struct tcmu_shared_state *st = mem;
	uint64_t size, off;
	int ret;

	memset(sh, 0, sizeof(*sh));
	size = tcmu_shared_size(region, region_size, blk_size, max_cmds,
				max_data);
	if (!size || size > mem_size)
		return -EINVAL;
	off = sub_off(max_cmds);
	ret = tcmu_sub_init_in(&sh->sub, region, region_size,
			       (uint8_t *)mem + off, mem_size - off, blk_size,
			       max_cmds, max_data);
	if (ret)
		return ret;
	st->size = size;
	st->recs_off = recs_off();
	st->sense_off = sense_off(max_cmds);
	st->sub_off = off;
	st->nr_ids = max_cmds;
	st->walked = sh->sub.st->cleaned;
	ret = mutex_init_shared(&st->lock);
	if (!ret) {
		st->magic = SHARED_MAGIC;
		ret = map_state(sh, mem);
	}
	if (!ret)
		ret = enter(sh, false);
	if (ret) {
		tcmu_sub_free(&sh->sub);
		free(sh->spent);
		memset(sh, 0, sizeof(*sh));
		return ret;
	}
	sh->solo = true;
	return 0;
}

int tcmu_shared_join(struct tcmu_shared *sh, void *region,
		     uint64_t region_size, void *mem, uint64_t mem_size,
		     uint32_t max_data)
{
	struct tcmu_shared_state *st = mem;
	int ret;

	memset(sh, 0, sizeof(*sh));
	if (mem_size < sizeof(*st) || st->magic != SHARED_MAGIC ||
	    st->size > mem_size || st->recs_off != recs_off() ||
	    !st->nr_ids || st->nr_ids > UINT16_MAX ||
	    st->sense_off != sense_off(st->nr_ids) ||
	    st->sub_off != sub_off(st->nr_ids) || st->sub_off > st->size)
		return -EINVAL;
	ret = tcmu_sub_attach(&sh->sub, region, region_size,
			      (uint8_t *)mem + st->sub_off,
			      st->size - st->sub_off, max_data);
	if (!ret && sh->sub.nr_slots != st->nr_ids)
		ret = -EINVAL;
	if (!ret)
		ret = map_state(sh, mem);
	if (!ret)
		ret = enter(sh, join_wait(sh));
	if (ret) {
		tcmu_sub_free(&sh->sub);
		free(sh->spent);
		memset(sh, 0, sizeof(*sh));
	}
	return ret;
}

/*
 * Another owner still there? One that died holding its alive mutex is
 * found here (EOWNERDEAD) and counted gone. Each is tried once a walk
 * (@checked).
 */
bool shared_owner_here(struct tcmu_shared *sh, uint32_t i,
		       uint64_t *checked)
{
	struct tcmu_shared_owner *o = &sh->st->owners[i];
	int ret;

	if (o->state != TCMU_OWNER_LIVE)
		return false;
	if (i == sh->owner || (*checked & (1ull << i)))
		return true;
	ret = pthread_mutex_trylock(&o->alive);
	if (ret == EBUSY) {
		*checked |= 1ull << i;
		return true;
	}
	if (ret == EOWNERDEAD)
		pthread_mutex_consistent(&o->alive);
	if (ret == 0 || ret == EOWNERDEAD)
		pthread_mutex_unlock(&o->alive);
	gone(sh, i);
	return false;
}

void tcmu_shared_bounds(struct tcmu_shared *sh, uint32_t *cleaned,
			uint32_t *pub)
{
	if (shared_lock(sh) < 0)
		return;
	*cleaned = sh->sub.st->cleaned;
	*pub = sh->sub.st->pub;
	shared_unlock(sh);
}

void tcmu_shared_free(struct tcmu_shared *sh)
{
	struct tcmu_shared_owner *o;
	uint16_t id, next;

	if (sh->st && shared_lock(sh) >= 0) {
		o = &sh->st->owners[sh->owner];
		/* Handed on and never taken: nothing will take them now. */
		id = __atomic_exchange_n(&o->done, NO_ID, __ATOMIC_ACQUIRE);
		for (; id != NO_ID; id = next) {
			next = sh->recs[id - 1].next;
			shared_release(sh, id);
		}
		if (o->state == TCMU_OWNER_LIVE)
			sh->st->nr_owners--;
		/* Its commands still out are released as they complete. */
		o->state = o->busy ? TCMU_OWNER_GONE : TCMU_OWNER_FREE;
		pthread_mutex_unlock(&o->alive);
		shared_unlock(sh);
	}
	tcmu_sub_free(&sh->sub);
	free(sh->spent);
	memset(sh, 0, sizeof(*sh));
}
