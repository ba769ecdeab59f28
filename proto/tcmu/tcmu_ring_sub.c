// SPDX-License-Identifier: GPL-2.0-only
/*
 * The submitter's side of a TCMU command ring (see tcmu_ring_sub.h). The
 * handler may be hostile: every value read from the region is read once
 * into a local and checked there, so it cannot change under a check.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcmu_ring_sub.h"
#include "tcmu_scsi.h"

#define STATE_MAGIC	0x544d5353u	/* "TMSS" */

/* One cmd_id's command. */
struct tcmu_sub_slot {
	uint32_t nblks, len;
	uint8_t busy;			/* 1: queued, 2: walked */
};

/* One entry in the ring, as queued: lengths come from here, not the ring. */
struct tcmu_sub_ent {
	uint32_t len;
	uint32_t pad;
};

static uint64_t align64(uint64_t v)
{
	return (v + 63) & ~63ull;
}

/*
 * Ring arithmetic on values already below @size (the state's own, or a
 * cmd_tail checked against the ring): a compare where % would divide, a
 * few times per command.
 */
static inline uint32_t wrap(uint32_t v, uint32_t size)
{
	return v >= size ? v - size : v;
}

static inline uint32_t used(uint32_t head, uint32_t tail, uint32_t size)
{
	return head >= tail ? head - tail : head + size - tail;
}

/* Blocks for @len bytes: a shift for the usual power-of-two block. */
static inline uint32_t blocks_of(const struct tcmu_sub *s, uint32_t len)
{
	if (s->blk_shift)
		return (uint32_t)(((uint64_t)len + s->blk_size - 1) >>
				  s->blk_shift);
	return (uint32_t)(((uint64_t)len + s->blk_size - 1) / s->blk_size);
}

static void set_shift(struct tcmu_sub *s)
{
	s->blk_shift = 0;
	if (s->blk_size > 1 && !(s->blk_size & (s->blk_size - 1)))
		s->blk_shift = __builtin_ctz(s->blk_size);
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
	set_shift(s);
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
 * A new state for region in mem (NULL: allocated here), laid out and
 * filled in: the one set-up of tcmu_sub_init() and tcmu_sub_init_in().
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
	return tcmu_sub_init_in(s, region, region_size, NULL, 0, blk_size,
				max_cmds, max_data);
}

int tcmu_sub_init_in(struct tcmu_sub *s, void *region, uint64_t region_size,
		     void *mem, uint64_t mem_size, uint32_t blk_size,
		     uint32_t max_cmds, uint32_t max_data)
{
	int ret;

	ret = sub_new(s, region, region_size, mem, mem_size, blk_size,
		      max_cmds, max_data);
	if (ret)
		tcmu_sub_free(s);
	return ret;
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

int tcmu_sub_attach(struct tcmu_sub *s, void *region, uint64_t region_size,
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
	set_shift(s);
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
	sub_map(s);
	ret = sub_common(s, region);
	if (ret)
		memset(s, 0, sizeof(*s));
	return ret;
}

void tcmu_sub_free(struct tcmu_sub *s)
{
	if (s->own_st)
		free(s->st);
	free(s->iov_tmp);
	memset(s, 0, sizeof(*s));
}

/*
 * A slot is marked busy last when a command is queued and first when it
 * is released, so the busy slots are exactly the commands out: blocks
 * taken or ids popped for anything else were a change cut short.
 */
void tcmu_sub_rebuild(struct tcmu_sub *s)
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

uint32_t tcmu_sub_ring_free(const struct tcmu_sub *s)
{
	return s->cmdr_size - used(s->st->head, s->st->cleaned,
				   s->cmdr_size) - 1;
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

	e = &s->ents[wrap(st->ent_first + st->ent_cnt++, s->ent_cap)];
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
	__atomic_store_n(tcmu_mb_head(s->base), s->st->head, __ATOMIC_RELEASE);
}

static int sub_queue(struct tcmu_sub *s, const void *cdb, uint32_t cdb_len,
		     uint32_t data_len, const void *wbuf)
{
	struct tcmu_sub_state *st = s->st;
	uint32_t nblks = blocks_of(s, data_len);
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
	memset(ent, 0, TCMU_IOV_OFF);
	put_hdr(&ent->hdr, TCMU_OP_CMD, len, id);
	ent->hdr.kflags = s->kflags;
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
	/* Last, so that a change cut short above leaves no half command. */
	slot = &s->slots[id - 1];
	slot->nblks = nblks;
	slot->len = data_len;
	slot->busy = 1;
	st->nr_free--;
	ent_push(s, len, false);
	st->head = wrap(st->head + len, s->cmdr_size);
	return id;
}


int tcmu_sub_queue(struct tcmu_sub *s, const void *cdb, uint32_t cdb_len,
		   uint32_t data_len, const void *wbuf)
{
	uint32_t nblks = blocks_of(s, data_len);

	if (!cdb_len || cdb_len > TCMU_CDB_MAX || nblks > s->max_blks ||
	    tcmu_cmd_entry_size(nblks, cdb_len) >= s->cmdr_size / 2)
		return -EINVAL;	/* half the ring: fits wherever the head is */
	return sub_queue(s, cdb, cdb_len, data_len, wbuf);
}

void tcmu_sub_commit(struct tcmu_sub *s)
{
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

void tcmu_sub_release(struct tcmu_sub *s, uint16_t cmd_id)
{
	struct tcmu_sub_state *st = s->st;
	struct tcmu_sub_slot *slot = &s->slots[cmd_id - 1];

	/* First, for tcmu_sub_rebuild(): a slot not busy is wholly free. */
	slot->busy = 0;
	blk_put(s, &s->slot_blks[(size_t)(cmd_id - 1) * s->max_blks],
		slot->nblks);
	s->free_ids[st->nr_free++] = cmd_id;
}

/*
 * A field of a packed entry, read once: through a pointer of its own
 * width (the entry is 8-byte aligned, each field at its natural
 * alignment), so that no compiler turns the atomic into a library call.
 */
#define ENT_LOAD(ent, field)						\
	__atomic_load_n((const __typeof__((ent)->field) *)		\
			((const uint8_t *)(ent) +			\
			 offsetof(struct tcmu_cmd_entry, field)),	\
			__ATOMIC_RELAXED)

/*
 * One retired command's answer: each field read once into @d, the sense
 * copied to @sense only with CHECK CONDITION (the one status that carries
 * it); a handler cannot change what was read under a check. Its cmd_id,
 * or 0 when it names no command walked now.
 */
static uint16_t read_answer(const struct tcmu_sub *s, uint32_t at,
			    struct tcmu_done *d, uint8_t *sense)
{
	static const uint8_t no_sense[TCMU_SENSE_BUFFERSIZE];
	const struct tcmu_cmd_entry *ent = (const void *)(s->base +
							  s->cmdr_off + at);
	uint16_t id = ENT_LOAD(ent, hdr.cmd_id);

	if (!id || id > s->nr_slots || s->slots[id - 1].busy != 1)
		return 0;
	d->cmd_id = id;
	d->uflags = ENT_LOAD(ent, hdr.uflags);
	d->status = ENT_LOAD(ent, rsp.scsi_status);
	d->read_len = ENT_LOAD(ent, rsp.read_len);
	d->sense = no_sense;
	if (d->status == SCSI_STATUS_CHECK_CONDITION) {
		memcpy(sense, ent->rsp.sense_buffer, TCMU_SENSE_BUFFERSIZE);
		d->sense = sense;
	}
	return id;
}

int tcmu_sub_walk(struct tcmu_sub *s, tcmu_done_fn fn, void *arg)
{
	struct tcmu_sub_state *st = s->st;
	uint8_t sense[TCMU_SENSE_BUFFERSIZE];
	uint32_t tail, todo;
	int done = 0;

	tail = __atomic_load_n(tcmu_mb_tail(s->base), __ATOMIC_ACQUIRE);
	if (tail == st->cleaned)
		return 0;
	if (tail >= s->cmdr_size || tail % TCMU_ENT_ALIGN)
		return -EPROTO;
	todo = used(tail, st->cleaned, s->cmdr_size);
	/* The tail may not pass what the handler was shown. */
	if (todo > used(st->pub, st->cleaned, s->cmdr_size))
		return -EPROTO;

	while (todo) {
		const struct tcmu_sub_ent *e = &s->ents[st->ent_first];

		/* The tail must land on an entry boundary. */
		if (!st->ent_cnt || e->len > todo)
			return -EPROTO;
		if (!e->pad) {
			struct tcmu_done d;

			if (!read_answer(s, st->cleaned, &d, sense))
				return -EPROTO;
			s->slots[d.cmd_id - 1].busy = 2;
			fn(arg, &d);
			done++;
		}
		st->cleaned = wrap(st->cleaned + e->len, s->cmdr_size);
		todo -= e->len;
		st->ent_first = wrap(st->ent_first + 1, s->ent_cap);
		st->ent_cnt--;
	}
	return done;
}

struct reap_arg {
	struct tcmu_sub *s;
	tcmu_done_fn fn;
	void *arg;
};

static void reap_one(void *arg, const struct tcmu_done *d)
{
	struct reap_arg *r = arg;

	if (r->fn)
		r->fn(r->arg, d);
	tcmu_sub_release(r->s, d->cmd_id);
}

int tcmu_sub_reap(struct tcmu_sub *s, tcmu_done_fn fn, void *arg)
{
	struct reap_arg r = { .s = s, .fn = fn, .arg = arg };

	return tcmu_sub_walk(s, reap_one, &r);
}
