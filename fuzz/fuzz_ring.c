// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU shared region (proto/tcmu/tcmu_ring_*.h) from both sides, each
 * facing a peer that may be hostile.
 *
 * Input: byte 0 picks the mode (% 3), the rest is mode specific. Every
 * mode then reads a script of one-byte operations (with their arguments)
 * and runs at most MAX_OPS of them.
 *
 * 0, handler: a region whose mailbox and ring bytes come from the input
 *    (a submitter that writes anything), consumed as a handler does.
 *      u16 ring bytes (% 4097), u16 data bytes (% 16385), u8 which
 *      mailbox fields are raw (bit 0 version, 1 cmdr_off, 2 cmdr_size;
 *      else 2, 128 and the ring bytes rounded down to 8), u8 iov_max
 *      (% 17), u16 version, u32 cmdr_off, u32 cmdr_size, u32 cmd_head,
 *      u32 cmd_tail, u16 length of the ring and data bytes that follow
 *      (copied from the region's byte 128 on), those bytes, the script.
 *    Script: next command; complete an outstanding one (chosen by the
 *    input, so out of order) with status, sense and read_len from the
 *    input; move cmd_head; scribble a ring byte. With raw bit 3 (and the
 *    handler host's SCSI target built in, -Dshims=true), each
 *    command is executed by scsi_execute() over a memory store (bit 4:
 *    4096-byte blocks, else 512; bits 5-7: 64 KiB to 512 KiB), wrapped in
 *    a store that aborts on any access outside it, and completed with
 *    the target's reply instead.
 *
 * 1, submitter and handler: both sides well behaved, over a region laid
 *    out by tcmu_region_layout(), the ring starting at an offset chosen
 *    by the input.
 *      u8 ring size, u8 block size, u8 data blocks, u8 max_cmds,
 *      u16 max_data, u16 start offset, the script.
 *    Script: queue a command (CDB length and bytes, data length, with a
 *    write buffer or not); commit; the handler takes the next command;
 *    the handler completes one it holds with status, sense, read_len;
 *    reap.
 *
 * 2, hostile handler: as 1, and the script may also write cmd_tail, an
 *    entry's header or any ring byte between reaps.
 *
 * Checked, handler side: everything handed out (CDB, iovecs) lies inside
 * the ring or the data area, cdb_max is 1 to 260, iov_cnt fits iov_max;
 * cmd_tail is always a valid, aligned offset; while the ring is left
 * alone a completion succeeds exactly when one is outstanding, and once
 * everything is completed the tail has caught up. Every byte of every
 * iovec is read and written and the whole CDB read: the region is its own
 * malloc of exactly its size, so ASan sees any access outside it.
 * Submitter side: ids are unique while in flight; the handler sees
 * exactly the CDB and data queued; reaps report exactly the completions
 * the handler made, in the order it made them, with its status, sense
 * and read_len, and the data it wrote; after a full drain every block and
 * slot is free again. Against a hostile handler the submitter reports
 * only commands in flight, each once, or fails with -EPROTO.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "tcmu_ring_hdl.h"
#include "tcmu_ring_sub.h"
#include "tcmu_sense.h"
#ifdef FUZZ_SCSI_TARGET
#include "scsi_target.h"
#endif

#define MAX_OPS		512
#define MAX_CMDS	16
#define MAX_OUT		1024
#define MB		TCMU_MB_SIZE

struct script {
	const uint8_t *p;
	size_t left;
};

static uint8_t get8(struct script *s)
{
	if (!s->left)
		return 0;
	s->left--;
	return *s->p++;
}

static uint16_t get16(struct script *s)
{
	return get8(s) | get8(s) << 8;
}

static uint32_t get32(struct script *s)
{
	return get16(s) | (uint32_t)get16(s) << 16;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/*
 * The mailbox wants the alignment of its cmd_tail (64; mmap gives a page),
 * but no more bytes than the region has: ASan sees the end exactly.
 */
static uint8_t *alloc_region(size_t size)
{
	void *p = NULL;

	FUZZ_CHECK(!posix_memalign(&p, 64, size));
	return p;
}

static volatile uint8_t sink;

/* Read and write every byte the handler was given, as a store would. */
static void touch(const struct tcmu_hdl *h, const struct tcmu_hdl_cmd *c,
		  uint8_t fill)
{
	uint8_t acc = 0;
	uint32_t i;
	size_t k;

	FUZZ_CHECK(c->cdb && c->cdb_max >= 1 && c->cdb_max <= TCMU_CDB_MAX);
	FUZZ_CHECK(c->cdb >= h->base + h->cmdr_off &&
		   c->cdb + c->cdb_max <= h->base + h->cmdr_off + h->cmdr_size);
	for (k = 0; k < c->cdb_max; k++)
		acc ^= c->cdb[k];
	FUZZ_CHECK(c->iov_cnt <= c->iov_max);
	for (i = 0; i < c->iov_cnt; i++) {
		uint8_t *b = c->iov[i].iov_base;
		size_t n = c->iov[i].iov_len;

		FUZZ_CHECK(b >= h->base + h->data_off &&
			   b <= h->base + h->size &&
			   n <= (size_t)(h->base + h->size - b));
		for (k = 0; k < n; k++) {
			acc ^= b[k];
			b[k] = fill + k;
		}
	}
	sink = acc;
}

static void check_tail(const struct tcmu_hdl *h)
{
	uint32_t tail = rd32(h->base + offsetof(struct tcmu_mailbox, cmd_tail));

	FUZZ_CHECK(tail == h->tail);
	FUZZ_CHECK(tail < h->cmdr_size && !(tail % TCMU_OP_ALIGN_SIZE));
}

/* ---- the handler host's SCSI target, when it is built in ---- */

struct reply {
	bool valid;
	uint8_t status;
	uint8_t sense[TCMU_SENSE_FIXED_LEN];
	uint32_t sense_len;
	int64_t read_len;
};

#ifdef FUZZ_SCSI_TARGET
/* A store that aborts on any access outside itself, over memory. */
struct fenced {
	struct store st;
	struct store *inner;
};

static void fence(struct store *st, size_t len, uint64_t off)
{
	FUZZ_CHECK(off <= st->size && len <= st->size - off);
}

static int f_pread(struct store *st, void *buf, size_t len, uint64_t off)
{
	struct fenced *f = (struct fenced *)st;

	fence(st, len, off);
	return f->inner->ops->pread(f->inner, buf, len, off);
}

static int f_pwrite(struct store *st, const void *buf, size_t len,
		    uint64_t off)
{
	struct fenced *f = (struct fenced *)st;

	fence(st, len, off);
	return f->inner->ops->pwrite(f->inner, buf, len, off);
}

static int f_zero(struct store *st, size_t len, uint64_t off)
{
	struct fenced *f = (struct fenced *)st;

	fence(st, len, off);
	return f->inner->ops->zero(f->inner, len, off);
}

static int f_trim(struct store *st, size_t len, uint64_t off)
{
	struct fenced *f = (struct fenced *)st;

	fence(st, len, off);
	return f->inner->ops->trim(f->inner, len, off);
}

static int f_flush(struct store *st)
{
	struct fenced *f = (struct fenced *)st;

	return f->inner->ops->flush(f->inner);
}

static const struct store_ops fenced_ops = {
	.name = "fenced",
	.pread = f_pread,
	.pwrite = f_pwrite,
	.zero = f_zero,
	.trim = f_trim,
	.flush = f_flush,
};

struct target {
	struct scsi_target t;
	struct scsi_lu lu;
	struct fenced f;
};

static struct target *target_open(uint8_t raw)
{
	uint32_t bs = raw & 16 ? 4096 : 512;
	uint64_t size = (1 + (raw >> 5)) * (64u << 10);
	struct target *tg = calloc(1, sizeof(*tg));
	char err[256];

	FUZZ_CHECK(tg);
	tg->f.inner = store_memory_open(size, err, sizeof(err));
	FUZZ_CHECK(tg->f.inner);
	tg->f.st.ops = &fenced_ops;
	tg->f.st.size = size;
	FUZZ_CHECK(!scsi_target_init(&tg->t, size, bs, 64u << 10, true, 42));
	FUZZ_CHECK(!scsi_lu_init(&tg->lu, &tg->t, &tg->f.st));
	return tg;
}

static void target_close(struct target *tg)
{
	if (!tg)
		return;
	scsi_lu_free(&tg->lu);
	tg->f.inner->ops->close(tg->f.inner);
	free(tg);
}

/* One command as the handler host serves it; the reply is checked. */
static void target_execute(struct target *tg, const struct tcmu_hdl_cmd *c,
			   struct reply *out)
{
	struct scsi_reply r;
	struct tcmu_sense s;
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < c->iov_cnt; i++)
		total += c->iov[i].iov_len;
	memset(&r, 0xa5, sizeof(r));
	scsi_execute(&tg->lu, c->cdb, c->cdb_max, c->iov, c->iov_cnt, &r);
	FUZZ_CHECK(r.status == SCSI_STATUS_GOOD ||
		   r.status == SCSI_STATUS_CHECK_CONDITION);
	if (r.status == SCSI_STATUS_GOOD) {
		FUZZ_CHECK(!r.sense_len);
	} else {
		FUZZ_CHECK(r.sense_len == TCMU_SENSE_FIXED_LEN);
		FUZZ_CHECK(!tcmu_sense_decode(r.sense, r.sense_len, &s));
	}
	FUZZ_CHECK(r.read_len == -1 ||
		   (r.read_len >= 0 && (uint64_t)r.read_len <= total));
	out->valid = true;
	out->status = r.status;
	memcpy(out->sense, r.sense, sizeof(out->sense));
	out->sense_len = r.sense_len;
	out->read_len = r.read_len;
}
#else
struct target;

static struct target *target_open(uint8_t raw)
{
	return NULL;
}

static void target_close(struct target *tg)
{
}

static void target_execute(struct target *tg, const struct tcmu_hdl_cmd *c,
			   struct reply *out)
{
}
#endif

/* ---- mode 0: the handler against a raw region ---- */

static void mode_handler(struct script *in)
{
	uint32_t ring = get16(in) % 4097, data = get16(in) % 16385;
	uint8_t raw = get8(in), iov_max = get8(in) % 17;
	uint16_t version = get16(in);
	uint32_t cmdr_off = get32(in), cmdr_size = get32(in);
	uint32_t head = get32(in), tail = get32(in);
	uint64_t size = MB + ring + data;
	uint16_t out[MAX_OUT];
	struct reply reps[MAX_OUT];
	struct target *tg = NULL;
	struct tcmu_mailbox *mb;
	struct tcmu_hdl_cmd cmd;
	struct tcmu_hdl h;
	bool hostile = false;
	size_t n, nout = 0;
	uint8_t *region;
	int ops, ret;

	region = alloc_region(size);
	memset(region, 0, size);
	n = get16(in);
	if (n > size - MB)
		n = size - MB;
	if (n > in->left)
		n = in->left;
	memcpy(region + MB, in->p, n);
	in->p += n;
	in->left -= n;
	mb = (struct tcmu_mailbox *)region;
	mb->version = raw & 1 ? version : TCMU_MAILBOX_VERSION;
	mb->flags = TCMU_RING_FLAGS;
	mb->cmdr_off = raw & 2 ? cmdr_off : MB;
	mb->cmdr_size = raw & 4 ? cmdr_size : ring & ~7u;
	mb->cmd_head = head;
	put32(region + offsetof(struct tcmu_mailbox, cmd_tail), tail);

	/* Exactly iov_max iovecs: a write past them is seen. */
	cmd.iov = malloc(iov_max ? iov_max * sizeof(struct iovec) : 1);
	cmd.iov_max = iov_max;
	FUZZ_CHECK(cmd.iov);
	if (tcmu_hdl_init(&h, region, size))
		goto out;
	if (raw & 8)
		tg = target_open(raw);
	FUZZ_CHECK(h.cmdr_off >= MB && h.cmdr_size &&
		   (uint64_t)h.cmdr_off + h.cmdr_size <= size);

	for (ops = 0; ops < MAX_OPS && in->left; ops++) {
		uint8_t op = get8(in), sense[TCMU_SENSE_BUFFERSIZE + 8], status;
		uint32_t slen, i;
		int64_t rlen;

		switch (op % 5) {
		case 0:
		case 1:
			ret = tcmu_hdl_next(&h, &cmd);
			if (ret == -EPROTO)
				goto out;
			if (ret == -EINVAL) {
				/* Still owed a completion (CHECK CONDITION). */
				FUZZ_CHECK(nout < MAX_OUT);
				reps[nout].valid = false;
				out[nout++] = cmd.cmd_id;
				break;
			}
			FUZZ_CHECK(ret == 0 || ret == 1);
			if (ret == 1) {
				struct tcmu_cdb c;
				struct tcmu_sense s;

				FUZZ_CHECK(nout < MAX_OUT);
				reps[nout].valid = false;
				/* The data-out as the submitter left it. */
				if (tg)
					target_execute(tg, &cmd, &reps[nout]);
				touch(&h, &cmd, op);
				/* As a handler parses it, at most cdb_max. */
				tcmu_cdb_parse(cmd.cdb, cmd.cdb_max, &c, &s);
				out[nout++] = cmd.cmd_id;
			}
			break;
		case 2:
			slen = get8(in) % (sizeof(sense) + 1);
			for (i = 0; i < slen; i++)
				sense[i] = get8(in);
			rlen = op & 0x80 ? (int64_t)get32(in) : -1;
			i = get8(in);
			status = get8(in);
			if (!nout) {
				ret = tcmu_hdl_complete(&h, 0, 0, NULL, 0, -1);
				FUZZ_CHECK(hostile || ret == -EPROTO);
				break;
			}
			i %= nout;
			if (reps[i].valid) {
				/* The target's answer, not the input's. */
				status = reps[i].status;
				slen = reps[i].sense_len;
				memcpy(sense, reps[i].sense, slen);
				rlen = reps[i].read_len;
			}
			ret = tcmu_hdl_complete(&h, out[i], status,
						slen ? sense : NULL, slen, rlen);
			FUZZ_CHECK(hostile || ret == 0);
			reps[i] = reps[--nout];
			out[i] = out[nout];
			if (ret)
				goto out;
			break;
		case 3:
			/* The submitter moves cmd_head, anywhere. */
			head = get32(in);
			if (op & 0x80)
				head = head % h.cmdr_size & ~7u;
			put32(region + offsetof(struct tcmu_mailbox, cmd_head),
			      head);
			hostile = true;
			break;
		default:
			/* ... or writes the ring under the handler. */
			i = get16(in) % h.cmdr_size;
			region[h.cmdr_off + i] = get8(in);
			hostile = true;
			break;
		}
		check_tail(&h);
	}

	/* A handler that stops answers everything it took. */
	while (nout) {
		ret = tcmu_hdl_complete(&h, out[--nout], 0, NULL, 0, -1);
		FUZZ_CHECK(hostile || ret == 0);
		if (ret)
			goto out;
		check_tail(&h);
	}
	if (!hostile)
		FUZZ_CHECK(h.tail == h.next);
out:
	target_close(tg);
	free(cmd.iov);
	free(region);
}

/* ---- modes 1 and 2: the submitter ---- */

static const uint32_t ring_sizes[8] = {
	256, 384, 512, 1024, 1536, 2048, 4096 - MB, 8192,
};
static const uint32_t blk_sizes[4] = { 512, 4096, 1024, 520 };

struct cmd {
	bool busy;		/* queued, not reaped */
	bool committed;
	bool taken;		/* handed to the handler */
	bool completed;		/* by the handler */
	uint8_t cdb[32];
	uint32_t cdb_len;
	uint32_t data_len;
	bool wrote;
	uint8_t fill;		/* data pattern: wbuf, then the handler's */
	uint8_t status;
	uint8_t sense[TCMU_SENSE_BUFFERSIZE];
	int64_t read_len;
};

struct world {
	struct tcmu_sub sub;
	struct tcmu_hdl hdl;
	uint8_t *region;
	struct cmd cmds[MAX_CMDS + 1];	/* by cmd_id */
	uint16_t held[MAX_CMDS];	/* taken, not completed */
	uint32_t nheld;
	uint16_t done[MAX_OUT];		/* completion order, not yet reaped */
	uint32_t ndone, reaped;
	uint16_t pending[MAX_OUT];	/* queued, not committed */
	uint32_t npending;
	bool hostile;			/* the handler side misbehaves */
	bool broken;			/* a reap said -EPROTO */
	uint8_t *buf;			/* copy_out scratch, max_data */
	uint32_t max_data;
};

static void fill_pattern(uint8_t *b, uint32_t len, uint8_t fill)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		b[i] = fill + i * 3;
}

static void on_done(void *arg, const struct tcmu_done *d)
{
	struct world *w = arg;
	struct cmd *c;
	uint32_t len, i;

	/* Whatever the handler did, only commands in flight, once each. */
	FUZZ_CHECK(d->cmd_id >= 1 && d->cmd_id <= MAX_CMDS);
	c = &w->cmds[d->cmd_id];
	FUZZ_CHECK(c->busy);
	len = c->data_len;
	if (!w->hostile) {
		FUZZ_CHECK(w->reaped < w->ndone &&
			   w->done[w->reaped] == d->cmd_id);
		w->reaped++;
		FUZZ_CHECK(c->completed && d->status == c->status);
		/* Sense travels only with CHECK CONDITION, the one status that has it. */
		if (d->status == SCSI_STATUS_CHECK_CONDITION)
			FUZZ_CHECK(!memcmp(d->sense, c->sense, sizeof(c->sense)));
		if (c->read_len >= 0)
			FUZZ_CHECK((d->uflags & TCMU_UFLAG_READ_LEN) &&
				   d->read_len == (uint32_t)c->read_len);
		else
			FUZZ_CHECK(!(d->uflags & TCMU_UFLAG_READ_LEN));
	} else if ((d->uflags & TCMU_UFLAG_READ_LEN) && d->read_len < len) {
		/* An engine copies no more than the handler says it wrote. */
		len = d->read_len;
	}
	FUZZ_CHECK(!tcmu_sub_copy_out(&w->sub, d->cmd_id, w->buf, len));
	if (!w->hostile && c->taken) {
		/* The handler's data, or the write buffer it left alone. */
		for (i = 0; i < len; i++)
			FUZZ_CHECK(w->buf[i] == (uint8_t)(c->fill + i * 3));
	}
	FUZZ_CHECK(tcmu_sub_copy_out(&w->sub, d->cmd_id, w->buf,
				     c->data_len + 1) == -EINVAL);
	memset(c, 0, sizeof(*c));
}

static void reap(struct world *w)
{
	int ret = tcmu_sub_reap(&w->sub, on_done, w);

	if (ret == -EPROTO && w->hostile) {
		/* Detected: the engine stops using the ring. */
		w->broken = true;
		return;
	}
	FUZZ_CHECK(ret >= 0);
}

static void queue(struct world *w, struct script *in, uint8_t op)
{
	uint8_t cdb[32], *wbuf = NULL;
	uint32_t cdb_len = 1 + get8(in) % 32, data_len, nblks, i;
	struct cmd *c;
	int id;

	for (i = 0; i < cdb_len; i++)
		cdb[i] = get8(in);
	data_len = get16(in) % (w->max_data + 2);
	if (op & 0x80) {
		wbuf = malloc(data_len ? data_len : 1);
		FUZZ_CHECK(wbuf);
		fill_pattern(wbuf, data_len, op);
	}
	id = tcmu_sub_queue(&w->sub, cdb, cdb_len, data_len, wbuf);
	free(wbuf);
	if (id == -EBUSY)
		return;
	if (id == -EINVAL) {
		/* Never fits: too much data, or an entry of half the ring. */
		nblks = (data_len + w->sub.blk_size - 1) / w->sub.blk_size;
		FUZZ_CHECK(data_len > w->max_data ||
			   tcmu_cmd_entry_size(nblks, cdb_len) >=
			   w->sub.cmdr_size / 2);
		return;
	}
	FUZZ_CHECK(id >= 1 && id <= MAX_CMDS);
	c = &w->cmds[id];
	FUZZ_CHECK(!c->busy);
	c->busy = true;
	memcpy(c->cdb, cdb, cdb_len);
	c->cdb_len = cdb_len;
	c->data_len = data_len;
	c->wrote = wbuf;
	c->fill = op;
	FUZZ_CHECK(w->npending < MAX_OUT);
	w->pending[w->npending++] = id;
}

static void take(struct world *w, uint8_t op)
{
	struct iovec iov[MAX_CMDS * 8];
	struct tcmu_hdl_cmd hc = { .iov = iov, .iov_max = MAX_CMDS * 8 };
	uint32_t total = 0, i, k;
	struct cmd *c;
	int ret;

	ret = tcmu_hdl_next(&w->hdl, &hc);
	if (w->hostile) {
		/* Our own handler, after the scribbles: anything but a crash. */
		if (ret == 1 && hc.cmd_id >= 1 && hc.cmd_id <= MAX_CMDS &&
		    w->cmds[hc.cmd_id].busy && !w->cmds[hc.cmd_id].taken &&
		    w->nheld < MAX_CMDS) {
			touch(&w->hdl, &hc, op);
			w->cmds[hc.cmd_id].taken = true;
			w->cmds[hc.cmd_id].fill = op;
			w->held[w->nheld++] = hc.cmd_id;
		}
		return;
	}
	FUZZ_CHECK(ret == 0 || ret == 1);
	if (!ret)
		return;
	FUZZ_CHECK(hc.cmd_id >= 1 && hc.cmd_id <= MAX_CMDS);
	c = &w->cmds[hc.cmd_id];
	FUZZ_CHECK(c->busy && c->committed && !c->taken);
	FUZZ_CHECK(hc.cdb_max >= c->cdb_len &&
		   !memcmp(hc.cdb, c->cdb, c->cdb_len));
	for (i = 0; i < hc.iov_cnt; i++) {
		const uint8_t *b = hc.iov[i].iov_base;

		for (k = 0; c->wrote && k < hc.iov[i].iov_len; k++)
			FUZZ_CHECK(b[k] == (uint8_t)(c->fill + (total + k) * 3));
		total += hc.iov[i].iov_len;
	}
	FUZZ_CHECK(total == c->data_len);
	touch(&w->hdl, &hc, 0);
	/* The handler's answer is a pattern of its own, over every iovec. */
	total = 0;
	for (i = 0; i < hc.iov_cnt; i++) {
		uint8_t *b = hc.iov[i].iov_base;

		for (k = 0; k < hc.iov[i].iov_len; k++)
			b[k] = (uint8_t)(op + (total + k) * 3);
		total += hc.iov[i].iov_len;
	}
	c->fill = op;
	c->taken = true;
	FUZZ_CHECK(w->nheld < MAX_CMDS);
	w->held[w->nheld++] = hc.cmd_id;
}

static void complete(struct world *w, struct script *in, uint8_t op)
{
	uint8_t sense[TCMU_SENSE_BUFFERSIZE + 4];
	uint32_t slen = get8(in) % (sizeof(sense) + 1), i;
	int64_t rlen = op & 0x80 ? (int64_t)get32(in) : -1;
	uint8_t status = get8(in);
	uint16_t id;
	int ret;

	for (i = 0; i < slen; i++)
		sense[i] = get8(in);
	/* Read whether or not it is used: the script stays in step. */
	i = get8(in);
	if (!w->nheld)
		return;
	i %= w->nheld;
	id = w->held[i];
	w->held[i] = w->held[--w->nheld];
	ret = tcmu_hdl_complete(&w->hdl, id, status, slen ? sense : NULL,
				slen, rlen);
	if (w->hostile)
		return;
	FUZZ_CHECK(ret == 0);
	w->cmds[id].completed = true;
	w->cmds[id].status = status;
	memset(w->cmds[id].sense, 0, TCMU_SENSE_BUFFERSIZE);
	memcpy(w->cmds[id].sense, sense,
	       slen < TCMU_SENSE_BUFFERSIZE ? slen : TCMU_SENSE_BUFFERSIZE);
	w->cmds[id].read_len = rlen;
	FUZZ_CHECK(w->ndone < MAX_OUT);
	w->done[w->ndone++] = id;
}

/* The handler side breaks the rules: tail, headers, any ring byte. */
static void scribble(struct world *w, struct script *in, uint8_t op)
{
	uint8_t *ring = w->region + w->sub.cmdr_off;
	uint32_t v = get32(in), at;

	switch ((op >> 4) % 4) {
	case 0:
		put32(w->region + offsetof(struct tcmu_mailbox, cmd_tail), v);
		break;
	case 1:
		/* An aligned tail, anywhere in the ring. */
		put32(w->region + offsetof(struct tcmu_mailbox, cmd_tail),
		      v % w->sub.cmdr_size & ~7u);
		break;
	case 2:
		/* An entry header: len_op or cmd_id and flags. */
		at = (get16(in) % w->sub.cmdr_size & ~7u) + (op & 4);
		put32(ring + at, v);
		break;
	default:
		ring[get16(in) % w->sub.cmdr_size] = v;
		break;
	}
	w->hostile = true;
}

static void commit(struct world *w)
{
	uint32_t i;

	tcmu_sub_commit(&w->sub);
	for (i = 0; i < w->npending; i++)
		w->cmds[w->pending[i]].committed = true;
	w->npending = 0;
}

static void mode_submitter(struct script *in, bool may_scribble)
{
	uint32_t ring = ring_sizes[get8(in) % 8];
	uint32_t blk = blk_sizes[get8(in) % 4];
	uint32_t nblks = 1 + get8(in) % 32;
	uint32_t max_cmds = 1 + get8(in) % MAX_CMDS;
	uint32_t start = get16(in) % ring & ~7u;
	uint64_t data = (uint64_t)nblks * blk, size;
	struct world *w = calloc(1, sizeof(*w));
	uint32_t i;
	int ops;

	FUZZ_CHECK(w);
	w->max_data = 1 + get16(in) % (data + blk);
	size = tcmu_region_size(ring, data);
	w->region = alloc_region(size);
	w->buf = malloc(w->max_data + 1);
	FUZZ_CHECK(w->region && w->buf);
	memset(w->region, 0, MB + ring);
	memset(w->region + MB + ring, 0xa5, data);
	FUZZ_CHECK(!tcmu_region_layout(w->region, size, ring, data,
				       TCMU_RING_FLAGS));
	/* Start mid-ring, as after a reattach: both sides agree. */
	put32(w->region + offsetof(struct tcmu_mailbox, cmd_head), start);
	put32(w->region + offsetof(struct tcmu_mailbox, cmd_tail), start);
	FUZZ_CHECK(!tcmu_sub_init(&w->sub, w->region, size, blk, max_cmds,
				  w->max_data));
	FUZZ_CHECK(!tcmu_hdl_init(&w->hdl, w->region, size));

	for (ops = 0; ops < MAX_OPS && in->left && !w->broken; ops++) {
		uint8_t op = get8(in);

		switch (op % (may_scribble ? 6 : 5)) {
		case 0:
			queue(w, in, op);
			break;
		case 1:
			commit(w);
			break;
		case 2:
			take(w, op);
			break;
		case 3:
			complete(w, in, op);
			break;
		case 4:
			reap(w);
			break;
		default:
			scribble(w, in, op);
			break;
		}
		if (!w->hostile)
			check_tail(&w->hdl);
	}

	if (!w->hostile && !w->broken) {
		/* Drain: everything queued is answered and reclaimed. */
		commit(w);
		for (i = 0; i < 4 * MAX_CMDS; i++)
			take(w, 0x11);
		while (w->nheld)
			complete(w, &(struct script){ 0 }, 0);
		reap(w);
		for (i = 1; i <= MAX_CMDS; i++)
			FUZZ_CHECK(!w->cmds[i].busy);
		FUZZ_CHECK(w->sub.st->free_blks == w->sub.nr_blks);
		FUZZ_CHECK(w->sub.st->nr_free == w->sub.nr_slots);
		FUZZ_CHECK(w->hdl.tail == w->hdl.next);
	}
	tcmu_sub_free(&w->sub);
	free(w->buf);
	free(w->region);
	free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct script in = { data + 1, size ? size - 1 : 0 };

	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		mode_handler(&in);
		break;
	case 1:
		mode_submitter(&in, false);
		break;
	default:
		mode_submitter(&in, true);
		break;
	}
	return 0;
}
