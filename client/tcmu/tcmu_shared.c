// SPDX-License-Identifier: GPL-2.0-only
/*
 * The submitters of one TCMU ring, alone or sharing it across processes
 * (see tcmu_shared.h). The ring itself is proto/tcmu/tcmu_ring_sub.c; this
 * file holds the lock, the owners, and who gets which completion.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tcmu_scsi.h"
#include "tcmu_shared.h"
#include "torus_clock.h"

#define SHARED_MAGIC	0x544d5332u	/* "TMS2" */
#define NO_ID		0
/* How long a submitter with nothing out sleeps for room at most. */
#define ROOM_WAIT_MS	100

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

static uint8_t rec_state(const struct tcmu_shared_rec *rec)
{
	return __atomic_load_n(&rec->state, __ATOMIC_ACQUIRE);
}

static void rec_set(struct tcmu_shared_rec *rec, uint8_t state)
{
	__atomic_store_n(&rec->state, state, __ATOMIC_RELEASE);
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
static void room_back(struct tcmu_shared_state *st)
{
	/* Dekker with wait_room(): one of the two sees the other. */
	__atomic_add_fetch(&st->room, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&st->room_waiters, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &st->room, FUTEX_WAKE, INT_MAX, NULL,
			NULL, 0);
}

static void wait_room(struct tcmu_shared_state *st, uint32_t seen)
{
	struct timespec ts = { .tv_nsec = ROOM_WAIT_MS * 1000000L };

	__atomic_add_fetch(&st->room_waiters, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &st->room, FUTEX_WAIT, seen, &ts, NULL, 0);
	__atomic_sub_fetch(&st->room_waiters, 1, __ATOMIC_SEQ_CST);
}

/* A command is over: its blocks and cmd_id go back, its owner's count down. */
static void release(struct tcmu_shared *sh, uint16_t id)
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
			release(sh, id);
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
			release(sh, id);
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

static inline int lock(struct tcmu_shared *sh)
{
	return sh->st ? lock_shared(sh) : 0;
}

/* Room that came back in this pass is told (alone, there is no one to). */
static inline void unlock(struct tcmu_shared *sh)
{
	bool freed = sh->freed;

	sh->freed = false;
	if (sh->solo) {
		__atomic_store_n(&sh->st->in_op, 0, __ATOMIC_RELEASE);
	} else if (sh->st) {
		pthread_mutex_unlock(&sh->st->lock);
		if (freed)
			room_back(sh->st);
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

	ret = lock(sh);
	if (ret < 0)
		return ret;
	if (rebuild_state)
		rebuild(sh);
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
		st->owners[i].done = NO_ID;
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
static bool owner_here(struct tcmu_shared *sh, uint32_t i, uint64_t *checked)
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

struct walk {
	struct tcmu_shared *sh;
	uint64_t checked;		/* owners found alive */
};

/*
 * A retired command, under the lock: its answer kept (the sense only when
 * there is one) and its cmd_id on its owner's done stack, or released if
 * the owner is gone.
 */
static void hand_on(void *arg, const struct tcmu_done *d)
{
	struct walk *w = arg;
	struct tcmu_shared *sh = w->sh;
	struct tcmu_shared_rec *rec = &sh->recs[d->cmd_id - 1];
	struct tcmu_shared_owner *o;
	uint32_t top;

	if (!owner_here(sh, rec->owner, &w->checked)) {
		release(sh, d->cmd_id);
		return;
	}
	rec->status = d->status;
	rec->uflags = d->uflags;
	rec->read_len = d->read_len;
	if (d->status != SCSI_STATUS_GOOD)
		memcpy(sh->sense[d->cmd_id - 1], d->sense,
		       TCMU_SENSE_BUFFERSIZE);
	rec_set(rec, REC_DONE);
	/* Its owner takes the stack whole, without the lock. */
	o = &sh->st->owners[rec->owner];
	top = __atomic_load_n(&o->done, __ATOMIC_RELAXED);
	do {
		rec->next = top;
	} while (!__atomic_compare_exchange_n(&o->done, &top, d->cmd_id, true,
					      __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

/*
 * Idle and short of room: every command whose owner has handled it goes
 * back now, not at that owner's next pass (it may have none soon).
 */
static bool release_spent(struct tcmu_shared *sh)
{
	uint32_t id;
	bool any = false;

	for (id = 1; id <= sh->st->nr_ids; id++)
		if (rec_state(&sh->recs[id - 1]) == REC_SPENT) {
			release(sh, id);
			any = true;
		}
	return any;
}

int tcmu_shared_queue(struct tcmu_shared *sh, const void *cdb,
		      uint32_t cdb_len, uint32_t data_len, const void *wbuf)
{
	struct tcmu_shared_rec *rec;
	bool waited = false, idle;
	uint32_t seen;
	int id;

	if (!sh->st)
		return tcmu_sub_queue(&sh->sub, cdb, cdb_len, data_len, wbuf);
	for (;;) {
		seen = __atomic_load_n(&sh->st->room, __ATOMIC_SEQ_CST);
		id = lock(sh);
		if (id < 0)
			return id;
		id = tcmu_sub_queue(&sh->sub, cdb, cdb_len, data_len, wbuf);
		idle = !sh->st->owners[sh->owner].busy;
		if (id == -EBUSY && idle && !sh->solo && release_spent(sh))
			id = tcmu_sub_queue(&sh->sub, cdb, cdb_len, data_len,
					    wbuf);
		if (id > 0) {
			rec = &sh->recs[id - 1];
			rec->owner = sh->owner;
			rec_set(rec, REC_QUEUED);
			sh->st->owners[sh->owner].busy++;
			/* Others publish too: each command at once. */
			tcmu_sub_commit(&sh->sub);
		}
		unlock(sh);
		/*
		 * Nothing of its own out: no completion will wake it, so it
		 * sleeps until another's command gives room back.
		 */
		if (id != -EBUSY || !idle || sh->solo || waited)
			return id;
		wait_room(sh->st, seen);
		waited = true;
	}
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

/* Retired entries no walk has reached yet (one may be under way)? */
static bool unwalked(const struct tcmu_shared *sh)
{
	uint32_t tail = __atomic_load_n(tcmu_mb_tail(sh->sub.base),
					__ATOMIC_ACQUIRE);

	return tail != __atomic_load_n(&sh->st->walked, __ATOMIC_ACQUIRE);
}

/* Walk under the lock: every completion to its owner's stack. */
static int walk(struct tcmu_shared *sh)
{
	struct walk w = { .sh = sh };
	uint64_t t0;
	int ret;

	ret = lock(sh);
	if (ret < 0)
		return ret;
	t0 = now_ns();
	ret = tcmu_sub_walk(&sh->sub, hand_on, &w);
	/* The pushes before it: who reads it sees them on their stacks. */
	if (ret >= 0)
		__atomic_store_n(&sh->st->walked, sh->sub.st->cleaned,
				 __ATOMIC_RELEASE);
	if (ret > 0) {
		sh->walk_ns += now_ns() - t0;
		sh->freed = true;	/* ring space */
	}
	unlock(sh);
	return ret;
}

/* This owner's done stack, taken whole: @fn for each, oldest first. */
static int take_done(struct tcmu_shared *sh, tcmu_done_fn fn, void *arg)
{
	struct tcmu_shared_owner *o = &sh->st->owners[sh->owner];
	uint16_t id, next, prev = NO_ID;
	int n = 0;

	if (!__atomic_load_n(&o->done, __ATOMIC_RELAXED))
		return 0;
	id = __atomic_exchange_n(&o->done, NO_ID, __ATOMIC_ACQUIRE);
	/* Newest on top: turned over. */
	for (; id != NO_ID; id = next) {
		next = sh->recs[id - 1].next;
		sh->recs[id - 1].next = prev;
		prev = id;
	}
	for (id = prev; id != NO_ID; id = next) {
		struct tcmu_shared_rec *rec = &sh->recs[id - 1];
		struct tcmu_done d = {
			.cmd_id = id,
			.status = rec->status,
			.uflags = rec->uflags,
			.read_len = rec->read_len,
			.sense = sh->sense[id - 1],
		};

		next = rec->next;
		if (fn)
			fn(arg, &d);
		/* Its data is copied out: its blocks may go to another. */
		rec_set(rec, REC_SPENT);
		sh->spent[sh->nr_spent++] = id;
		n++;
	}
	return n;
}

int tcmu_shared_reap(struct tcmu_shared *sh, tcmu_done_fn fn, void *arg)
{
	struct alone a = { .sh = sh, .fn = fn, .arg = arg };
	int ret = 0, n;

	if (!sh->st)
		return tcmu_sub_reap(&sh->sub, fn, arg);
	/* Alone (before anyone joined): as a private ring's reap. */
	if (sh->solo) {
		ret = lock(sh);
		if (ret < 0)
			return ret;
		if (sh->solo) {
			ret = tcmu_sub_walk(&sh->sub, take_own, &a);
			unlock(sh);
			return ret;
		}
		unlock(sh);
	}
	if (unwalked(sh))
		ret = walk(sh);
	n = take_done(sh, fn, arg);
	return ret < 0 ? ret : n;
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
	uint16_t id, next;

	if (sh->st && lock(sh) >= 0) {
		o = &sh->st->owners[sh->owner];
		/* Handed on and never taken: nothing will take them now. */
		id = __atomic_exchange_n(&o->done, NO_ID, __ATOMIC_ACQUIRE);
		for (; id != NO_ID; id = next) {
			next = sh->recs[id - 1].next;
			release(sh, id);
		}
		if (o->state == TCMU_OWNER_LIVE)
			sh->st->nr_owners--;
		/* Its commands still out are released as they complete. */
		o->state = o->busy ? TCMU_OWNER_GONE : TCMU_OWNER_FREE;
		pthread_mutex_unlock(&o->alive);
		unlock(sh);
	}
	tcmu_sub_free(&sh->sub);
	free(sh->spent);
	memset(sh, 0, sizeof(*sh));
}
