// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU transport: the engine plays the kernel's side of a TCMU ring
 * (client/tcmu) to a handler host, sending the SCSI commands the kernel's
 * initiator would send. Like the block layer, it splits a request larger
 * than the device's maximum transfer into several commands. A request is
 * always accepted: what does not fit in the ring yet waits in a queue, in
 * order, and goes out as completions free room (fio's FIO_Q_BUSY path
 * unlogs and relogs verify pieces, and is kept for a full depth only):
 * common/torus_split.h, as the nbd store's requests wait for the client.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* struct fio_option, for the table in tcmu_inspect.c. */
#include "fio.h"

#include "../transport.h"
#include "tcmu_cdb_build.h"
#include "tcmu_client.h"
#include "tcmu_embedded.h"
#include "tcmu_identify.h"
#include "tcmu_inspect.h"
#include "torus_clock.h"
#include "torus_split.h"

/* tcmu_inspect.c's, declared where fio's types are. */
extern struct fio_option tcmu_options[];

/* Messages for failed commands: the first few, then a count at close. */
#define MAX_REPORTS		5

/* One request from the glue, sent as one or more commands. */
struct tcmu_req {
	void *user;
	enum torus_op op;
	bool fua;
	uint64_t offset;
	uint8_t *buf;
	struct torus_split split;	/* its commands; error: positive */
	uint64_t came;			/* read: bytes up to a short one */
};

/*
 * One command in the ring: the user pointer every command is queued with,
 * naming its request; timeline= keeps its stamps here too.
 */
struct tcmu_cmd {
	struct tcmu_req *req;		/* NULL: free */
	uint32_t at, want;		/* in its request; a read's bytes */
	uint64_t offset;		/* timeline= only, as len, published */
	uint32_t len;
	uint64_t published;
};

/*
 * A job's session: its ring, and the requests split into commands. The
 * client hands each finished command to cmd_done(); a request's
 * completion goes to the glue when its last command is back.
 */
struct tcmu_session {
	struct torus_session base;
	struct tcmu_client *client;
	struct tcmu_req *reqs;		/* depth */
	struct tcmu_req **free_reqs;
	unsigned int nr_free;
	/* Requests with commands still to send, oldest first. */
	struct torus_fifo waiting;
	unsigned int finished;		/* requests completed by this reap */
	unsigned int depth;
	unsigned int max_cmds;
	uint32_t block_size;
	uint32_t rw_max;		/* bytes per read or write command */
	uint32_t trim_max;		/* bytes per trim command */
	unsigned int trim_mode;
	uint8_t *zero_block;		/* WRITE SAME's data-out */
	bool hold;			/* hold_batch=: see hold_now() */
	unsigned int reports;
	char label[512];
	/* timeline= only: commands' stamps; those cmd_head has not passed. */
	struct torus_stamper stamp;
	/*
	 * The request ->queue is putting in the ring with nothing waiting
	 * ahead of it: its first command is published with its queued stamp.
	 */
	struct tcmu_req *fresh;
	struct tcmu_cmd *cmds;		/* max_cmds */
	struct tcmu_cmd **free_cmds;
	unsigned int nr_free_cmds;
	/* timeline= only: commands held, their published stamp to come. */
	struct tcmu_cmd **held;
	unsigned int nr_held;
};

/*
 * The ring's kernel side runs here, in fio's thread and inside fio's CPU
 * figure; the kernel runs it elsewhere: the submission side in a kworker,
 * the completion side inside the handler's notify write(), which charges
 * it to the handler. Both said once per job, so that every report can
 * count them as the kernel's shares.
 */
static void report_share(const struct tcmu_session *ts)
{
	struct tcmu_client_work w;

	if (!ts->client)
		return;
	tcmu_client_work(ts->client, &w);
	if (w.sub_timed && w.sub_cmds)
		fprintf(stderr,
			"torus: tcmu: the kernel's submission share: %" PRIu64 " ns per command over %" PRIu64 " commands, timed on %" PRIu64 " and %" PRIu64 " of %" PRIu64 " wake-ups, %" PRIu64 " of them sent (the others found the handler awake) (taking a cmd_id and data blocks, building the entry and CDB, copying a write's data in, publishing cmd_head, waking the handler: done in fio's thread here, in a kworker in the kernel)\n",
			(w.sub_ns + w.sub_cmds / 2) / w.sub_cmds,
			w.sub_cmds, w.sub_timed, w.kick_timed, w.kicks,
			w.woken);
	if (w.cmds)
		fprintf(stderr,
			"torus: tcmu: the kernel's completion share: %" PRIu64 " ns per command over %" PRIu64 " commands (finding completions, copying reads out, freeing blocks and cmd_ids, handing each on: done in fio's thread here, inside the handler's notify write() in the kernel, which only queues the rest of the completion for a kworker)\n",
			(w.ns + w.cmds / 2) / w.cmds, w.cmds);
}

static void session_free(struct tcmu_session *ts)
{
	report_share(ts);
	if (ts->reports > MAX_REPORTS)
		fprintf(stderr, "torus: %s: %u failed commands in all\n",
			ts->label, ts->reports);
	tcmu_client_free(ts->client);
	free(ts->reqs);
	free(ts->free_reqs);
	free(ts->zero_block);
	free(ts->cmds);
	free(ts->free_cmds);
	free(ts->held);
	free(ts);
}

/* A place for each command the ring can hold. */
static int cmds_alloc(struct tcmu_session *ts, char *err, size_t errlen)
{
	unsigned int i, n = ts->max_cmds;

	ts->cmds = calloc(n, sizeof(*ts->cmds));
	ts->free_cmds = calloc(n, sizeof(*ts->free_cmds));
	if (ts->stamp.fn)
		ts->held = calloc(n, sizeof(*ts->held));
	if (!ts->cmds || !ts->free_cmds || (ts->stamp.fn && !ts->held)) {
		snprintf(err, errlen, "out of memory for %u commands", n);
		return -1;
	}
	for (i = 0; i < n; i++)
		ts->free_cmds[ts->nr_free_cmds++] = &ts->cmds[n - 1 - i];
	return 0;
}

static uint32_t round_down(uint32_t v, uint32_t to)
{
	return v - v % to;
}

static void cmd_done(void *arg, const struct tcmu_completion *d);

static struct torus_session *tcmu_open(const struct torus_params *p,
				       unsigned int depth,
				       struct torus_target *t, char *err,
				       size_t errlen)
{
	const struct tcmu_opts *o = p->opts;
	uint64_t xfer;
	struct tcmu_client_cfg cfg = {
		.ring_size = o->ring_size,
		.data_size = o->data_size,
		.timeout_s = p->timeout_s,
		.stop = p->stop,
		.hold = o->hold_batch,
		.shared = o->ring == RING_SHARED,
		.stamp_seen = p->stamp.fn != NULL,
	};
	struct tcmu_session *ts;
	struct tcmu_dev dev;
	unsigned int i;

	/*
	 * The default split size is the device's: a job that opens without
	 * fio's setup (create_serialize=0, offload) asks the device first.
	 */
	if (!o->max_transfer && !t->min_block &&
	    tcmu_inspect(p, t, err, errlen))
		return NULL;
	if (tcmu_check_data_size(o, t, err, errlen))
		return NULL;
	xfer = tcmu_split_size(o, t->min_block);
	cfg.max_data = xfer;
	/* Split requests need several commands each: room for 8 apiece. */
	cfg.max_cmds = tcmu_client_cmds_for(o->data_size, xfer, depth * 8,
					    depth);

	ts = calloc(1, sizeof(*ts));
	if (!ts) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ts->base.done = p->done;
	fifo_init(&ts->waiting);
	ts->max_cmds = cfg.max_cmds;
	ts->depth = depth;
	ts->hold = o->hold_batch;
	cfg.complete = cmd_done;
	cfg.complete_arg = ts;
	ts->reqs = calloc(depth, sizeof(*ts->reqs));
	ts->free_reqs = calloc(depth, sizeof(*ts->free_reqs));
	if (!ts->reqs || !ts->free_reqs) {
		snprintf(err, errlen, "out of memory for iodepth=%u", depth);
		goto fail;
	}
	for (i = 0; i < depth; i++)
		ts->free_reqs[ts->nr_free++] = &ts->reqs[depth - 1 - i];
	ts->stamp = p->stamp;
	if (cmds_alloc(ts, err, errlen))
		goto fail;

	ts->client = tcmu_target_attach(p, &cfg, ts->label, sizeof(ts->label),
					err, errlen);
	if (!ts->client ||
	    tcmu_identify(ts->client, ts->label, &dev, err, errlen))
		goto fail;
	if (dev.blocks * dev.block_size < t->size) {
		snprintf(err, errlen,
			 "%s: the device shrank from %" PRIu64 " to %" PRIu64 " bytes since the job started",
			 ts->label, t->size, dev.blocks * dev.block_size);
		goto fail;
	}
	tcmu_target_describe(&dev, ts->label, t);
	ts->block_size = dev.block_size;
	ts->rw_max = xfer;
	if (dev.max_transfer && dev.max_transfer < ts->rw_max)
		ts->rw_max = dev.max_transfer;
	ts->rw_max = round_down(ts->rw_max, dev.block_size);
	ts->trim_max = dev.max_unmap ? round_down(dev.max_unmap,
						   dev.block_size) :
			round_down(UINT32_MAX, dev.block_size);
	ts->trim_mode = o->trim_mode;
	if (!ts->rw_max || !ts->trim_max) {
		snprintf(err, errlen,
			 "%s: the device's maximum transfer (%u bytes) is smaller than its block (%u bytes)",
			 ts->label, dev.max_transfer, dev.block_size);
		goto fail;
	}
	t->cmd_max = ts->rw_max < ts->trim_max ? ts->rw_max : ts->trim_max;
	ts->zero_block = calloc(1, dev.block_size);
	if (!ts->zero_block) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	return &ts->base;
fail:
	session_free(ts);
	return NULL;
}

/*
 * timeline=: the command cmd is in the ring. cmd_head moved past it in
 * tcmu_client_queue(), after @before (read before the call: a handler
 * still draining could pick the command before a later stamp; for the
 * first command of the request ->queue is putting in at once, its queued
 * stamp: what runs between the two is shorter than a clock read), or
 * (held) moves at the next submit.
 */
static void cmd_stamp_queued(struct tcmu_session *ts, struct tcmu_cmd *cmd,
			     struct tcmu_req *r, uint32_t len, uint64_t before)
{
	cmd->offset = r->offset + r->split.sent;
	cmd->len = len;
	cmd->published = 0;
	if (ts->hold)
		ts->held[ts->nr_held++] = cmd;
	else
		cmd->published = before;
}

/*
 * Publishes what is held and wakes the handler. timeline=: what it held
 * is stamped with the time before the call, not after: the handler the
 * call wakes could pick a command before a later stamp.
 */
static int client_submit(struct tcmu_session *ts)
{
	uint64_t now = ts->nr_held ? now_ns() : 0;
	int ret = tcmu_client_submit(ts->client);
	unsigned int i;

	if (!ts->nr_held || tcmu_client_held(ts->client))
		return ret;
	for (i = 0; i < ts->nr_held; i++)
		if (ts->held[i]->req)
			ts->held[i]->published = now;
	ts->nr_held = 0;
	return ret;
}

/* Queues the next command of r; 0, -EBUSY, or another -errno. */
static int queue_cmd(struct tcmu_session *ts, struct tcmu_req *r)
{
	struct tcmu_cmd *cmd;
	uint8_t cdb[16], param[TCMU_UNMAP_PARAM_LEN];
	uint64_t lba = (r->offset + r->split.sent) / ts->block_size, before = 0;
	uint32_t len, cdb_len = 16, data_len;
	const void *wbuf = NULL;
	void *rbuf = NULL;
	int ret;

	switch (r->op) {
	case TORUS_OP_READ:
	case TORUS_OP_WRITE:
		len = data_len = split_next(&r->split, ts->rw_max);
		if (r->op == TORUS_OP_READ) {
			tcmu_cdb_read16(cdb, lba, len / ts->block_size);
			rbuf = r->buf + r->split.sent;
		} else {
			tcmu_cdb_write16(cdb, lba, len / ts->block_size,
					 r->fua);
			wbuf = r->buf + r->split.sent;
		}
		break;
	case TORUS_OP_TRIM:
		len = split_next(&r->split, ts->trim_max);
		if (ts->trim_mode == TRIM_WRITE_SAME) {
			tcmu_cdb_write_same16(cdb, lba, len / ts->block_size,
					      true);
			data_len = ts->block_size;
			wbuf = ts->zero_block;
		} else {
			tcmu_cdb_unmap(cdb, TCMU_UNMAP_PARAM_LEN);
			tcmu_unmap_param(param, sizeof(param), lba,
					 len / ts->block_size);
			cdb_len = 10;
			data_len = TCMU_UNMAP_PARAM_LEN;
			wbuf = param;
		}
		break;
	case TORUS_OP_FLUSH:
	default:
		tcmu_cdb_sync16(cdb, 0, 0);
		len = data_len = 0;
		break;
	}
	if (!ts->nr_free_cmds)
		return -EBUSY;
	cmd = ts->free_cmds[--ts->nr_free_cmds];
	if (ts->stamp.fn && !ts->hold)
		before = r == ts->fresh && !r->split.sent ?
			 *ts->stamp.queued : now_ns();
	ret = tcmu_client_queue(ts->client, cdb, cdb_len, data_len, wbuf,
				rbuf, cmd);
	if (ret) {
		ts->nr_free_cmds++;
		return ret;
	}
	cmd->req = r;
	cmd->at = r->split.sent;
	cmd->want = rbuf ? data_len : 0;
	if (ts->stamp.fn)
		cmd_stamp_queued(ts, cmd, r, len, before);
	split_queued(&r->split, len);
	return 0;
}

/*
 * A request's last command is back: its completion goes to the glue. A
 * read that came short is a residual, as the kernel completes a short
 * READ_LEN (target_complete_cmd_with_length()): fio's io_u counts what
 * came, up to the first gap, and fio sends the rest again.
 */
static void req_done(struct tcmu_session *ts, struct tcmu_req *r)
{
	void *user = r->user;
	int error = r->split.error;

	if (!error && r->came < r->split.len)
		((struct io_u *)user)->resid = r->split.len - r->came;

	ts->free_reqs[ts->nr_free++] = r;
	ts->finished++;
	ts->base.done.fn(ts->base.done.arg, user, error);
}

static struct tcmu_req *req_of(struct torus_split *s)
{
	return container_of(s, struct tcmu_req, split);
}

/* r will send no more commands: it finishes with its last completion. */
static void stop_sending(struct tcmu_session *ts, struct tcmu_req *r, int error)
{
	if (split_stop(&r->split, error))
		req_done(ts, r);
}

/* Sends what room allows of the waiting requests, in order. */
static void push_waiting(struct tcmu_session *ts)
{
	struct torus_split *s;
	int ret;

	while ((s = ts->waiting.head)) {
		ret = 0;
		while (!split_all_sent(s) && !ret)
			ret = queue_cmd(ts, req_of(s));
		if (ret == -EBUSY)
			return;
		fifo_pop(&ts->waiting);
		/* The ring went down, or it never fits. */
		if (ret)
			stop_sending(ts, req_of(s),
				     ret == -ENOTCONN ? EIO : -ret);
	}
}

static struct tcmu_session *tcmu_session_of(struct torus_session *s)
{
	return (struct tcmu_session *)((char *)s -
				     offsetof(struct tcmu_session, base));
}

static int tcmu_queue(struct torus_session *s, enum torus_op op, bool fua,
		      uint64_t offset, uint32_t len, void *buf, void *user)
{
	struct tcmu_session *ts = tcmu_session_of(s);
	struct tcmu_req *r;

	if (!ts->nr_free)
		return -EBUSY;
	r = ts->free_reqs[--ts->nr_free];
	*r = (struct tcmu_req){
		.user = user, .op = op, .fua = fua, .offset = offset,
		.buf = buf, .came = len,
	};
	split_init(&r->split, len);
	ts->fresh = ts->waiting.head ? NULL : r;
	fifo_push(&ts->waiting, &r->split);
	push_waiting(ts);
	ts->fresh = NULL;
	return 0;
}

/*
 * hold_batch=1 only (the kernel holds nothing back): at depth 16 and more,
 * while the handler has 8 or more commands to work on anyway, up to
 * depth/8 new ones wait for the next reap and go out together with one
 * wake-up, where fio's one request per commit would cost an eventfd write
 * here and a wake-up there each. fio calls ->getevents before it ever
 * pauses, and reap publishes before it waits, so nothing waits for long.
 */
static bool hold_now(const struct tcmu_session *ts)
{
	unsigned int held = tcmu_client_held(ts->client);
	unsigned int busy = tcmu_client_inflight(ts->client) - held;

	return ts->hold && ts->depth >= 16 && busy >= 8 &&
	       held <= ts->depth / 8;
}

static int tcmu_submit(struct torus_session *s)
{
	struct tcmu_session *ts = tcmu_session_of(s);

	if (hold_now(ts))
		return 0;
	return client_submit(ts);
}

static const char *op_name(enum torus_op op)
{
	static const char *const names[] = {
		[TORUS_OP_READ] = "read",
		[TORUS_OP_WRITE] = "write",
		[TORUS_OP_TRIM] = "trim",
		[TORUS_OP_FLUSH] = "flush",
	};

	return names[op];
}

/* A CHECK CONDITION says more than its errno: print the first few. */
static void report(struct tcmu_session *ts, const struct tcmu_req *r,
		   const struct tcmu_completion *d)
{
	char why[160];

	if (++ts->reports > MAX_REPORTS || d->status == 0xff)
		return;
	if (d->why[0])
		snprintf(why, sizeof(why), "%s", d->why);
	else if (d->has_sense)
		tcmu_sense_msg(&d->sense, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "SCSI status %#x", d->status);
	fprintf(stderr, "torus: %s: %s of %" PRIu64 " bytes at offset %" PRIu64 ": %s%s\n",
		ts->label, op_name(r->op), r->split.len, r->offset, why,
		ts->reports == MAX_REPORTS ? " (further failures are counted, not shown)" : "");
}

/*
 * timeline=: the command d is seen; its stamps go to the glue before its
 * request's completion.
 */
static void cmd_stamp_seen(struct tcmu_session *ts, const struct tcmu_cmd *cmd,
			   const struct tcmu_completion *d)
{
	/* A command failed unanswered (status 0xff) was never seen back. */
	struct torus_wire_stamps w = {
		.key = d->cmd_id,
		.offset = cmd->offset,
		.len = cmd->len,
		.t = { cmd->published, d->status == 0xff ? 0 : d->seen_ns },
	};

	ts->stamp.fn(ts->stamp.arg, cmd->req->user, &w);
}

/*
 * The client's completer: one command is back, and its place is free.
 * Its request finishes with its last command, which is the only
 * bookkeeping a split request needs.
 */
static void cmd_done(void *arg, const struct tcmu_completion *d)
{
	struct tcmu_session *ts = arg;
	struct tcmu_cmd *cmd = d->user;
	struct tcmu_req *r = cmd->req;

	if (ts->stamp.fn)
		cmd_stamp_seen(ts, cmd, d);
	if (d->error && !r->split.error)
		report(ts, r, d);
	else if (!d->error && d->data_len < cmd->want &&
		 cmd->at + d->data_len < r->came)
		r->came = cmd->at + d->data_len;
	cmd->req = NULL;
	ts->free_cmds[ts->nr_free_cmds++] = cmd;
	if (split_back(&r->split, d->error))
		req_done(ts, r);
}

static int tcmu_reap(struct torus_session *s, unsigned int min,
		     const struct timespec *timeout)
{
	struct tcmu_session *ts = tcmu_session_of(s);
	int n, ret;

	ts->finished = 0;
	/*
	 * Requests no room took: with nothing in flight no completion will
	 * come to push them, and a shared ring's queue sleeps for room.
	 */
	if (ts->waiting.head && !tcmu_client_inflight(ts->client))
		push_waiting(ts);
	/* Whatever submit held goes out before any wait. */
	ret = client_submit(ts);
	if (ret)
		return ret;
	for (;;) {
		/* Commands, not requests, come back: wait for whole requests. */
		n = tcmu_client_reap(ts->client, ts->finished < min ? 1 : 0,
				     ts->finished < min ? timeout : NULL);
		if (n <= 0)
			return n < 0 ? n : (int)ts->finished;
		if (ts->waiting.head) {
			push_waiting(ts);
			client_submit(ts);
		}
		/* Enough: no second look at a ring just walked. */
		if (ts->finished >= min)
			break;
	}
	return ts->finished;
}

static void tcmu_cancel(struct torus_session *s, int error)
{
	struct tcmu_session *ts = tcmu_session_of(s);
	struct torus_split *r;

	while ((r = fifo_pop(&ts->waiting)))
		stop_sending(ts, req_of(r), error);
	tcmu_client_cancel(ts->client, error);
}

static void tcmu_close(struct torus_session *s)
{
	session_free(tcmu_session_of(s));
}

const struct torus_transport torus_tcmu_transport = {
	.name = "tcmu",
	.kind = "a TCMU",
	.uri_forms = "tcmu+unix:///?socket=PATH",
	.options = tcmu_options,
	.opts_size = sizeof(struct tcmu_opts),
	.check_options = tcmu_opts_check,
	.handles = tcmu_handles,
	.embedded = tcmu_embedded_get,
	.inspect = tcmu_inspect,
	.check = tcmu_job_check,
	.open = tcmu_open,
	.queue = tcmu_queue,
	.submit = tcmu_submit,
	.reap = tcmu_reap,
	.cancel = tcmu_cancel,
	.close = tcmu_close,
};
