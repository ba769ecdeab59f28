// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU transport: the engine plays the kernel's side of a TCMU ring
 * (client/tcmu) to a handler host, sending the SCSI commands the kernel's
 * initiator would send. Like the block layer, it splits a request larger
 * than the device's maximum transfer into several commands. A request is
 * always accepted: what does not fit in the ring yet waits in a queue, in
 * order, and goes out as completions free room (fio's FIO_Q_BUSY path
 * unlogs and relogs verify pieces, and is kept for a full depth only).
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fio's option table types (struct fio_option, FIO_OPT_*). */
#include "fio.h"
#include "optgroup.h"

#include "../transport.h"
#include "tcmu_cdb.h"
#include "tcmu_client.h"
#include "tcmu_embedded.h"
#include "tcmu_identify.h"
#include "tcmu_ring.h"
#include "tcmu_uri.h"

/* The kernel's defaults for a user backstore. */
#define DEF_RING_SIZE		"8M"	/* cmd_ring_size_mb */
#define DEF_DATA_SIZE		"1G"	/* max_data_area_mb */
#define DEF_MAX_TRANSFER	"64k"	/* hw_max_sectors 128 */
#define MIN_RING_SIZE		(64u << 10)
#define MAX_RING_SIZE		(256u << 20)
#define MAX_DATA_SIZE		(64ull << 30)
#define MAX_CMDS		65535u
/* Messages for failed commands: the first few, then a count at close. */
#define MAX_REPORTS		5

enum tcmu_trim_mode {
	TRIM_UNMAP,
	TRIM_WRITE_SAME,
};

/* The options block the glue lays out for this transport. */
struct tcmu_opts {
	unsigned long long ring_size;
	unsigned long long data_size;
	unsigned long long max_transfer;
	unsigned int trim_mode;
};

static struct fio_option tcmu_options[] = {
	{
		.name	= "ring_size",
		.lname	= "TCMU command ring size",
		.help	= "Bytes of the mailbox and command ring (the kernel's cmd_ring_size_mb; default 8M)",
		.type	= FIO_OPT_STR_VAL,
		.off1	= offsetof(struct tcmu_opts, ring_size),
		.def	= DEF_RING_SIZE,
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "data_size",
		.lname	= "TCMU data area size",
		.help	= "Bytes of the data area commands' payloads pass through (the kernel's max_data_area_mb; default 1G)",
		.type	= FIO_OPT_STR_VAL,
		.off1	= offsetof(struct tcmu_opts, data_size),
		.def	= DEF_DATA_SIZE,
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "max_transfer",
		.lname	= "TCMU maximum transfer",
		.help	= "Largest command in bytes; larger I/O is split as the block layer splits it (the kernel's hw_max_sectors; default 64k)",
		.type	= FIO_OPT_STR_VAL,
		.off1	= offsetof(struct tcmu_opts, max_transfer),
		.def	= DEF_MAX_TRANSFER,
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= "trim_mode",
		.lname	= "TCMU trim command",
		.help	= "The SCSI command a trim becomes",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct tcmu_opts, trim_mode),
		.def	= "unmap",
		.posval	= {
			{ .ival = "unmap", .oval = TRIM_UNMAP,
			  .help = "UNMAP with one block descriptor" },
			{ .ival = "write_same", .oval = TRIM_WRITE_SAME,
			  .help = "WRITE SAME(16) with the UNMAP bit" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_INVALID,
	},
	{
		.name	= NULL,
	},
};

/* One request from the glue, sent as one or more commands. */
struct tcmu_req {
	void *user;
	enum torus_op op;
	bool fua;
	uint64_t offset;
	uint32_t len;
	uint8_t *buf;
	uint32_t sent;		/* bytes queued as commands so far */
	uint32_t issued;	/* commands queued so far */
	uint32_t parts_out;	/* commands queued, not completed */
	int error;
	struct tcmu_req *next;	/* in the waiting queue */
};

struct tcmu_job {
	struct tcmu_client *client;
	struct tcmu_client_done *done;	/* room for one reap */
	struct tcmu_req *reqs;		/* depth */
	struct tcmu_req **free_reqs;
	unsigned int nr_free;
	/* Requests with commands still to send, oldest first. */
	struct tcmu_req *waiting, *waiting_tail;
	/* Finished requests not yet handed out: a ring of depth. */
	struct torus_completion *finished;
	unsigned int depth, first_finished, nr_finished;
	unsigned int max_cmds;
	uint32_t block_size;
	uint32_t part_max;		/* bytes per read or write command */
	uint32_t trim_max;		/* bytes per trim command */
	unsigned int trim_mode;
	uint8_t *zero_block;		/* WRITE SAME's data-out */
	unsigned int reports;
	char label[512];
};


/* fio 3.33 lets negatives through when the minimum is 0: check here. */
static int tcmu_check_options(const void *opts, char *err, size_t errlen)
{
	const struct tcmu_opts *o = opts;

	if (o->ring_size < MIN_RING_SIZE || o->ring_size > MAX_RING_SIZE ||
	    o->ring_size % 8) {
		snprintf(err, errlen,
			 "ring_size=%llu is out of range: use a multiple of 8 bytes from 64k to 256M (the kernel's default is 8M)",
			 o->ring_size);
		return -1;
	}
	if (o->max_transfer < 512 || o->max_transfer % 512 ||
	    o->max_transfer > (1u << 30)) {
		snprintf(err, errlen,
			 "max_transfer=%llu is out of range: use a multiple of 512 bytes up to 1G (the kernel's default is 64k)",
			 o->max_transfer);
		return -1;
	}
	if (o->data_size < o->max_transfer || o->data_size % TCMU_DEF_BLK_SIZE ||
	    o->data_size > MAX_DATA_SIZE) {
		snprintf(err, errlen,
			 "data_size=%llu is out of range: use a multiple of 4k, at least max_transfer=%llu, at most 64G (the kernel's default is 1G)",
			 o->data_size, o->max_transfer);
		return -1;
	}
	return 0;
}

static bool tcmu_handles(const char *uri)
{
	return tcmu_uri_is_tcmu(uri);
}

/* Every job probes: say what the uri ignores once, not once per job. */
static void warn_once(const char *uri, const char *warning)
{
	static char last[512];

	if (!warning[0] || !strncmp(last, uri, sizeof(last)))
		return;
	snprintf(last, sizeof(last), "%s", uri);
	fprintf(stderr, "torus: warning: %s: %s\n", uri, warning);
}

static struct tcmu_client *attach(const struct torus_params *p,
				  const struct tcmu_client_cfg *cfg,
				  char *label, size_t labellen, char *err,
				  size_t errlen)
{
	struct tcmu_uri u;

	if (tcmu_uri_parse(p->uri, &u, err, errlen))
		return NULL;
	warn_once(p->uri, u.warning);
	snprintf(label, labellen, "%s", p->uri);
	return tcmu_client_attach(u.socket, cfg, label, err, errlen);
}


static void describe(const struct tcmu_dev *dev, const char *label,
		     struct torus_target *t)
{
	snprintf(t->label, sizeof(t->label), "%s", label);
	t->size = dev->blocks * dev->block_size;
	t->read_only = dev->read_only;
	t->can_flush = dev->write_cache;
	t->can_trim = dev->thin;
	t->can_fua = dev->fua;
	t->min_block = dev->block_size;
	/* Larger requests are split, as the block layer splits them. */
	t->max_block = UINT32_MAX;
	snprintf(t->detail, sizeof(t->detail),
		 "TCMU ring to '%s', %u-byte blocks, max transfer %u%s%s%s%s",
		 dev->product, dev->block_size, dev->max_transfer,
		 dev->thin ? ", thin (UNMAP)" : "",
		 dev->read_only ? ", write protected" : "",
		 dev->fua ? ", FUA" : "",
		 dev->write_cache ? ", write cache" : "");
}

static int tcmu_probe(const struct torus_params *p, struct torus_target *t,
		      char *err, size_t errlen)
{
	/* A small ring: set-up commands only. */
	struct tcmu_client_cfg cfg = {
		.ring_size = MIN_RING_SIZE,
		.data_size = 1 << 20,
		.max_cmds = 4,
		.max_data = 4096,
		.timeout_s = p->timeout_s,
		.stop = p->stop,
	};
	struct tcmu_client *c;
	struct tcmu_dev dev;
	char label[512];
	int ret;

	c = attach(p, &cfg, label, sizeof(label), err, errlen);
	if (!c)
		return -1;
	ret = tcmu_identify(c, label, &dev, err, errlen);
	tcmu_client_free(c);
	if (ret)
		return -1;
	describe(&dev, label, t);
	return 0;
}

static int tcmu_check(const struct torus_params *p, const struct torus_job *job,
		      const struct torus_target *t, char *err, size_t errlen)
{
	const struct tcmu_opts *o = p->opts;

	if (job->trims && !t->can_trim) {
		snprintf(err, errlen,
			 "%s: the device is not thin-provisioned (READ CAPACITY(16) has LBPME clear), so it takes no UNMAP; remove rw=trim/randtrim/trimwrite from the job",
			 t->label);
		return -1;
	}
	if (job->fua && !t->can_fua) {
		snprintf(err, errlen,
			 "%s: fua=1 but the device does not honour FUA (MODE SENSE has DPOFUA clear); drop fua=1",
			 t->label);
		return -1;
	}
	if (o->max_transfer % t->min_block) {
		snprintf(err, errlen,
			 "%s: max_transfer=%llu is not a multiple of the device's %u-byte blocks",
			 t->label, o->max_transfer, t->min_block);
		return -1;
	}
	return 0;
}

static void job_free(struct tcmu_job *job)
{
	if (job->reports > MAX_REPORTS)
		fprintf(stderr, "torus: %s: %u failed commands in all\n",
			job->label, job->reports);
	tcmu_client_free(job->client);
	free(job->done);
	free(job->reqs);
	free(job->free_reqs);
	free(job->finished);
	free(job->zero_block);
	free(job);
}

static uint32_t round_down(uint32_t v, uint32_t to)
{
	return v - v % to;
}

static void *tcmu_open(const struct torus_params *p, unsigned int depth,
		       struct torus_target *t, char *err, size_t errlen)
{
	const struct tcmu_opts *o = p->opts;
	uint64_t per_cmd = (o->max_transfer + TCMU_DEF_BLK_SIZE - 1) /
			   TCMU_DEF_BLK_SIZE;
	uint64_t fit = 4 * (o->data_size / TCMU_DEF_BLK_SIZE) / per_cmd;
	struct tcmu_client_cfg cfg = {
		.ring_size = o->ring_size,
		.data_size = o->data_size,
		.max_data = o->max_transfer,
		.timeout_s = p->timeout_s,
		.stop = p->stop,
	};
	struct tcmu_job *job;
	struct tcmu_dev dev;
	unsigned int i;

	/*
	 * Split requests need several commands each: room for 8 apiece, but
	 * the ring keeps a block list of max_transfer per command, so not
	 * many more than four data areas' worth of the largest.
	 */
	cfg.max_cmds = depth * 8;
	if (cfg.max_cmds > fit)
		cfg.max_cmds = fit > depth ? fit : depth;
	if (cfg.max_cmds > MAX_CMDS)
		cfg.max_cmds = MAX_CMDS;

	job = calloc(1, sizeof(*job));
	if (!job) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	job->max_cmds = cfg.max_cmds;
	job->depth = depth;
	job->done = calloc(cfg.max_cmds, sizeof(*job->done));
	job->reqs = calloc(depth, sizeof(*job->reqs));
	job->free_reqs = calloc(depth, sizeof(*job->free_reqs));
	job->finished = calloc(depth, sizeof(*job->finished));
	if (!job->done || !job->reqs || !job->free_reqs || !job->finished) {
		snprintf(err, errlen, "out of memory for iodepth=%u", depth);
		goto fail;
	}
	for (i = 0; i < depth; i++)
		job->free_reqs[job->nr_free++] = &job->reqs[depth - 1 - i];

	job->client = attach(p, &cfg, job->label, sizeof(job->label), err,
			     errlen);
	if (!job->client ||
	    tcmu_identify(job->client, job->label, &dev, err, errlen))
		goto fail;
	if (dev.blocks * dev.block_size < t->size) {
		snprintf(err, errlen,
			 "%s: the device shrank from %" PRIu64 " to %" PRIu64 " bytes since the job started",
			 job->label, t->size, dev.blocks * dev.block_size);
		goto fail;
	}
	describe(&dev, job->label, t);
	job->block_size = dev.block_size;
	job->part_max = o->max_transfer;
	if (dev.max_transfer && dev.max_transfer < job->part_max)
		job->part_max = dev.max_transfer;
	job->part_max = round_down(job->part_max, dev.block_size);
	job->trim_max = dev.max_unmap ? round_down(dev.max_unmap,
						   dev.block_size) :
			round_down(UINT32_MAX, dev.block_size);
	job->trim_mode = o->trim_mode;
	if (!job->part_max || !job->trim_max) {
		snprintf(err, errlen,
			 "%s: the device's maximum transfer (%u bytes) is smaller than its block (%u bytes)",
			 job->label, dev.max_transfer, dev.block_size);
		goto fail;
	}
	job->zero_block = calloc(1, dev.block_size);
	if (!job->zero_block) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	return job;
fail:
	job_free(job);
	return NULL;
}

/* Queues the next command of r; 0, -EBUSY, or another -errno. */
static int queue_part(struct tcmu_job *job, struct tcmu_req *r)
{
	uint8_t cdb[16], param[TCMU_UNMAP_PARAM_LEN];
	uint32_t len = r->len - r->sent, cdb_len = 16, data_len;
	uint64_t lba = (r->offset + r->sent) / job->block_size;
	const void *wbuf = NULL;
	void *rbuf = NULL;
	int ret;

	switch (r->op) {
	case TORUS_OP_READ:
	case TORUS_OP_WRITE:
		if (len > job->part_max)
			len = job->part_max;
		data_len = len;
		if (r->op == TORUS_OP_READ) {
			tcmu_cdb_read16(cdb, lba, len / job->block_size);
			rbuf = r->buf + r->sent;
		} else {
			tcmu_cdb_write16(cdb, lba, len / job->block_size,
					 r->fua);
			wbuf = r->buf + r->sent;
		}
		break;
	case TORUS_OP_TRIM:
		if (len > job->trim_max)
			len = job->trim_max;
		if (job->trim_mode == TRIM_WRITE_SAME) {
			tcmu_cdb_write_same16(cdb, lba, len / job->block_size,
					      true);
			data_len = job->block_size;
			wbuf = job->zero_block;
		} else {
			tcmu_cdb_unmap(cdb, TCMU_UNMAP_PARAM_LEN);
			tcmu_unmap_param(param, sizeof(param), lba,
					 len / job->block_size);
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
	ret = tcmu_client_queue(job->client, cdb, cdb_len, data_len, wbuf,
				rbuf, r);
	if (ret)
		return ret;
	r->sent += len;
	r->issued++;
	r->parts_out++;
	return 0;
}

static void finish(struct tcmu_job *job, struct tcmu_req *r)
{
	struct torus_completion *c;

	c = &job->finished[(job->first_finished + job->nr_finished++) %
			   job->depth];
	c->user = r->user;
	c->error = r->error;
	job->free_reqs[job->nr_free++] = r;
}

static bool all_sent(const struct tcmu_req *r)
{
	return r->issued && r->sent == r->len;
}

/* r will send no more commands: it finishes with its last completion. */
static void stop_sending(struct tcmu_job *job, struct tcmu_req *r, int error)
{
	if (!r->error)
		r->error = error;
	r->sent = r->len;
	r->issued = r->issued ? : 1;
	if (!r->parts_out)
		finish(job, r);
}

/* Sends what room allows of the waiting requests, in order. */
static void push_waiting(struct tcmu_job *job)
{
	struct tcmu_req *r;
	int ret;

	while ((r = job->waiting)) {
		while (!all_sent(r)) {
			ret = queue_part(job, r);
			if (ret == -EBUSY)
				return;
			if (ret) {
				/* The ring went down, or it never fits. */
				job->waiting = r->next;
				stop_sending(job, r, ret == -ENOTCONN ? EIO : -ret);
				break;
			}
		}
		if (job->waiting == r)
			job->waiting = r->next;
	}
	job->waiting_tail = NULL;
}

static int tcmu_queue(void *conn, enum torus_op op, bool fua, uint64_t offset,
		      uint32_t len, void *buf, void *user)
{
	struct tcmu_job *job = conn;
	struct tcmu_req *r;

	if (!job->nr_free)
		return -EBUSY;
	r = job->free_reqs[--job->nr_free];
	*r = (struct tcmu_req){
		.user = user, .op = op, .fua = fua, .offset = offset,
		.len = len, .buf = buf,
	};
	if (job->waiting_tail)
		job->waiting_tail->next = r;
	else
		job->waiting = r;
	job->waiting_tail = r;
	push_waiting(job);
	return 0;
}

/*
 * At depth 16 and more, while the handler has 8 or more commands to work
 * on anyway, up to depth/8 new ones wait for the next reap and go out
 * together with one wake-up: fio queues and commits one request per
 * completion, and each commit would otherwise cost an eventfd write here
 * and a wake-up there. fio calls ->getevents before it ever pauses, and
 * reap publishes before it waits, so nothing waits for long.
 */
static bool hold(const struct tcmu_job *job)
{
	unsigned int fresh = tcmu_client_unpublished(job->client);
	unsigned int busy = tcmu_client_inflight(job->client) - fresh;

	return job->depth >= 16 && busy >= 8 && fresh <= job->depth / 8;
}

static int tcmu_submit(void *conn)
{
	struct tcmu_job *job = conn;

	if (hold(job))
		return 0;
	return tcmu_client_submit(job->client);
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
static void report(struct tcmu_job *job, const struct tcmu_req *r,
		   const struct tcmu_client_done *d)
{
	char why[160];

	if (++job->reports > MAX_REPORTS || d->status == 0xff)
		return;
	if (d->has_sense)
		tcmu_sense_msg(&d->sense, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "SCSI status %#x", d->status);
	fprintf(stderr, "torus: %s: %s of %u bytes at offset %" PRIu64 ": %s%s\n",
		job->label, op_name(r->op), r->len, r->offset, why,
		job->reports == MAX_REPORTS ? " (further failures are counted, not shown)" : "");
}

/* Moves finished requests to out[]; returns how many. */
static unsigned int hand_out(struct tcmu_job *job, unsigned int max,
			     struct torus_completion *out)
{
	unsigned int n = 0;

	while (n < max && job->nr_finished) {
		out[n++] = job->finished[job->first_finished];
		job->first_finished = (job->first_finished + 1) % job->depth;
		job->nr_finished--;
	}
	return n;
}

static int tcmu_reap(void *conn, unsigned int min, unsigned int max,
		     const struct timespec *timeout,
		     struct torus_completion *out)
{
	struct tcmu_job *job = conn;
	unsigned int got = hand_out(job, max, out);
	int i, n, ret;

	/* Whatever submit held goes out before any wait. */
	ret = tcmu_client_submit(job->client);
	if (ret)
		return ret;

	while (got < max) {
		/*
		 * Take every command that finished: requests, not commands,
		 * wait in finished[] (at most depth of them) for the next call.
		 */
		n = tcmu_client_reap(job->client, got < min ? 1 : 0,
				     job->max_cmds, got < min ? timeout : NULL,
				     job->done);
		if (n <= 0)
			return n < 0 ? n : got;
		for (i = 0; i < n; i++) {
			const struct tcmu_client_done *d = &job->done[i];
			struct tcmu_req *r = d->user;

			if (d->error && !r->error) {
				r->error = d->error;
				report(job, r, d);
			}
			if (!--r->parts_out && all_sent(r))
				finish(job, r);
		}
		if (job->waiting) {
			push_waiting(job);
			tcmu_client_submit(job->client);
		}
		got += hand_out(job, max - got, out + got);
		if (got >= min && !tcmu_client_inflight(job->client))
			break;
	}
	return got;
}

static void tcmu_cancel(void *conn, int error)
{
	struct tcmu_job *job = conn;
	struct tcmu_req *r;

	while ((r = job->waiting)) {
		job->waiting = r->next;
		stop_sending(job, r, error);
	}
	job->waiting_tail = NULL;
	tcmu_client_cancel(job->client, error);
}

static void tcmu_close(void *conn)
{
	job_free(conn);
}

const struct torus_transport torus_tcmu_transport = {
	.name = "tcmu",
	.uri_forms = "tcmu+unix:///?socket=PATH",
	.options = tcmu_options,
	.opts_size = sizeof(struct tcmu_opts),
	.check_options = tcmu_check_options,
	.handles = tcmu_handles,
	.embedded = tcmu_embedded_get,
	.probe = tcmu_probe,
	.check = tcmu_check,
	.open = tcmu_open,
	.queue = tcmu_queue,
	.submit = tcmu_submit,
	.reap = tcmu_reap,
	.cancel = tcmu_cancel,
	.close = tcmu_close,
};
