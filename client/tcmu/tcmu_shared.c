// SPDX-License-Identifier: GPL-2.0-only
/*
 * The submitters of one TCMU ring, alone or sharing it across processes
 * (see tcmu_shared.h). The ring itself is proto/tcmu/tcmu_ring_sub.c; this
 * file holds the lock, the owners, and who gets which completion.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "tcmu_shared.h"

#define SHARED_MAGIC	0x544d5348u	/* "TMSH" */
#define NO_ID		0

/* One cmd_id's owner, and its answer once the handler retired it. */
struct tcmu_shared_rec {
	uint16_t owner;
	uint16_t next;			/* in its owner's done list */
	uint8_t status, uflags;
	uint32_t read_len;
	uint8_t sense[TCMU_SENSE_BUFFERSIZE];
};

static uint64_t align64(uint64_t v)
{
	return (v + 63) & ~63ull;
}

static uint64_t recs_off(void)
{
	return align64(sizeof(struct tcmu_shared_state));
}

static uint64_t sub_off(uint32_t nr_ids)
{
	return align64(recs_off() +
		       (uint64_t)nr_ids * sizeof(struct tcmu_shared_rec));
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

/*
 * The lock of a shared state. A holder that died (EOWNERDEAD) left it
 * held mid-change: the state is made consistent (its blocks and ids
 * rebuilt) and its owner counted gone, so that its commands are released
 * as they complete. -EIO when the lock is lost.
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
		tcmu_sub_rebuild(&sh->sub);
		if (dead < TCMU_SHARED_OWNERS && dead != sh->owner &&
		    st->owners[dead].state == TCMU_OWNER_LIVE) {
			st->owners[dead].state = TCMU_OWNER_GONE;
			st->nr_owners--;
		}
		sh->recovered++;
		ret = 0;
	}
	if (ret)
		return -EIO;
	st->holder = sh->owner;
	return 0;
}

static inline int lock(struct tcmu_shared *sh)
{
	return sh->st ? lock_shared(sh) : 0;
}

static inline void unlock(struct tcmu_shared *sh)
{
	if (sh->solo)
		__atomic_store_n(&sh->st->in_op, 0, __ATOMIC_RELEASE);
	else if (sh->st)
		pthread_mutex_unlock(&sh->st->lock);
}

/*
 * Become an owner: the first free index, its alive mutex held. @rebuild:
 * the creator died in an operation it ran without the lock.
 */
static int enter(struct tcmu_shared *sh, bool rebuild)
{
	struct tcmu_shared_state *st = sh->st;
	uint32_t i;
	int ret;

	ret = lock(sh);
	if (ret < 0)
		return ret;
	if (rebuild)
		tcmu_sub_rebuild(&sh->sub);
	for (i = 0; i < TCMU_SHARED_OWNERS; i++)
		if (st->owners[i].state == TCMU_OWNER_FREE)
			break;
	if (i == TCMU_SHARED_OWNERS) {
		unlock(sh);
		return -EUSERS;
	}
	ret = mutex_init_shared(&st->owners[i].alive);
	if (!ret)
		ret = -pthread_mutex_lock(&st->owners[i].alive);
	if (!ret) {
		st->owners[i].state = TCMU_OWNER_LIVE;
		st->owners[i].busy = 0;
		st->owners[i].done_first = st->owners[i].done_last = NO_ID;
		st->owners[i].pid = getpid();
		st->nr_owners++;
		sh->owner = i;
	}
	unlock(sh);
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
	st->sub_off = off;
	st->nr_ids = max_cmds;
	ret = mutex_init_shared(&st->lock);
	if (!ret) {
		st->magic = SHARED_MAGIC;
		sh->st = st;
		sh->recs = (void *)((uint8_t *)mem + st->recs_off);
		ret = enter(sh, false);
	}
	if (ret) {
		tcmu_sub_free(&sh->sub);
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
	    st->sub_off != sub_off(st->nr_ids) || st->sub_off > st->size)
		return -EINVAL;
	ret = tcmu_sub_attach(&sh->sub, region, region_size,
			      (uint8_t *)mem + st->sub_off,
			      st->size - st->sub_off, max_data);
	if (!ret && sh->sub.nr_slots != st->nr_ids)
		ret = -EINVAL;
	if (!ret) {
		sh->st = st;
		sh->recs = (void *)((uint8_t *)mem + st->recs_off);
		ret = enter(sh, join_wait(sh));
	}
	if (ret) {
		tcmu_sub_free(&sh->sub);
		memset(sh, 0, sizeof(*sh));
	}
	return ret;
}

/* A command is over: its blocks and cmd_id go back, its owner's count down. */
static void release(struct tcmu_shared *sh, uint16_t id)
{
	struct tcmu_shared_owner *o = &sh->st->owners[sh->recs[id - 1].owner];

	tcmu_sub_release(&sh->sub, id);
	if (o->busy)
		o->busy--;
	if (o->state == TCMU_OWNER_GONE && !o->busy)
		o->state = TCMU_OWNER_FREE;
}

static void release_list(struct tcmu_shared *sh, uint16_t id)
{
	while (id != NO_ID) {
		uint16_t next = sh->recs[id - 1].next;

		release(sh, id);
		id = next;
	}
}

/*
 * Another owner still there? One that died holding its alive mutex is
 * found here (EOWNERDEAD): counted gone, its handed-on completions
 * released.
 */
static bool owner_here(struct tcmu_shared *sh, uint32_t i)
{
	struct tcmu_shared_owner *o = &sh->st->owners[i];
	uint16_t list;
	int ret;

	if (o->state != TCMU_OWNER_LIVE)
		return false;
	if (i == sh->owner)
		return true;
	ret = pthread_mutex_trylock(&o->alive);
	if (ret == EBUSY)
		return true;
	if (ret == EOWNERDEAD)
		pthread_mutex_consistent(&o->alive);
	if (ret == 0 || ret == EOWNERDEAD)
		pthread_mutex_unlock(&o->alive);
	o->state = TCMU_OWNER_GONE;
	sh->st->nr_owners--;
	list = o->done_first;
	o->done_first = o->done_last = NO_ID;
	release_list(sh, list);
	return false;
}

/* A retired command to its owner's done list, or released if none. */
static void hand_on(void *arg, const struct tcmu_done *d)
{
	struct tcmu_shared *sh = arg;
	struct tcmu_shared_rec *rec = &sh->recs[d->cmd_id - 1];
	struct tcmu_shared_owner *o;

	/* The answer as it was, for its owner. */
	rec->status = d->status;
	rec->uflags = d->uflags;
	rec->read_len = d->read_len;
	memcpy(rec->sense, d->sense, TCMU_SENSE_BUFFERSIZE);
	if (!owner_here(sh, rec->owner)) {
		release(sh, d->cmd_id);
		return;
	}
	o = &sh->st->owners[rec->owner];
	rec->next = NO_ID;
	if (o->done_last != NO_ID)
		sh->recs[o->done_last - 1].next = d->cmd_id;
	else
		o->done_first = d->cmd_id;
	o->done_last = d->cmd_id;
}

int tcmu_shared_queue(struct tcmu_shared *sh, const void *cdb,
		      uint32_t cdb_len, uint32_t data_len, const void *wbuf)
{
	int id;

	if (!sh->st)
		return tcmu_sub_queue(&sh->sub, cdb, cdb_len, data_len, wbuf);
	id = lock(sh);
	if (id < 0)
		return id;
	id = tcmu_sub_queue(&sh->sub, cdb, cdb_len, data_len, wbuf);
	if (id > 0) {
		sh->recs[id - 1].owner = sh->owner;
		sh->recs[id - 1].next = NO_ID;
		sh->st->owners[sh->owner].busy++;
		/* Others move cmd_head too: each command is published. */
		tcmu_sub_commit(&sh->sub);
	}
	unlock(sh);
	return id;
}

void tcmu_shared_commit(struct tcmu_shared *sh)
{
	if (!sh->st)
		tcmu_sub_commit(&sh->sub);
}

/* Alone on a shared ring, every command is this one's: at once to @fn. */
struct alone {
	struct tcmu_shared *sh;
	tcmu_done_fn fn;
	void *arg;
};

static void take_own(void *arg, const struct tcmu_done *d)
{
	struct alone *a = arg;

	if (a->fn)
		a->fn(a->arg, d);
	release(a->sh, d->cmd_id);
}

int tcmu_shared_reap(struct tcmu_shared *sh, tcmu_done_fn fn, void *arg)
{
	struct alone a = { .sh = sh, .fn = fn, .arg = arg };
	struct tcmu_shared_owner *o;
	uint16_t first, id;
	int ret, done = 0;

	if (!sh->st)
		return tcmu_sub_reap(&sh->sub, fn, arg);
	ret = lock(sh);
	if (ret < 0)
		return ret;
	/* Alone (before anyone joined): as a private ring's reap. */
	if (sh->solo)
		ret = tcmu_sub_walk(&sh->sub, take_own, &a);
	else
		ret = tcmu_sub_walk(&sh->sub, hand_on, sh);
	if (ret > 0 && sh->solo)
		done = ret;
	if (ret > 0)
		ret = 0;
	o = &sh->st->owners[sh->owner];
	first = o->done_first;
	o->done_first = o->done_last = NO_ID;
	unlock(sh);
	if (first == NO_ID)
		return ret ? ret : done;

	/* This owner's, outside the lock: their blocks are still its own. */
	for (id = first; id != NO_ID; id = sh->recs[id - 1].next) {
		const struct tcmu_shared_rec *rec = &sh->recs[id - 1];
		struct tcmu_done d = {
			.cmd_id = id,
			.status = rec->status,
			.uflags = rec->uflags,
			.read_len = rec->read_len,
			.sense = rec->sense,
		};

		if (fn)
			fn(arg, &d);
		done++;
	}
	if (lock(sh) >= 0) {
		release_list(sh, first);
		unlock(sh);
	}
	return ret ? ret : done;
}

void tcmu_shared_bounds(struct tcmu_shared *sh, uint32_t *cleaned,
			uint32_t *pub)
{
	if (lock(sh) < 0)
		return;
	*cleaned = sh->sub.st->cleaned;
	*pub = sh->sub.st->pub;
	unlock(sh);
}

void tcmu_shared_free(struct tcmu_shared *sh)
{
	struct tcmu_shared_owner *o;
	uint16_t list;

	if (sh->st && lock(sh) >= 0) {
		o = &sh->st->owners[sh->owner];
		list = o->done_first;
		o->done_first = o->done_last = NO_ID;
		release_list(sh, list);
		if (o->state == TCMU_OWNER_LIVE)
			sh->st->nr_owners--;
		/* Its commands still out are released as they complete. */
		o->state = o->busy ? TCMU_OWNER_GONE : TCMU_OWNER_FREE;
		pthread_mutex_unlock(&o->alive);
		unlock(sh);
	}
	tcmu_sub_free(&sh->sub);
	memset(sh, 0, sizeof(*sh));
}
