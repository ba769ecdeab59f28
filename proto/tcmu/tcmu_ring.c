// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU shared region: layout, submitter and handler (see tcmu_ring.h).
 * The other side may be hostile: every value read from the region is read
 * once into a local and checked there, so it cannot change under a check.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcmu_ring.h"

#define ENT_ALIGN	((uint32_t)TCMU_OP_ALIGN_SIZE)
#define ENT_MIN		((uint32_t)sizeof(struct tcmu_cmd_entry))
#define IOV_OFF		((uint32_t)offsetof(struct tcmu_cmd_entry, req.iov))
#define MB_HEAD		offsetof(struct tcmu_mailbox, cmd_head)
#define MB_TAIL		offsetof(struct tcmu_mailbox, cmd_tail)

struct tcmu_sub_slot {
	uint32_t nblks, len;
	bool busy;
};

/* One entry in the ring, as queued: lengths come from here, not the ring. */
struct tcmu_sub_ent {
	uint32_t len;
	bool pad;
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

int tcmu_sub_init(struct tcmu_sub *s, void *region, uint64_t region_size,
		  uint32_t blk_size, uint32_t max_cmds, uint32_t max_data)
{
	struct tcmu_mailbox *mb = region;
	uint64_t data_size, nr_blks;
	uint32_t i;

	memset(s, 0, sizeof(*s));
	if (!blk_size || !max_cmds || max_cmds > UINT16_MAX || !max_data ||
	    mb->version != TCMU_MAILBOX_VERSION ||
	    (uint64_t)mb->cmdr_off + mb->cmdr_size > region_size)
		return -EINVAL;
	s->base = region;
	s->mb = mb;
	s->cmdr_off = mb->cmdr_off;
	s->cmdr_size = mb->cmdr_size;
	s->head = s->cleaned = s->pub = mb->cmd_head;
	s->data_off = (uint64_t)s->cmdr_off + s->cmdr_size;
	data_size = region_size - s->data_off;
	nr_blks = data_size / blk_size;
	if (!nr_blks || nr_blks > UINT32_MAX || s->head >= s->cmdr_size)
		return -EINVAL;
	s->blk_size = blk_size;
	s->nr_blks = s->free_blks = nr_blks;
	s->max_blks = (max_data + blk_size - 1) / blk_size;
	s->nr_slots = s->nr_free = max_cmds;
	/* Each command brings at most one PAD with it. */
	s->ent_cap = 2 * max_cmds;

	s->bitmap = calloc((nr_blks + 63) / 64, sizeof(uint64_t));
	s->free_ids = calloc(max_cmds, sizeof(*s->free_ids));
	s->slots = calloc(max_cmds, sizeof(*s->slots));
	s->slot_blks = calloc((size_t)max_cmds * s->max_blks, sizeof(uint32_t));
	s->ents = calloc(s->ent_cap, sizeof(*s->ents));
	s->iov_tmp = calloc(s->max_blks, sizeof(*s->iov_tmp));
	if (!s->bitmap || !s->free_ids || !s->slots || !s->slot_blks ||
	    !s->ents || !s->iov_tmp) {
		tcmu_sub_free(s);
		return -ENOMEM;
	}
	/* Lowest ids on top: 1 goes out first. */
	for (i = 0; i < max_cmds; i++)
		s->free_ids[i] = max_cmds - i;
	return 0;
}

void tcmu_sub_free(struct tcmu_sub *s)
{
	free(s->bitmap);
	free(s->free_ids);
	free(s->slots);
	free(s->slot_blks);
	free(s->ents);
	free(s->iov_tmp);
	memset(s, 0, sizeof(*s));
}

uint32_t tcmu_sub_ring_free(const struct tcmu_sub *s)
{
	return s->cmdr_size - ring_used(s->head, s->cleaned, s->cmdr_size) - 1;
}

static void blk_put(struct tcmu_sub *s, const uint32_t *blks, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		s->bitmap[blks[i] / 64] &= ~(1ull << (blks[i] % 64));
		if (blks[i] / 64 < s->blk_lo)
			s->blk_lo = blks[i] / 64;
	}
	s->free_blks += n;
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
	uint32_t w = s->blk_lo, got = 0;

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
	s->blk_lo = w;
	s->free_blks -= n;
}

static void ent_push(struct tcmu_sub *s, uint32_t len, bool pad)
{
	struct tcmu_sub_ent *e;

	e = &s->ents[(s->ent_first + s->ent_cnt++) % s->ent_cap];
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

int tcmu_sub_queue(struct tcmu_sub *s, const void *cdb, uint32_t cdb_len,
		   uint32_t data_len, const void *wbuf)
{
	uint32_t nblks = (data_len + s->blk_size - 1) / s->blk_size;
	uint32_t *blks, iov_cnt = 0, len, pad = 0, i;
	struct tcmu_cmd_entry *ent;
	struct tcmu_sub_slot *slot;
	const uint8_t *src = wbuf;
	uint16_t id;

	if (!cdb_len || cdb_len > TCMU_CDB_MAX || nblks > s->max_blks ||
	    tcmu_cmd_entry_size(nblks, cdb_len) >= s->cmdr_size / 2)
		return -EINVAL;	/* half the ring: fits wherever the head is */
	if (!s->nr_free || nblks > s->free_blks)
		return -EBUSY;
	id = s->free_ids[s->nr_free - 1];
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
	if (s->head + len > s->cmdr_size)
		pad = s->cmdr_size - s->head;
	if ((uint64_t)pad + len > tcmu_sub_ring_free(s)) {
		blk_put(s, blks, nblks);
		return -EBUSY;
	}

	if (pad) {
		put_hdr((void *)(s->base + s->cmdr_off + s->head), TCMU_OP_PAD,
			pad, 0);
		ent_push(s, pad, true);
		s->head = 0;
	}
	ent = (void *)(s->base + s->cmdr_off + s->head);
	memset(ent, 0, IOV_OFF);
	put_hdr(&ent->hdr, TCMU_OP_CMD, len, id);
	ent->req.iov_cnt = iov_cnt;
	/* The CDB follows the iovecs (or the response area), as the kernel's. */
	ent->req.cdb_off = (uint64_t)s->cmdr_off + s->head +
			   tcmu_cmd_entry_size(iov_cnt, 0);
	memcpy(ent->req.iov, s->iov_tmp, iov_cnt * sizeof(struct iovec));
	memcpy(s->base + ent->req.cdb_off, cdb, cdb_len);
	ent_push(s, len, false);
	s->head = (s->head + len) % s->cmdr_size;

	for (i = 0; wbuf && i < nblks; i++) {
		uint32_t n = data_len - i * s->blk_size;

		if (n > s->blk_size)
			n = s->blk_size;
		memcpy(s->base + s->data_off + (uint64_t)blks[i] * s->blk_size,
		       src + (size_t)i * s->blk_size, n);
	}
	slot = &s->slots[id - 1];
	slot->nblks = nblks;
	slot->len = data_len;
	slot->busy = true;
	s->nr_free--;
	return id;
}

void tcmu_sub_commit(struct tcmu_sub *s)
{
	s->pub = s->head;
	__atomic_store_n(mb_word(s->base, MB_HEAD), s->head, __ATOMIC_RELEASE);
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

int tcmu_sub_reap(struct tcmu_sub *s, tcmu_done_fn fn, void *arg)
{
	uint32_t tail, todo;
	int done = 0;

	tail = __atomic_load_n(mb_word(s->base, MB_TAIL), __ATOMIC_ACQUIRE);
	if (tail >= s->cmdr_size || tail % ENT_ALIGN)
		return -EPROTO;
	todo = ring_used(tail, s->cleaned, s->cmdr_size);
	/* The tail may not pass what the handler was shown. */
	if (todo > ring_used(s->pub, s->cleaned, s->cmdr_size))
		return -EPROTO;

	while (todo) {
		const struct tcmu_sub_ent *e = &s->ents[s->ent_first];
		struct tcmu_cmd_entry ent;
		struct tcmu_sub_slot *slot;
		struct tcmu_done d;

		/* The tail must land on an entry boundary. */
		if (!s->ent_cnt || e->len > todo)
			return -EPROTO;
		if (!e->pad) {
			/* One copy: the handler cannot change it under us. */
			memcpy(&ent, s->base + s->cmdr_off + s->cleaned,
			       sizeof(ent));
			d.cmd_id = ent.hdr.cmd_id;
			if (!d.cmd_id || d.cmd_id > s->nr_slots ||
			    !s->slots[d.cmd_id - 1].busy)
				return -EPROTO;
			d.status = ent.rsp.scsi_status;
			d.uflags = ent.hdr.uflags;
			d.read_len = ent.rsp.read_len;
			d.sense = (const uint8_t *)ent.rsp.sense_buffer;
			slot = &s->slots[d.cmd_id - 1];
			if (fn)
				fn(arg, &d);
			blk_put(s, &s->slot_blks[(size_t)(d.cmd_id - 1) *
						 s->max_blks], slot->nblks);
			slot->busy = false;
			s->free_ids[s->nr_free++] = d.cmd_id;
			done++;
		}
		s->cleaned = (s->cleaned + e->len) % s->cmdr_size;
		todo -= e->len;
		s->ent_first = (s->ent_first + 1) % s->ent_cap;
		s->ent_cnt--;
	}
	return done;
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
