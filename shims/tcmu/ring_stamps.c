// SPDX-License-Identifier: GPL-2.0-only
/*
 * A ring's timeline records; see ring_stamps.h.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "ring_stamps.h"
#include "shim_timeline.h"
#include "tcmu_cdb_parse.h"
#include "torus_clock.h"

static const char *const stamp_names[RS_COUNT] = {
	[RS_PICKED] = "picked",
	[RS_STARTED] = "started",
	[RS_STORED] = "stored",
	[RS_COMPLETED] = "completed",
};

/* The number in the ring's name: "ring 3" and "uio3" are 3. */
static unsigned long ring_number(const char *name)
{
	const char *p = strpbrk(name, "0123456789");

	return p ? strtoul(p, NULL, 10) : 0;
}

void ring_stamps_open(struct ring *r)
{
	unsigned long n = ring_number(r->name);

	r->stream = n;
	r->look_from = r->look_head = r->hdl.next;
	r->tl = shim_timeline_open(n, "tcmu-cmd-id", stamp_names, RS_COUNT);
}

void ring_stamps_close(struct ring *r)
{
	shim_timeline_close(r->tl);
	r->tl = NULL;
}

/* Bytes from @from to @to going round the ring. */
static uint32_t ring_dist(const struct ring *r, uint32_t to, uint32_t from)
{
	return (to + r->hdl.cmdr_size - from) % r->hdl.cmdr_size;
}

static void look(struct ring *r)
{
	const uint8_t *mb = r->hdl.base;

	r->look_from = r->hdl.next;
	r->look_head = __atomic_load_n((const uint32_t *)(mb +
			offsetof(struct tcmu_mailbox, cmd_head)),
			__ATOMIC_ACQUIRE);
	/* after the load: what it saw was published by then */
	r->look_ns = now_ns();
}

void ring_stamps_look(struct ring *r)
{
	if (r->hdl.next == r->look_head)
		look(r);
}

/* UNMAP's range: its parameter list's first descriptor, from the data. */
static void unmap_range(const struct tcmu_hdl_cmd *cmd, uint64_t *lba,
			uint32_t *blocks)
{
	uint8_t param[24];
	struct tcmu_sense s;
	size_t got = 0, n;
	uint32_t i;

	for (i = 0; i < cmd->iov_cnt && got < sizeof(param); i++) {
		n = cmd->iov[i].iov_len;
		if (n > sizeof(param) - got)
			n = sizeof(param) - got;
		memcpy(param + got, cmd->iov[i].iov_base, n);
		got += n;
	}
	if (tcmu_unmap_parse(param, got, 1, &s) >= 1)
		tcmu_unmap_get(param, 0, lba, blocks);
}

/* What the command does, and the bytes it addresses. */
static void decode(const struct ring *r, struct tl_rec *rec)
{
	const struct tcmu_hdl_cmd *cmd = &r->cmd;
	uint32_t bs = r->lu.t->block_size, blocks;
	struct tcmu_sense s;
	struct tcmu_cdb c;
	uint64_t lba;

	rec->op = TL_OP_OTHER;
	if (tcmu_cdb_parse(cmd->cdb, cmd->cdb_max, &c, &s))
		return;
	lba = c.lba;
	blocks = c.blocks;
	switch (c.cls) {
	case TCMU_CDB_READ:
		rec->op = TL_OP_READ;
		break;
	case TCMU_CDB_WRITE:
		rec->op = TL_OP_WRITE;
		break;
	case TCMU_CDB_SYNC:
		rec->op = TL_OP_FLUSH;
		break;
	case TCMU_CDB_WRITE_SAME:
		rec->op = c.flags & TCMU_CDB_F_UNMAP ? TL_OP_TRIM : TL_OP_WRITE;
		break;
	case TCMU_CDB_UNMAP:
		rec->op = TL_OP_TRIM;
		lba = blocks = 0;
		unmap_range(cmd, &lba, &blocks);
		break;
	default:
		return;
	}
	rec->offset = lba * bs;
	rec->len = (uint64_t)blocks * bs;
}

void ring_stamps_pick(struct ring *r, bool sound)
{
	struct tl_rec *rec = &r->rec;

	/* past what the look saw (after a PAD it ended on): a new look */
	if (ring_dist(r, r->hdl.next, r->look_from) >
	    ring_dist(r, r->look_head, r->look_from))
		look(r);
	memset(rec, 0, sizeof(*rec));
	rec->t[RS_PICKED] = r->look_ns;
	rec->key = r->cmd.cmd_id;
	rec->stream = r->stream;
	rec->op = TL_OP_OTHER;
	if (sound)
		decode(r, rec);
}

void ring_stamps_done(struct ring *r, struct tl_rec *rec)
{
	*tl_next(r->tl) = *rec;
}
