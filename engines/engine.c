// SPDX-License-Identifier: GPL-2.0-only
/*
 * torus: fio external ioengine that speaks a storage transport from
 * userspace, so the transport's own cost can be measured.
 *
 * This file is the fio glue only: job validation and the
 * setup/init/queue/commit/getevents/event hooks and the flush that
 * completes within ->queue; the option table is laid
 * out in option_table.c. Transports live behind
 * struct torus_transport (transport.h); this file names none of them.
 *
 *	fio --ioengine=external:./libtorus.so --uri=nbd://host/export job.fio
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fio.h"
#include "optgroup.h"
#include "fio_compat.h"

#include "job_check.h"
#include "option_table.h"
#include "timeline.h"
#include "timeline_rec.h"
#include "torus_clock.h"
#include "transport.h"

#ifndef TORUS_FIO_VERSION
#error "TORUS_FIO_VERSION must name the fio version built against"
#endif
#ifndef TORUS_VERSION
#error "TORUS_VERSION must name the project's version (meson.build)"
#endif


/* Waits are cut into slices of this length so a stopping job is seen. */
#define WAIT_SLICE_NS		(200 * 1000000ULL)
/* Once the job stops, outstanding requests get this long to finish. */
#define STOP_GRACE_NS		(500 * 1000000ULL)

struct torus_data {
	struct thread_data *td;
	const struct torus_transport *tp;
	struct torus_session *session;
	struct torus_params params;
	struct torus_target target;
	/*
	 * Finished requests, in the order they finished: the transport's
	 * completer (add_event()) appends, ->event reads. The first handed of
	 * them went to fio with the last ->getevents.
	 */
	struct io_u **events;
	unsigned int nr_events, handed;
	bool closing;			/* cleanup: nobody takes events now */
	struct io_u **uncommitted;	/* queued since the last commit */
	unsigned int nr_uncommitted;
	unsigned int inflight;		/* queued and not yet finished */
	struct io_u *flushing;		/* the flush ->queue waits for */
	uint64_t stop_seen_ns;		/* when a stopping job was first seen waiting */
	struct torus_tl *tl;		/* timeline=, or NULL */
	uint64_t queued_ns;		/* the request in ->queue's stamp */
	char uri[512];
};

/* The one exported symbol: fio looks it up by this name. */
extern struct ioengine_ops ioengine __attribute__((visibility("default")));

/* fio exports its version string; refuse to run inside another fio. */
extern const char fio_version_string[] __attribute__((weak));

static void __attribute__((constructor)) torus_check_fio_version(void)
{
	if (!fio_version_string ||
	    !strcmp(fio_version_string, TORUS_FIO_VERSION))
		return;
	fprintf(stderr,
		"torus: libtorus.so was built against %s but is loaded by %s; structure layouts differ between fio versions, so it refuses to run. Rebuild it against this fio: rm -rf .deps/fio build && scripts/build.sh (or meson setup build -Dfio_src=/path/to/configured/%s/tree)\n",
		TORUS_FIO_VERSION, fio_version_string, fio_version_string);
	/* fio then refuses the engine ("bad ioops version"). */
	ioengine.version = 0;
}

/* The option table, laid out for every transport (option_table.c). */
static void __attribute__((constructor)) torus_build_options(void)
{
	ioengine.option_struct_size = torus_option_table_build();
}

/* The first line the engine prints, once per fio process. */
static void say_version(void)
{
	static bool said;

	if (said)
		return;
	said = true;
	fprintf(stderr, "torus %s (libtorus.so for %s)\n", TORUS_VERSION,
		TORUS_FIO_VERSION);
}

static struct torus_data *get_data(struct thread_data *td)
{
	struct torus_data *d = td->io_ops_data;

	if (d)
		return d;
	d = calloc(1, sizeof(*d));
	if (!d) {
		log_err("torus: out of memory\n");
		return NULL;
	}
	td->io_ops_data = d;
	return d;
}

/* Runs before the jobs fork (or in each job with create_serialize=0). */
static int fio_torus_setup(struct thread_data *td)
{
	struct torus_data *d = get_data(td);
	struct fio_file *f;
	char err[1024];

	if (!d)
		return 1;
	say_version();
	if (torus_job_resolve(td, &d->tp, &d->params, d->uri, sizeof(d->uri)))
		return 1;
	if (d->tp->inspect(&d->params, &d->target, err, sizeof(err))) {
		log_err("torus: %s\n", err);
		return 1;
	}
	dprint(FD_IO, "torus: %s: %" PRIu64 " bytes, %s\n", d->target.label,
	       d->target.size, d->target.detail);

	/* One pretend file: the export (as the rbd and nbd engines do). */
	if (!td->files_index) {
		add_file(td, td->o.filename ? : "torus", 0, 0);
		td->o.nr_files = td->o.nr_files ? : 1;
		td->o.open_files++;
	}
	f = td->files[0];
	f->real_file_size = d->target.size;
	return torus_job_validate(td, d->tp, &d->params, &d->target, f);
}

/*
 * What the last ->getevents handed out, fio has taken through ->event by
 * the time it queues or reaps again: drop it, so that d->events never
 * holds more than the requests in flight (iodepth).
 */
static void drop_handed(struct torus_data *d)
{
	if (!d->handed)
		return;
	d->nr_events -= d->handed;
	memmove(d->events, d->events + d->handed,
		d->nr_events * sizeof(*d->events));
	d->handed = 0;
}

/*
 * The completer every transport hands finished requests to: the one
 * hand-off between a reply (or a ring entry) and fio's ->event.
 */
static void add_event(void *arg, void *user, int error)
{
	struct torus_data *d = arg;
	struct io_u *io_u = user;

	if (d->closing)
		return;
	d->inflight--;
	io_u->error = error;
	if (error)
		io_u->resid = io_u->xfer_buflen;
	/*
	 * fio drops the error of a flush that completes from ->getevents
	 * (io_completed() returns early for syncs): fail the job here, or a
	 * lost flush would pass as err=0.
	 */
	if (error && ddir_sync(io_u->ddir))
		td_verror(d->td, error, "torus flush");
	if (io_u == d->flushing) {
		d->flushing = NULL;	/* ->queue hands it back itself */
		return;
	}
	d->events[d->nr_events++] = io_u;
}

/* timeline=: a wire command of io_u finished (the transport's stamps). */
static void stamp(void *arg, void *user, const struct torus_wire_stamps *w)
{
	struct torus_data *d = arg;
	struct io_u *io_u = user;

	torus_tl_cmd(d->tl, io_u->index, w);
}

static enum tl_op tl_op_of(const struct io_u *io_u)
{
	switch (io_u->ddir) {
	case DDIR_READ:
		return TL_OP_READ;
	case DDIR_WRITE:
		return TL_OP_WRITE;
	case DDIR_TRIM:
		return TL_OP_TRIM;
	case DDIR_SYNC:
	case DDIR_DATASYNC:
		return TL_OP_FLUSH;
	default:
		return TL_OP_OTHER;
	}
}

/* The most wire commands one of the job's requests can need. */
static unsigned int cmds_per_request(struct thread_data *td,
				     const struct torus_target *t)
{
	unsigned long long bs = 0;
	int ddir;

	if (!t->cmd_max)
		return 1;
	for (ddir = DDIR_READ; ddir <= DDIR_TRIM; ddir++)
		if (td->o.max_bs[ddir] > bs)
			bs = td->o.max_bs[ddir];
	return bs > t->cmd_max ? (bs + t->cmd_max - 1) / t->cmd_max : 1;
}

/* timeline=DIR: the job's record file, before anything connects. */
static int open_timeline(struct thread_data *td, struct torus_data *d)
{
	struct torus_options *o = td->eo;
	char err[1024];

	if (!o->timeline || !*o->timeline)
		return 0;
	/* Its workers queue the job's I/O, each with an engine of its own. */
	if (td->o.io_submit_mode == IO_MODE_OFFLOAD) {
		log_err("torus: timeline= does not work with io_submit_mode=offload (its worker threads queue the job's I/O, each with an engine of its own): use io_submit_mode=inline, or drop timeline=\n");
		return 1;
	}
	d->tl = torus_tl_open(o->timeline, td->thread_number, d->tp->name,
			      err, sizeof(err));
	if (!d->tl) {
		log_err("torus: %s\n", err);
		return 1;
	}
	d->params.stamp.fn = stamp;
	d->params.stamp.arg = d;
	d->params.stamp.queued = &d->queued_ns;
	return 0;
}

/*
 * Per-job state. Runs in the job's process or thread; may run without
 * ->setup (io_submit_mode=offload workers), so it stands on its own.
 */
static int fio_torus_init(struct thread_data *td)
{
	struct torus_data *d = get_data(td);
	unsigned int depth = td->o.iodepth;
	char err[1024];

	if (!d)
		return 1;
	if (!d->tp) {
		say_version();
		if (torus_job_resolve(td, &d->tp, &d->params, d->uri,
				      sizeof(d->uri)))
			return 1;
	}

	d->events = calloc(depth, sizeof(*d->events));
	d->uncommitted = calloc(depth, sizeof(*d->uncommitted));
	if (!d->events || !d->uncommitted) {
		log_err("torus: out of memory for iodepth=%u\n", depth);
		return 1;
	}
	d->td = td;
	d->params.done.fn = add_event;
	d->params.done.arg = d;
	if (open_timeline(td, d))
		return 1;
	d->session = d->tp->open(&d->params, depth, &d->target, err,
				 sizeof(err));
	if (!d->session) {
		log_err("torus: %s\n", err);
		return 1;
	}
	if (d->tl && torus_tl_size(d->tl, depth,
				   cmds_per_request(td, &d->target), err,
				   sizeof(err))) {
		log_err("torus: %s\n", err);
		return 1;
	}
	return 0;
}

/* The job was told to stop, or its runtime is over. */
static bool job_stopping(struct thread_data *td)
{
	if (td->terminate)
		return true;
	return td->o.timeout && !in_ramp_time(td) &&
	       utime_since_now(&td->epoch) >= td->o.timeout;
}

/*
 * A stopping job must not wait on a stalled server: after a short grace,
 * what is still outstanding is cancelled and comes back as failures.
 */
static void stop_if_asked(struct thread_data *td, struct torus_data *d,
			  uint64_t now)
{
	if (!job_stopping(td))
		return;
	if (!d->stop_seen_ns)
		d->stop_seen_ns = now;
	else if (now - d->stop_seen_ns >= STOP_GRACE_NS)
		d->tp->cancel(d->session, ECANCELED);
}

/*
 * A flush completes before ->queue returns, as libaio's fsync does. fio
 * 3.33 asks for a sync after every fsync= writes until one has
 * *completed* (io_u.c sets last_was_sync only then), so a flush left in
 * flight brought a burst of them; FIO_Q_BUSY to a second one is not
 * enough, as fio keeps the sync it was refused and sends it later
 * (docs/performance-history.md). Newer fio counts syncs as issued; the
 * engine flushes as libaio does under any fio, so that paths compare.
 * Uncommitted writes go first: FIO_Q_BUSY makes fio commit them and ask
 * again. The flush covers what completed before it was sent, as any
 * flush; completions reaped meanwhile wait in d->events.
 */
static enum fio_q_status queue_flush(struct thread_data *td,
				     struct torus_data *d, struct io_u *io_u)
{
	struct timespec wait = { .tv_nsec = WAIT_SLICE_NS };
	int ret;

	if (d->nr_uncommitted)
		return FIO_Q_BUSY;
	drop_handed(d);
	d->inflight++;
	d->flushing = io_u;
	if (d->tl)
		d->queued_ns = torus_tl_queued(d->tl, io_u->index);
	ret = d->tp->queue(d->session, TORUS_OP_FLUSH, false, 0, 0,
			   io_u->xfer_buf, io_u);
	if (ret) {
		d->inflight--;
		d->flushing = NULL;
		if (ret == -EBUSY)
			return FIO_Q_BUSY;
		io_u->error = ret == -ENOTCONN ? EIO : -ret;
		return FIO_Q_COMPLETED;
	}
	if (fio_fill_issue_time(td))
		fio_gettime(&io_u->issue_time, NULL);
	ret = d->tp->submit(d->session);
	while (!ret && d->flushing) {
		ret = d->tp->reap(d->session, 1, &wait);
		if (ret > 0)
			ret = 0;
		if (!ret && d->flushing)
			stop_if_asked(td, d, now_ns());
	}
	if (ret < 0) {
		/* Everything outstanding fails, the flush with it. */
		td_verror(td, -ret, "torus flush");
		d->tp->cancel(d->session, -ret);
		if (d->flushing) {
			d->flushing = NULL;
			d->inflight--;
			io_u->error = -ret;
		}
	}
	if (d->tl)
		torus_tl_handed(d->tl, io_u->index, TL_OP_FLUSH,
				torus_tl_now(d->tl));
	return FIO_Q_COMPLETED;
}

static enum fio_q_status fio_torus_queue(struct thread_data *td,
					 struct io_u *io_u)
{
	struct torus_data *d = td->io_ops_data;
	struct torus_options *o = td->eo;
	uint64_t offset = io_u->offset;
	uint32_t len = io_u->xfer_buflen;
	enum torus_op op;
	bool fua = false;
	int ret;

	fio_ro_check(td, io_u);

	switch (io_u->ddir) {
	case DDIR_READ:
		op = TORUS_OP_READ;
		break;
	case DDIR_WRITE:
		op = TORUS_OP_WRITE;
		fua = o->fua;
		break;
	case DDIR_TRIM:
		op = TORUS_OP_TRIM;
		break;
	case DDIR_SYNC:
	case DDIR_DATASYNC:
		/* No write cache advertised: nothing to flush. */
		if (!d->target.can_flush)
			return FIO_Q_COMPLETED;
		return queue_flush(td, d, io_u);
	default:
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}

	/* Counted first: a transport may finish it before returning. */
	drop_handed(d);
	d->inflight++;
	if (d->tl)
		d->queued_ns = torus_tl_queued(d->tl, io_u->index);
	ret = d->tp->queue(d->session, op, fua, offset, len, io_u->xfer_buf,
			   io_u);
	if (ret) {
		d->inflight--;
		if (ret == -EBUSY)
			return FIO_Q_BUSY;
		io_u->error = ret == -ENOTCONN ? EIO : -ret;
		return FIO_Q_COMPLETED;
	}
	d->uncommitted[d->nr_uncommitted++] = io_u;
	return FIO_Q_QUEUED;
}

static int fio_torus_commit(struct thread_data *td)
{
	struct torus_data *d = td->io_ops_data;
	struct timespec now;
	unsigned int i;
	bool stamp;
	int ret;

	if (!d->nr_uncommitted)
		return 0;
	stamp = fio_fill_issue_time(td);
	if (stamp)
		fio_gettime(&now, NULL);
	for (i = 0; i < d->nr_uncommitted; i++) {
		if (stamp)
			memcpy(&d->uncommitted[i]->issue_time, &now,
			       sizeof(now));
		io_u_queued(td, d->uncommitted[i]);
	}

	ret = d->tp->submit(d->session);
	io_u_mark_submit(td, d->nr_uncommitted);
	d->nr_uncommitted = 0;
	if (ret < 0) {
		td_verror(td, -ret, "torus submit");
		return ret;
	}
	return 0;
}

/*
 * Waits in slices, so that the end of the runtime, SIGINT or SIGTERM is
 * seen within a slice however long the server takes. Finished requests
 * are already in d->events (add_event()); fio takes at most max of them,
 * the rest stay first in line for the next call.
 */
static int fio_torus_getevents(struct thread_data *td, unsigned int min,
			       unsigned int max, const struct timespec *t)
{
	struct torus_data *d = td->io_ops_data;
	struct timespec wait = { .tv_nsec = WAIT_SLICE_NS };
	uint64_t start = 0, limit = 0, now, left;
	int n;

	drop_handed(d);
	if (t) {
		limit = (uint64_t)t->tv_sec * 1000000000ULL + t->tv_nsec;
		if (limit < WAIT_SLICE_NS)
			wait.tv_nsec = limit;
	}
	for (;;) {
		n = d->tp->reap(d->session,
				min > d->nr_events ? min - d->nr_events : 0,
				&wait);
		if (n < 0) {
			td_verror(td, -n, "torus getevents");
			return n;
		}
		if (d->nr_events >= min || !d->inflight)
			break;
		now = now_ns();
		if (!start)
			start = now - (t && limit < WAIT_SLICE_NS ? limit : WAIT_SLICE_NS);
		if (t) {
			if (now - start >= limit)
				break;
			left = limit - (now - start);
			wait.tv_sec = 0;
			wait.tv_nsec = left < WAIT_SLICE_NS ? left : WAIT_SLICE_NS;
		}
		stop_if_asked(td, d, now);
	}
	d->handed = d->nr_events < max ? d->nr_events : max;
	if (d->tl && d->handed) {
		unsigned int i;

		now = torus_tl_now(d->tl);
		for (i = 0; i < d->handed; i++)
			torus_tl_handed(d->tl, d->events[i]->index,
					tl_op_of(d->events[i]), now);
	}
	return d->handed;
}

static struct io_u *fio_torus_event(struct thread_data *td, int event)
{
	struct torus_data *d = td->io_ops_data;

	return d->events[event];
}

static void fio_torus_cleanup(struct thread_data *td)
{
	struct torus_data *d = td->io_ops_data;
	char err[1024];

	if (!d)
		return;
	d->closing = true;
	if (d->session)
		d->tp->close(d->session);
	if (d->tl && torus_tl_close(d->tl, err, sizeof(err)))
		log_err("torus: %s\n", err);
	free(d->events);
	free(d->uncommitted);
	free(d);
	td->io_ops_data = NULL;
}

static int fio_torus_open_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static int fio_torus_close_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static int fio_torus_invalidate(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

/*
 * FIO_RAWIO makes fio page-align the I/O buffers. The kernel copies
 * payloads between them and socket buffers with "rep movsb", which is
 * several times slower on AMD Zen when the two sit at unfavourable offsets
 * in their cache lines (see copy_payload() in proto/nbd/nbd_replies.c); malloc
 * leaves fio's buffers 16 bytes into a line, which is one of them.
 */
struct ioengine_ops ioengine = {
	.name			= "torus",
	.version		= FIO_IOOPS_VERSION,
	.flags			= FIO_DISKLESSIO | FIO_NOEXTEND |
				  FIO_ASYNCIO_SETS_ISSUE_TIME | FIO_RAWIO,
	.setup			= fio_torus_setup,
	.init			= fio_torus_init,
	.queue			= fio_torus_queue,
	.commit			= fio_torus_commit,
	.getevents		= fio_torus_getevents,
	.event			= fio_torus_event,
	.cleanup		= fio_torus_cleanup,
	.open_file		= fio_torus_open_file,
	.close_file		= fio_torus_close_file,
	.invalidate		= fio_torus_invalidate,
	.options		= torus_option_table,
	.option_struct_size	= sizeof(struct torus_options),
};
