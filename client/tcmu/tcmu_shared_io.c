// SPDX-License-Identifier: GPL-2.0-only
/*
 * A shared TCMU ring's I/O (see tcmu_shared.h): commands queued under the
 * lock, a submitter with nothing out asleep for room, the retired entries
 * walked and each completion pushed on its owner's done stack, and an
 * owner's stack taken whole without the lock. The state, the lock and the
 * owners are tcmu_shared.c's.
 */
#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tcmu_scsi.h"
#include "tcmu_shared_int.h"
#include "torus_clock.h"

/* How long a submitter with nothing out sleeps for room at most. */
#define ROOM_WAIT_MS	100

static void wait_room(struct tcmu_shared_state *st, uint32_t seen)
{
	struct timespec ts = { .tv_nsec = ROOM_WAIT_MS * 1000000L };

	__atomic_add_fetch(&st->room_waiters, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &st->room, FUTEX_WAIT, seen, &ts, NULL, 0);
	__atomic_sub_fetch(&st->room_waiters, 1, __ATOMIC_SEQ_CST);
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

	if (!shared_owner_here(sh, rec->owner, &w->checked)) {
		shared_release(sh, d->cmd_id);
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
			shared_release(sh, id);
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
		id = shared_lock(sh);
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
		shared_unlock(sh);
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
	shared_release(a->sh, d->cmd_id);
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

	ret = shared_lock(sh);
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
	shared_unlock(sh);
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
		ret = shared_lock(sh);
		if (ret < 0)
			return ret;
		if (sh->solo) {
			ret = tcmu_sub_walk(&sh->sub, take_own, &a);
			shared_unlock(sh);
			return ret;
		}
		shared_unlock(sh);
	}
	if (unwalked(sh))
		ret = walk(sh);
	n = take_done(sh, fn, arg);
	return ret < 0 ? ret : n;
}

