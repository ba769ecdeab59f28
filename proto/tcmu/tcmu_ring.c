// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU shared region: layout, submitter and handler (see tcmu_ring.h).
 * The other side may be hostile: every value read from the region is read
 * once into a local and checked there, so it cannot change under a check.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcmu_ring.h"

#define ENT_ALIGN	((uint32_t)TCMU_OP_ALIGN_SIZE)
#define ENT_MIN		((uint32_t)sizeof(struct tcmu_cmd_entry))
#define IOV_OFF		((uint32_t)offsetof(struct tcmu_cmd_entry, req.iov))
#define MB_HEAD		offsetof(struct tcmu_mailbox, cmd_head)
#define MB_TAIL		offsetof(struct tcmu_mailbox, cmd_tail)

#define STATE_MAGIC	0x544d5353u	/* "TMSS" */
#define NO_ID		0

/* One cmd_id's command, and its answer once the handler retired it. */
struct tcmu_sub_slot {
	uint32_t nblks, len;
	uint8_t busy;			/* 1: queued, 2: answered */
	uint8_t status, uflags;
	uint16_t owner;
	uint16_t next;			/* in its owner's done list */
	uint32_t read_len;
	uint8_t sense[TCMU_SENSE_BUFFERSIZE];
};

/* One entry in the ring, as queued: lengths come from here, not the ring. */
struct tcmu_sub_ent {
	uint32_t len;
	uint32_t pad;
};

static uint32_t round_up8(uint32_t v)
{
	return (v + ENT_ALIGN - 1) & ~(ENT_ALIGN - 1);
}

/* The mailbox fields are packed: go through the byte offset for atomics. */
static uint32_t *mb_word(uint8_t *base, size_t off)
{
	return (uint32_t *)(base + off);
}

static uint32_t ring_used(uint32_t head, uint32_t tail, uint32_t size)
{
	return (head + size - tail) % size;
}

uint64_t tcmu_region_size(uint32_t cmdr_size, uint64_t data_size)
{
	return (uint64_t)TCMU_MB_SIZE + cmdr_size + data_size;
}

int tcmu_region_layout(void *mem, uint64_t mem_size, uint32_t cmdr_size,
		       uint64_t data_size, uint16_t flags)
{
	struct tcmu_mailbox *mb = mem;

	if (!cmdr_size || cmdr_size % ENT_ALIGN ||
	    cmdr_size > UINT32_MAX - TCMU_MB_SIZE ||
	    data_size > UINT64_MAX / 2 ||
	    tcmu_region_size(cmdr_size, data_size) > mem_size)
		return -EINVAL;
	memset(mb, 0, TCMU_MB_SIZE);
	mb->version = TCMU_MAILBOX_VERSION;
	mb->flags = flags;
	mb->cmdr_off = TCMU_MB_SIZE;
	mb->cmdr_size = cmdr_size;
	return 0;
}

uint32_t tcmu_cmd_entry_size(uint32_t iov_cnt, uint32_t cdb_len)
{
	uint32_t base = IOV_OFF + iov_cnt * (uint32_t)sizeof(struct iovec);

	/* As the kernel: never shorter than the response needs. */
	if (base < ENT_MIN)
		base = ENT_MIN;
	return round_up8(base + cdb_len);
}

/* ---- submitter ---- */

static uint64_t align64(uint64_t v)
{
	return (v + 63) & ~63ull;
}

/* The geometry a region and these limits give: 0, or -EINVAL. */
static int sub_geometry(struct tcmu_sub *s, const void *region,
			uint64_t region_size, uint32_t blk_size,
			uint32_t max_cmds, uint32_t max_data)
{
	const struct tcmu_mailbox *mb = region;
	uint64_t nr_blks;

	if (!blk_size || !max_cmds || max_cmds > UINT16_MAX || !max_data ||
	    mb->version != TCMU_MAILBOX_VERSION ||
	    (uint64_t)mb->cmdr_off + mb->cmdr_size > region_size ||
	    mb->cmd_head >= mb->cmdr_size)
		return -EINVAL;
	s->cmdr_off = mb->cmdr_off;
	s->cmdr_size = mb->cmdr_size;
	s->data_off = (uint64_t)s->cmdr_off + s->cmdr_size;
	nr_blks = (region_size - s->data_off) / blk_size;
	if (!nr_blks || nr_blks > UINT32_MAX)
		return -EINVAL;
	s->blk_size = blk_size;
	s->nr_blks = nr_blks;
	s->max_blks = (max_data + blk_size - 1) / blk_size;
	s->nr_slots = max_cmds;
	/* Each command brings at most one PAD with it. */
	s->ent_cap = 2 * max_cmds;
	return 0;
}

/* Where the arrays go after the state, and its whole size. */
static uint64_t sub_layout(const struct tcmu_sub *s, struct tcmu_sub_state *st)
{
	uint64_t off = align64(sizeof(*st));

	st->bitmap_off = off;
	off = align64(off + ((uint64_t)s->nr_blks + 63) / 64 * 8);
	st->ids_off = off;
	off = align64(off + (uint64_t)s->nr_slots * sizeof(uint16_t));
	st->slots_off = off;
	off = align64(off + (uint64_t)s->nr_slots *
		      sizeof(struct tcmu_sub_slot));
	st->blks_off = off;
	off = align64(off + (uint64_t)s->nr_slots * s->max_blks * 4);
	st->ents_off = off;
	off = align64(off + (uint64_t)s->ent_cap *
		      sizeof(struct tcmu_sub_ent));
	return off;
}

/* This process's pointers into the state. */
static void sub_map(struct tcmu_sub *s)
{
	uint8_t *p = (uint8_t *)s->st;

	s->bitmap = (uint64_t *)(p + s->st->bitmap_off);
	s->free_ids = (uint16_t *)(p + s->st->ids_off);
	s->slots = (struct tcmu_sub_slot *)(p + s->st->slots_off);
	s->slot_blks = (uint32_t *)(p + s->st->blks_off);
	s->ents = (struct tcmu_sub_ent *)(p + s->st->ents_off);
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

static void sub_fill(struct tcmu_sub *s, const struct tcmu_mailbox *mb,
		     uint64_t size)
{
	struct tcmu_sub_state *st = s->st;
	uint32_t i;

	st->size = size;
	st->cmdr_off = s->cmdr_off;
	st->cmdr_size = s->cmdr_size;
	st->data_off = s->data_off;
	st->blk_size = s->blk_size;
	st->nr_blks = s->nr_blks;
	st->max_blks = s->max_blks;
	st->nr_slots = s->nr_slots;
	st->ent_cap = s->ent_cap;
	st->head = st->cleaned = st->pub = mb->cmd_head;
	st->free_blks = s->nr_blks;
	st->nr_free = s->nr_slots;
	sub_map(s);
	/* Lowest ids on top: 1 goes out first. */
	for (i = 0; i < s->nr_slots; i++)
		s->free_ids[i] = s->nr_slots - i;
	st->magic = STATE_MAGIC;
}

static int sub_common(struct tcmu_sub *s, void *region)
{
	s->base = region;
	s->mb = region;
	s->iov_tmp = calloc(s->max_blks, sizeof(*s->iov_tmp));
	return s->iov_tmp ? 0 : -ENOMEM;
}

/*
 * A new state for region in mem (NULL: allocated here, private), laid out
 * and filled in: the one set-up of tcmu_sub_init() and tcmu_sub_create().
 */
static int sub_new(struct tcmu_sub *s, void *region, uint64_t region_size,
		   void *mem, uint64_t mem_size, uint32_t blk_size,
		   uint32_t max_cmds, uint32_t max_data)
{
	struct tcmu_sub_state tmp;
	uint64_t size;
	int ret;

	memset(s, 0, sizeof(*s));
	ret = sub_geometry(s, region, region_size, blk_size, max_cmds,
			   max_data);
	if (ret)
		return ret;
	size = sub_layout(s, &tmp);
	if (!mem) {
		mem = calloc(1, size);
		s->own_st = true;
	} else if (size > mem_size) {
		return -EINVAL;
	}
	s->st = mem;
	if (!s->st)
		return -ENOMEM;
	sub_layout(s, s->st);
	sub_fill(s, region, size);
	return sub_common(s, region);
}

int tcmu_sub_init(struct tcmu_sub *s, void *region, uint64_t region_size,
		  uint32_t blk_size, uint32_t max_cmds, uint32_t max_data)
{
	int ret;

	ret = sub_new(s, region, region_size, NULL, 0, blk_size, max_cmds,
		      max_data);
	if (ret) {
		tcmu_sub_free(s);
		return ret;
	}
	s->st->owners[0].state = TCMU_OWNER_LIVE;
	s->st->nr_owners = 1;
	return 0;
}

uint64_t tcmu_sub_state_size(const void *region, uint64_t region_size,
			     uint32_t blk_size, uint32_t max_cmds,
			     uint32_t max_data)
{
	struct tcmu_sub_state tmp;
	struct tcmu_sub s;

	if (sub_geometry(&s, region, region_size, blk_size, max_cmds,
			 max_data))
		return 0;
	return sub_layout(&s, &tmp);
}

static inline int lock(struct tcmu_sub *s);
static inline void unlock(struct tcmu_sub *s);
static bool join_wait(struct tcmu_sub *s);
static void sub_rebuild(struct tcmu_sub *s);

/*
 * Become an owner: the first free index, its alive mutex held. @rebuild:
 * the creator died in an operation it ran without the lock.
 */
static int sub_enter(struct tcmu_sub *s, bool rebuild)
{
	struct tcmu_sub_state *st = s->st;
	uint32_t i;
	int ret;

	ret = lock(s);
	if (ret < 0)
		return ret;
	if (rebuild)
		sub_rebuild(s);
	for (i = 0; i < TCMU_SUB_OWNERS; i++)
		if (st->owners[i].state == TCMU_OWNER_FREE)
			break;
	if (i == TCMU_SUB_OWNERS) {
		unlock(s);
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
		s->owner = i;
	}
	unlock(s);
	return ret;
}

int tcmu_sub_create(struct tcmu_sub *s, void *region, uint64_t region_size,
		    void *mem, uint64_t mem_size, uint32_t blk_size,
		    uint32_t max_cmds, uint32_t max_data)
{
	int ret;

	ret = sub_new(s, region, region_size, mem, mem_size, blk_size,
		      max_cmds, max_data);
	if (!ret)
		ret = mutex_init_shared(&s->st->lock);
	if (ret) {
		tcmu_sub_free(s);
		return ret;
	}
	s->shared = true;
	ret = sub_enter(s, false);
	if (ret)
		tcmu_sub_free(s);
	else
		s->solo = true;
	return ret;
}

int tcmu_sub_join(struct tcmu_sub *s, void *region, uint64_t region_size,
		  void *mem, uint64_t mem_size, uint32_t max_data)
{
	const struct tcmu_mailbox *mb = region;
	struct tcmu_sub_state *st = mem;
	struct tcmu_sub_state tmp;
	int ret;

	memset(s, 0, sizeof(*s));
	if (mem_size < sizeof(*st) || st->magic != STATE_MAGIC ||
	    st->size > mem_size || st->cmdr_off != mb->cmdr_off ||
	    st->cmdr_size != mb->cmdr_size || !st->blk_size ||
	    st->data_off != (uint64_t)st->cmdr_off + st->cmdr_size ||
	    (uint64_t)st->nr_blks * st->blk_size > region_size - st->data_off ||
	    !st->nr_slots || st->nr_slots > UINT16_MAX ||
	    st->ent_cap != 2 * st->nr_slots)
		return -EINVAL;
	s->cmdr_off = st->cmdr_off;
	s->cmdr_size = st->cmdr_size;
	s->data_off = st->data_off;
	s->blk_size = st->blk_size;
	s->nr_blks = st->nr_blks;
	s->max_blks = st->max_blks;
	s->nr_slots = st->nr_slots;
	s->ent_cap = st->ent_cap;
	/* The arrays where this geometry puts them, inside the mapping. */
	tmp = *st;
	if (sub_layout(s, &tmp) != st->size ||
	    tmp.bitmap_off != st->bitmap_off || tmp.ids_off != st->ids_off ||
	    tmp.slots_off != st->slots_off || tmp.blks_off != st->blks_off ||
	    tmp.ents_off != st->ents_off)
		return -EINVAL;
	if ((uint64_t)max_data > (uint64_t)s->max_blks * s->blk_size)
		return -E2BIG;
	s->st = st;
	s->shared = true;
	sub_map(s);
	ret = sub_common(s, region);
	if (!ret)
		ret = sub_enter(s, join_wait(s));
	if (ret) {
		free(s->iov_tmp);
		memset(s, 0, sizeof(*s));
	}
	return ret;
}

/*
 * After a submitter died mid-change: the free blocks and cmd_ids again
 * from the slots. A slot is marked busy last when a command is queued and
 * first when it is released, so the busy slots are exactly the commands
 * out: blocks taken or ids popped for anything else were the dead one's.
 */
static void sub_rebuild(struct tcmu_sub *s)
{
	struct tcmu_sub_state *st = s->st;
	uint32_t id, i;

	memset(s->bitmap, 0, ((uint64_t)s->nr_blks + 63) / 64 * 8);
	st->free_blks = s->nr_blks;
	st->blk_lo = 0;
	st->nr_free = 0;
	/* Lowest ids on top, as sub_fill() leaves them. */
	for (id = s->nr_slots; id >= 1; id--) {
		const struct tcmu_sub_slot *slot = &s->slots[id - 1];
		const uint32_t *blks = &s->slot_blks[(size_t)(id - 1) *
						      s->max_blks];

		if (!slot->busy) {
			s->free_ids[st->nr_free++] = id;
			continue;
		}
		for (i = 0; i < slot->nblks; i++)
			s->bitmap[blks[i] / 64] |= 1ull << (blks[i] % 64);
		st->free_blks -= slot->nblks;
	}
}

/*
 * The lock of a shared state. A holder that died (EOWNERDEAD) left it
 * held mid-change: the state is made consistent (its blocks and ids
 * rebuilt) and its owner counted gone, so that its commands are released
 * as they complete. -EIO when the lock is lost.
 */
static int lock_shared(struct tcmu_sub *s)
{
	struct tcmu_sub_state *st = s->st;
	int ret;

	if (s->solo) {
		/* Dekker with join_wait(): one of the two sees the other. */
		__atomic_store_n(&st->in_op, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&st->join_req, __ATOMIC_SEQ_CST))
			return 0;
		__atomic_store_n(&st->in_op, 0, __ATOMIC_RELEASE);
		s->solo = false;
	}
	ret = pthread_mutex_lock(&st->lock);
	if (ret == EOWNERDEAD) {
		uint32_t dead = st->holder;

		pthread_mutex_consistent(&st->lock);
		sub_rebuild(s);
		if (dead < TCMU_SUB_OWNERS && dead != s->owner &&
		    st->owners[dead].state == TCMU_OWNER_LIVE) {
			st->owners[dead].state = TCMU_OWNER_GONE;
			st->nr_owners--;
		}
		s->recovered++;
		ret = 0;
	}
	if (ret)
		return -EIO;
	st->holder = s->owner;
	return 0;
}

static inline int lock(struct tcmu_sub *s)
{
	return s->shared ? lock_shared(s) : 0;
}

static inline void unlock(struct tcmu_sub *s)
{
	if (s->solo)
		__atomic_store_n(&s->st->in_op, 0, __ATOMIC_RELEASE);
	else if (s->shared)
		pthread_mutex_unlock(&s->st->lock);
}

/*
 * Before a second submitter's first lock: the creator, alone so far, runs
 * without the mutex (its robust, process-shared path costs a single job
 * more than the rest of a command's queuing). It leaves that for good at
 * its next operation once it sees join_req; one it is in now is waited
 * for, unless it died in it: then true, the state to be rebuilt.
 */
static bool join_wait(struct tcmu_sub *s)
{
	struct tcmu_sub_state *st = s->st;
	struct tcmu_sub_owner *o = &st->owners[0];
	int ret;

	__atomic_store_n(&st->join_req, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&st->in_op, __ATOMIC_SEQ_CST)) {
		ret = pthread_mutex_trylock(&o->alive);
		if (ret == EOWNERDEAD || ret == 0) {
			if (ret == EOWNERDEAD)
				pthread_mutex_consistent(&o->alive);
			pthread_mutex_unlock(&o->alive);
			s->recovered++;
			return true;
		}
		sched_yield();
	}
	return false;
}

uint32_t tcmu_sub_ring_free(const struct tcmu_sub *s)
{
	return s->cmdr_size - ring_used(s->st->head, s->st->cleaned,
					s->cmdr_size) - 1;
}

void tcmu_sub_bounds(struct tcmu_sub *s, uint32_t *cleaned, uint32_t *pub)
{
	if (lock(s) < 0)
		return;
	*cleaned = s->st->cleaned;
	*pub = s->st->pub;
	unlock(s);
}

static void blk_put(struct tcmu_sub *s, const uint32_t *blks, uint32_t n)
{
	struct tcmu_sub_state *st = s->st;
	uint32_t i;

	for (i = 0; i < n; i++) {
		s->bitmap[blks[i] / 64] &= ~(1ull << (blks[i] % 64));
		if (blks[i] / 64 < st->blk_lo)
			st->blk_lo = blks[i] / 64;
	}
	st->free_blks += n;
}

/*
 * Take the @n lowest free blocks, as the kernel takes the first zero bit
 * each time: blocks are reused as soon as they are free, so only as much
 * of the data area as is in flight at once is ever touched (a memfd page
 * costs memory from its first touch). blk_lo skips the words known to be
 * full, which does not change which blocks are taken. The caller checked
 * free_blks.
 */
static void blk_get(struct tcmu_sub *s, uint32_t *blks, uint32_t n)
{
	struct tcmu_sub_state *st = s->st;
	uint32_t w = st->blk_lo, got = 0;

	while (got < n) {
		uint64_t avail = ~s->bitmap[w];

		if (w == s->nr_blks / 64)
			avail &= (1ull << (s->nr_blks % 64)) - 1;
		while (avail && got < n) {
			uint32_t b = __builtin_ctzll(avail);

			avail &= avail - 1;
			s->bitmap[w] |= 1ull << b;
			blks[got++] = w * 64 + b;
		}
		if (!avail)
			w++;
	}
	st->blk_lo = w;
	st->free_blks -= n;
}

static void ent_push(struct tcmu_sub *s, uint32_t len, bool pad)
{
	struct tcmu_sub_state *st = s->st;
	struct tcmu_sub_ent *e;

	e = &s->ents[(st->ent_first + st->ent_cnt++) % s->ent_cap];
	e->len = len;
	e->pad = pad;
}

static void put_hdr(struct tcmu_cmd_entry_hdr *hdr, enum tcmu_opcode op,
		    uint32_t len, uint16_t cmd_id)
{
	uint32_t len_op = 0;

	tcmu_hdr_set_len(&len_op, len);
	tcmu_hdr_set_op(&len_op, op);
	hdr->len_op = len_op;
	hdr->cmd_id = cmd_id;
	hdr->kflags = 0;
	hdr->uflags = 0;
}

static void publish(struct tcmu_sub *s)
{
	s->st->pub = s->st->head;
	__atomic_store_n(mb_word(s->base, MB_HEAD), s->st->head,
			 __ATOMIC_RELEASE);
}

static int sub_queue(struct tcmu_sub *s, const void *cdb, uint32_t cdb_len,
		     uint32_t data_len, const void *wbuf)
{
	struct tcmu_sub_state *st = s->st;
	uint32_t nblks = (data_len + s->blk_size - 1) / s->blk_size;
	uint32_t *blks, iov_cnt = 0, len, pad = 0, i;
	struct tcmu_cmd_entry *ent;
	struct tcmu_sub_slot *slot;
	const uint8_t *src = wbuf;
	uint16_t id;

	if (!st->nr_free || nblks > st->free_blks)
		return -EBUSY;
	id = s->free_ids[st->nr_free - 1];
	blks = &s->slot_blks[(size_t)(id - 1) * s->max_blks];
	if (nblks)
		blk_get(s, blks, nblks);

	/* Neighbouring blocks share an iovec, as the kernel builds them. */
	for (i = 0; i < nblks; i++) {
		uint64_t off = s->data_off + (uint64_t)blks[i] * s->blk_size;
		uint32_t n = data_len - i * s->blk_size;

		if (n > s->blk_size)
			n = s->blk_size;
		if (iov_cnt && blks[i] == blks[i - 1] + 1) {
			s->iov_tmp[iov_cnt - 1].iov_len += n;
		} else {
			s->iov_tmp[iov_cnt].iov_base = (void *)(uintptr_t)off;
			s->iov_tmp[iov_cnt++].iov_len = n;
		}
	}
	len = tcmu_cmd_entry_size(iov_cnt, cdb_len);
	/* An entry never wraps: a PAD fills the ring's end first. */
	if (st->head + len > s->cmdr_size)
		pad = s->cmdr_size - st->head;
	if ((uint64_t)pad + len > tcmu_sub_ring_free(s)) {
		blk_put(s, blks, nblks);
		return -EBUSY;
	}

	if (pad) {
		put_hdr((void *)(s->base + s->cmdr_off + st->head), TCMU_OP_PAD,
			pad, 0);
		ent_push(s, pad, true);
		st->head = 0;
	}
	ent = (void *)(s->base + s->cmdr_off + st->head);
	memset(ent, 0, IOV_OFF);
	put_hdr(&ent->hdr, TCMU_OP_CMD, len, id);
	ent->req.iov_cnt = iov_cnt;
	/* The CDB follows the iovecs (or the response area), as the kernel's. */
	ent->req.cdb_off = (uint64_t)s->cmdr_off + st->head +
			   tcmu_cmd_entry_size(iov_cnt, 0);
	memcpy(ent->req.iov, s->iov_tmp, iov_cnt * sizeof(struct iovec));
	memcpy(s->base + ent->req.cdb_off, cdb, cdb_len);

	for (i = 0; wbuf && i < nblks; i++) {
		uint32_t n = data_len - i * s->blk_size;

		if (n > s->blk_size)
			n = s->blk_size;
		memcpy(s->base + s->data_off + (uint64_t)blks[i] * s->blk_size,
		       src + (size_t)i * s->blk_size, n);
	}
	/* Last, so that a submitter dying above leaves no half command. */
	slot = &s->slots[id - 1];
	slot->nblks = nblks;
	slot->len = data_len;
	slot->busy = 1;
	slot->owner = s->owner;
	slot->next = NO_ID;
	st->owners[s->owner].busy++;
	st->nr_free--;
	ent_push(s, len, false);
	st->head = (st->head + len) % s->cmdr_size;
	return id;
}

int tcmu_sub_queue(struct tcmu_sub *s, const void *cdb, uint32_t cdb_len,
		   uint32_t data_len, const void *wbuf)
{
	uint32_t nblks = (data_len + s->blk_size - 1) / s->blk_size;
	int ret;

	if (!cdb_len || cdb_len > TCMU_CDB_MAX || nblks > s->max_blks ||
	    tcmu_cmd_entry_size(nblks, cdb_len) >= s->cmdr_size / 2)
		return -EINVAL;	/* half the ring: fits wherever the head is */
	ret = lock(s);
	if (ret < 0)
		return ret;
	ret = sub_queue(s, cdb, cdb_len, data_len, wbuf);
	/* Shared, others move cmd_head too: each command is published. */
	if (ret > 0 && s->shared)
		publish(s);
	unlock(s);
	return ret;
}

void tcmu_sub_commit(struct tcmu_sub *s)
{
	if (s->shared)
		return;		/* published as queued */
	publish(s);
}

int tcmu_sub_copy_out(const struct tcmu_sub *s, uint16_t cmd_id, void *buf,
		      uint32_t len)
{
	const struct tcmu_sub_slot *slot;
	const uint32_t *blks;
	uint8_t *dst = buf;
	uint32_t i;

	if (!cmd_id || cmd_id > s->nr_slots || !s->slots[cmd_id - 1].busy)
		return -EINVAL;
	slot = &s->slots[cmd_id - 1];
	if (len > slot->len)
		return -EINVAL;
	blks = &s->slot_blks[(size_t)(cmd_id - 1) * s->max_blks];
	for (i = 0; len; i++) {
		uint32_t n = len < s->blk_size ? len : s->blk_size;

		memcpy(dst, s->base + s->data_off +
		       (uint64_t)blks[i] * s->blk_size, n);
		dst += n;
		len -= n;
	}
	return 0;
}

/* A command is over: its blocks and cmd_id go back, its owner's count down. */
static void release(struct tcmu_sub *s, uint16_t id)
{
	struct tcmu_sub_state *st = s->st;
	struct tcmu_sub_slot *slot = &s->slots[id - 1];
	struct tcmu_sub_owner *o = &st->owners[slot->owner];

	/* First, for sub_rebuild(): a slot not busy is wholly free. */
	slot->busy = 0;
	blk_put(s, &s->slot_blks[(size_t)(id - 1) * s->max_blks],
		slot->nblks);
	s->free_ids[st->nr_free++] = id;
	if (o->busy)
		o->busy--;
	if (o->state == TCMU_OWNER_GONE && !o->busy)
		o->state = TCMU_OWNER_FREE;
}

static void release_list(struct tcmu_sub *s, uint16_t id)
{
	while (id != NO_ID) {
		uint16_t next = s->slots[id - 1].next;

		release(s, id);
		id = next;
	}
}

/*
 * Another owner still there? One that died holding its alive mutex is
 * found here (EOWNERDEAD): counted gone, its handed-on completions
 * released.
 */
static bool owner_here(struct tcmu_sub *s, uint32_t i)
{
	struct tcmu_sub_owner *o = &s->st->owners[i];
	uint16_t list;
	int ret;

	if (o->state != TCMU_OWNER_LIVE)
		return false;
	if (i == s->owner || !s->shared)
		return true;
	ret = pthread_mutex_trylock(&o->alive);
	if (ret == EBUSY)
		return true;
	if (ret == EOWNERDEAD)
		pthread_mutex_consistent(&o->alive);
	if (ret == 0 || ret == EOWNERDEAD)
		pthread_mutex_unlock(&o->alive);
	o->state = TCMU_OWNER_GONE;
	s->st->nr_owners--;
	list = o->done_first;
	o->done_first = o->done_last = NO_ID;
	release_list(s, list);
	return false;
}

/* A retired command to its owner's done list, or released if none. */
static void hand_on(struct tcmu_sub *s, uint16_t id)
{
	struct tcmu_sub_slot *slot = &s->slots[id - 1];
	struct tcmu_sub_owner *o;

	if (!owner_here(s, slot->owner)) {
		release(s, id);
		return;
	}
	o = &s->st->owners[slot->owner];
	slot->next = NO_ID;
	if (o->done_last != NO_ID)
		s->slots[o->done_last - 1].next = id;
	else
		o->done_first = id;
	o->done_last = id;
}

/*
 * Walk what the handler retired, under the lock: 0 or -EPROTO. Alone on
 * the ring (private, or its creator before anyone joined), every
 * command is this submitter's: each goes to @fn at once and is released,
 * as one submitter's reap has always done. Shared, each is handed to its
 * owner's list.
 */
static int collect(struct tcmu_sub *s, tcmu_done_fn fn, void *arg, int *done)
{
	struct tcmu_sub_state *st = s->st;
	bool alone = !s->shared || s->solo;
	uint32_t tail, todo;

	tail = __atomic_load_n(mb_word(s->base, MB_TAIL), __ATOMIC_ACQUIRE);
	if (tail >= s->cmdr_size || tail % ENT_ALIGN)
		return -EPROTO;
	todo = ring_used(tail, st->cleaned, s->cmdr_size);
	/* The tail may not pass what the handler was shown. */
	if (todo > ring_used(st->pub, st->cleaned, s->cmdr_size))
		return -EPROTO;

	while (todo) {
		const struct tcmu_sub_ent *e = &s->ents[st->ent_first];
		struct tcmu_cmd_entry ent;
		struct tcmu_sub_slot *slot;
		uint16_t id;

		/* The tail must land on an entry boundary. */
		if (!st->ent_cnt || e->len > todo)
			return -EPROTO;
		if (!e->pad) {
			/* One copy: the handler cannot change it under us. */
			memcpy(&ent, s->base + s->cmdr_off + st->cleaned,
			       sizeof(ent));
			id = ent.hdr.cmd_id;
			if (!id || id > s->nr_slots || s->slots[id - 1].busy != 1)
				return -EPROTO;
			slot = &s->slots[id - 1];
			if (alone) {
				struct tcmu_done d = {
					.cmd_id = id,
					.status = ent.rsp.scsi_status,
					.uflags = ent.hdr.uflags,
					.read_len = ent.rsp.read_len,
					.sense = (const uint8_t *)
						 ent.rsp.sense_buffer,
				};

				if (fn)
					fn(arg, &d);
				release(s, id);
				(*done)++;
			} else {
				/* The answer as it was, for its owner. */
				slot->busy = 2;
				slot->status = ent.rsp.scsi_status;
				slot->uflags = ent.hdr.uflags;
				slot->read_len = ent.rsp.read_len;
				memcpy(slot->sense, ent.rsp.sense_buffer,
				       TCMU_SENSE_BUFFERSIZE);
				hand_on(s, id);
			}
		}
		st->cleaned = (st->cleaned + e->len) % s->cmdr_size;
		todo -= e->len;
		st->ent_first = (st->ent_first + 1) % s->ent_cap;
		st->ent_cnt--;
	}
	return 0;
}

int tcmu_sub_reap(struct tcmu_sub *s, tcmu_done_fn fn, void *arg)
{
	struct tcmu_sub_owner *o;
	uint16_t first, id;
	int ret, done = 0;

	ret = lock(s);
	if (ret < 0)
		return ret;
	ret = collect(s, fn, arg, &done);
	o = &s->st->owners[s->owner];
	first = o->done_first;
	o->done_first = o->done_last = NO_ID;
	unlock(s);
	if (first == NO_ID)
		return ret ? ret : done;

	/* This owner's, outside the lock: their blocks are still its own. */
	for (id = first; id != NO_ID; id = s->slots[id - 1].next) {
		const struct tcmu_sub_slot *slot = &s->slots[id - 1];
		struct tcmu_done d = {
			.cmd_id = id,
			.status = slot->status,
			.uflags = slot->uflags,
			.read_len = slot->read_len,
			.sense = slot->sense,
		};

		if (fn)
			fn(arg, &d);
		done++;
	}
	if (lock(s) >= 0) {
		release_list(s, first);
		unlock(s);
	}
	return ret ? ret : done;
}

void tcmu_sub_free(struct tcmu_sub *s)
{
	struct tcmu_sub_owner *o;
	uint16_t list;

	if (s->st && s->shared && lock(s) >= 0) {
		o = &s->st->owners[s->owner];
		list = o->done_first;
		o->done_first = o->done_last = NO_ID;
		release_list(s, list);
		if (o->state == TCMU_OWNER_LIVE)
			s->st->nr_owners--;
		/* Its commands still out are released as they complete. */
		o->state = o->busy ? TCMU_OWNER_GONE : TCMU_OWNER_FREE;
		pthread_mutex_unlock(&o->alive);
		unlock(s);
	}
	if (s->own_st)
		free(s->st);
	free(s->iov_tmp);
	memset(s, 0, sizeof(*s));
}

/* ---- handler ---- */

int tcmu_hdl_init(struct tcmu_hdl *h, void *region, uint64_t size)
{
	struct tcmu_mailbox mb;
	uint32_t tail;

	memset(h, 0, sizeof(*h));
	if (size < TCMU_MB_SIZE)
		return -EINVAL;
	memcpy(&mb, region, sizeof(mb));
	if (mb.version != TCMU_MAILBOX_VERSION)
		return -EPROTONOSUPPORT;
	if (mb.cmdr_off < TCMU_MB_SIZE || mb.cmdr_off % ENT_ALIGN ||
	    !mb.cmdr_size || mb.cmdr_size % ENT_ALIGN ||
	    (uint64_t)mb.cmdr_off + mb.cmdr_size > size)
		return -EINVAL;
	tail = __atomic_load_n(mb_word(region, MB_TAIL), __ATOMIC_ACQUIRE);
	if (tail >= mb.cmdr_size || tail % ENT_ALIGN)
		return -EINVAL;
	h->base = region;
	h->size = size;
	h->cmdr_off = mb.cmdr_off;
	h->cmdr_size = mb.cmdr_size;
	h->data_off = (uint64_t)mb.cmdr_off + mb.cmdr_size;
	h->next = h->tail = tail;
	return 0;
}

/* An entry's header at @pos, with its length checked against @avail. */
static int hdl_hdr(const struct tcmu_hdl *h, uint32_t pos, uint32_t avail,
		   struct tcmu_cmd_entry_hdr *hdr)
{
	uint32_t len;

	memcpy(hdr, h->base + h->cmdr_off + pos, sizeof(*hdr));
	len = tcmu_hdr_get_len(hdr->len_op);
	/* Whole, aligned, never past the head nor across the ring's end. */
	if (!len || len > avail || len > h->cmdr_size - pos)
		return -EPROTO;
	return 0;
}

static uint32_t hdl_head(const struct tcmu_hdl *h, int *err)
{
	uint32_t head;

	head = __atomic_load_n(mb_word(h->base, MB_HEAD), __ATOMIC_ACQUIRE);
	*err = head >= h->cmdr_size || head % ENT_ALIGN ? -EPROTO : 0;
	return head;
}

/* Retire entries at the tail that need no completion, then publish. */
static int hdl_retire(struct tcmu_hdl *h)
{
	struct tcmu_cmd_entry_hdr hdr;

	while (h->tail != h->next) {
		uint32_t avail = ring_used(h->next, h->tail, h->cmdr_size);

		if (hdl_hdr(h, h->tail, avail, &hdr))
			return -EPROTO;
		if (tcmu_hdr_get_op(hdr.len_op) == TCMU_OP_CMD)
			break;
		h->tail = (h->tail + tcmu_hdr_get_len(hdr.len_op)) %
			  h->cmdr_size;
	}
	__atomic_store_n(mb_word(h->base, MB_TAIL), h->tail, __ATOMIC_RELEASE);
	return 0;
}

/* Check a CMD entry's request (read once into a copy) and translate it. */
static int hdl_cmd(const struct tcmu_hdl *h, uint32_t pos, uint32_t len,
		   struct tcmu_hdl_cmd *cmd)
{
	const uint8_t *ent = h->base + h->cmdr_off + pos;
	uint64_t ent_off = (uint64_t)h->cmdr_off + pos, iov_end, cdb_off;
	struct tcmu_cmd_entry e;
	uint32_t i;

	memcpy(&e, ent, sizeof(e));
	cmd->iov_cnt = 0;
	cmd->cdb = NULL;
	cmd->cdb_max = 0;
	/* No bidirectional or DIF data: we never offer either. */
	if (e.req.iov_bidi_cnt || e.req.iov_dif_cnt ||
	    e.req.iov_cnt > cmd->iov_max ||
	    e.req.iov_cnt > (len - IOV_OFF) / sizeof(struct iovec))
		return -EINVAL;
	iov_end = ent_off + IOV_OFF + (uint64_t)e.req.iov_cnt *
		  sizeof(struct iovec);
	/*
	 * The CDB lies in the entry after the iovecs and the response, as the
	 * kernel puts it: completing another command here leaves it intact.
	 */
	cdb_off = e.req.cdb_off;
	if (cdb_off < iov_end || cdb_off < ent_off + ENT_MIN ||
	    cdb_off >= ent_off + len)
		return -EINVAL;
	for (i = 0; i < e.req.iov_cnt; i++) {
		struct iovec v;
		uint64_t off;

		memcpy(&v, ent + IOV_OFF + i * sizeof(v), sizeof(v));
		off = (uint64_t)(uintptr_t)v.iov_base;
		/* Data lives in the data area only, and ends inside it. */
		if (off < h->data_off || off > h->size ||
		    v.iov_len > h->size - off)
			return -EINVAL;
		cmd->iov[i].iov_base = h->base + off;
		cmd->iov[i].iov_len = v.iov_len;
	}
	cmd->iov_cnt = e.req.iov_cnt;
	cmd->cdb = h->base + cdb_off;
	cmd->cdb_max = ent_off + len - cdb_off;
	if (cmd->cdb_max > TCMU_CDB_MAX)
		cmd->cdb_max = TCMU_CDB_MAX;
	return 0;
}

int tcmu_hdl_next(struct tcmu_hdl *h, struct tcmu_hdl_cmd *cmd)
{
	struct tcmu_cmd_entry_hdr hdr;
	uint32_t head;
	int err;

	head = hdl_head(h, &err);
	if (err)
		return err;
	/*
	 * The head never moves back over entries already handed out: that
	 * would hand out commands still outstanding a second time.
	 */
	if (ring_used(head, h->tail, h->cmdr_size) <
	    ring_used(h->next, h->tail, h->cmdr_size))
		return -EPROTO;
	while (h->next != head) {
		uint32_t avail = ring_used(head, h->next, h->cmdr_size);
		uint32_t pos = h->next, len;
		uint8_t *uflags;

		if (hdl_hdr(h, pos, avail, &hdr))
			return -EPROTO;
		len = tcmu_hdr_get_len(hdr.len_op);
		h->next = (pos + len) % h->cmdr_size;
		switch (tcmu_hdr_get_op(hdr.len_op)) {
		case TCMU_OP_PAD:
			break;
		case TCMU_OP_CMD:
			/* Too short to carry a response: cannot be completed. */
			if (len < ENT_MIN)
				return -EPROTO;
			cmd->cmd_id = hdr.cmd_id;
			err = hdl_cmd(h, pos, len, cmd);
			return err ? err : 1;
		default:
			/* Tell the submitter; it needs no completion. */
			uflags = h->base + h->cmdr_off + pos +
				 offsetof(struct tcmu_cmd_entry_hdr, uflags);
			*uflags |= TCMU_UFLAG_UNKNOWN_OP;
			break;
		}
		if (hdl_retire(h))
			return -EPROTO;
	}
	return 0;
}

int tcmu_hdl_complete(struct tcmu_hdl *h, uint16_t cmd_id, uint8_t status,
		      const void *sense, uint32_t sense_len, int64_t read_len)
{
	struct tcmu_cmd_entry_hdr hdr;
	struct tcmu_cmd_entry *ent;
	uint32_t avail;

	/* hdl_retire() left the tail on a CMD entry, or at next. */
	if (h->tail == h->next)
		return -EPROTO;
	avail = ring_used(h->next, h->tail, h->cmdr_size);
	if (hdl_hdr(h, h->tail, avail, &hdr) ||
	    tcmu_hdr_get_len(hdr.len_op) < ENT_MIN)
		return -EPROTO;
	ent = (void *)(h->base + h->cmdr_off + h->tail);
	/* With OOOC the entry names whichever command completed. */
	ent->hdr.cmd_id = cmd_id;
	ent->rsp.scsi_status = status;
	if (sense_len > TCMU_SENSE_BUFFERSIZE)
		sense_len = TCMU_SENSE_BUFFERSIZE;
	memset(ent->rsp.sense_buffer, 0, TCMU_SENSE_BUFFERSIZE);
	if (sense)
		memcpy(ent->rsp.sense_buffer, sense, sense_len);
	if (read_len >= 0) {
		ent->rsp.read_len = read_len;
		ent->hdr.uflags |= TCMU_UFLAG_READ_LEN;
	}
	h->tail = (h->tail + tcmu_hdr_get_len(hdr.len_op)) % h->cmdr_size;
	return hdl_retire(h);
}
