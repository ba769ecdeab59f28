// SPDX-License-Identifier: GPL-2.0-only
/*
 * The tcmu-runner store at depth (store_aio_ops): a plugin driven as
 * tcmu-runner drives it. A handler with nr_threads > 0 has its callouts
 * run on that many worker threads of the device, each callout's return
 * its final status; a handler with nr_threads 0 is called from the
 * submitting thread, and a callout that returns TCMU_STS_OK has queued
 * the command, which the handler completes later, from its own threads,
 * through tcmur_cmd_complete(). Either way many commands are in flight.
 *
 * The plugin gets the caller's iovecs (the ring's data area), copied into
 * the command, since handlers may move them while they copy. Finished
 * commands go on a list under a lock and an eventfd says so; reap() hands
 * them to their done() in the submitting thread.
 *
 * A command's slot is made when the depth in flight first reaches it, in
 * chunks, and kept for reuse until the store is closed: the memory held
 * follows the most commands ever in flight, not the depth opened for (a
 * ring's 65,535), and steady state allocates nothing.
 */
#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <scsi/scsi.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "runner_aio.h"
#include "runner_store.h"
#include "storage_log.h"

/* The most iovecs one request may bring (the ring's commands have fewer). */
#define RUNNER_AIO_IOV		64
/* How long cancel() waits for commands the plugin still holds. */
#define RUNNER_CANCEL_S		30
/* Slots made at once when more are in flight than ever before. */
#define RUNNER_AIO_CHUNK	32

struct runner_slot {
	struct tcmur_cmd cmd;
	struct tcmulib_cmd lib;
	struct iovec iov[RUNNER_AIO_IOV];
	uint8_t cdb[16];		/* what the handler gets */
	uint8_t init_cdb[16];		/* the READ/WRITE it was asked */
	struct runner_aio *aio;
	struct store_io *io;
	bool flushing;			/* the flush after a FUA write */
	int sts;			/* a TCMU_STS_*, or with host_err: */
	int host_err;			/* an errno from the host itself */
	struct runner_slot *next;
};

struct runner_aio {
	struct runner_store *r;
	struct runner_slot **chunks;	/* of RUNNER_AIO_CHUNK slots, as made */
	struct runner_slot **free;	/* a stack: the submitter's only */
	unsigned int nr, nr_made, nr_free;
	int efd;
	pthread_mutex_t lock;		/* the finished list */
	struct runner_slot *done_head, *done_tail;
};

/* The device's worker threads, for handlers with nr_threads > 0. */
struct runner_wq {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct runner_slot *head, *tail;
	bool stop;
	int nr;
	pthread_t threads[];
};

/* @s is over: a TCMU status from the plugin, or @host_err from here. */
static void finish_with(struct runner_slot *s, int sts, int host_err)
{
	struct runner_aio *a = s->aio;
	uint64_t one = 1;

	s->sts = sts;
	s->host_err = host_err;
	s->next = NULL;
	pthread_mutex_lock(&a->lock);
	if (a->done_tail)
		a->done_tail->next = s;
	else
		a->done_head = s;
	a->done_tail = s;
	pthread_mutex_unlock(&a->lock);
	if (write(a->efd, &one, sizeof(one)) < 0)
		storage_err("tcmu-runner %s: cannot signal a completion: %s",
			    a->r->label, strerror(errno));
}

static void finished(struct runner_slot *s, int sts)
{
	finish_with(s, sts, 0);
}

/* tcmur_cmd_complete() of a queued command, from any thread. */
static void cmd_done(struct tcmu_device *dev, struct tcmur_cmd *cmd, int rc)
{
	finished((struct runner_slot *)((char *)cmd -
					offsetof(struct runner_slot, cmd)), rc);
}

/* The initiator's SYNCHRONIZE CACHE, else one of the whole device. */
static void take_sync_cdb(struct runner_slot *s)
{
	const struct store_io *io = s->io;
	int len = io->cdb ? tcmu_cdb_get_length((uint8_t *)io->cdb) : -1;

	if (len > 0 && len <= (int)sizeof(s->cdb) &&
	    (uint32_t)len <= io->cdb_max &&
	    (io->cdb[0] == SYNCHRONIZE_CACHE ||
	     io->cdb[0] == SYNCHRONIZE_CACHE_16)) {
		memset(s->init_cdb, 0, sizeof(s->init_cdb));
		memcpy(s->init_cdb, io->cdb, len);
		return;
	}
	runner_cdb_sync(s->init_cdb);
}

/*
 * The initiator's READ/WRITE for a handler that takes whole commands, as
 * tcmu-runner passes it on, copied now (it lives in the ring) and checked
 * to ask for what was validated; else one built from the request.
 */
static void take_cdb(struct runner_slot *s)
{
	const struct store_io *io = s->io;
	uint32_t bs = s->aio->r->dev.block_size;
	int len = io->cdb ? tcmu_cdb_get_length((uint8_t *)io->cdb) : -1;

	if (len > 0 && len <= (int)sizeof(s->cdb) &&
	    (uint32_t)len <= io->cdb_max) {
		memcpy(s->cdb, io->cdb, len);
		if ((uint64_t)tcmu_cdb_get_lba(s->cdb) * bs == io->off &&
		    (uint64_t)tcmu_cdb_get_xfer_length(s->cdb) * bs == io->len &&
		    len > 6)
			return;
	}
	runner_cdb_rw(s->cdb, io->op == STORE_IO_WRITE, io->off / bs,
		      io->len / bs);
}

/*
 * The callout for @s's request, as tcmu-runner's generic handling makes
 * it; *callout says whether a read/write/flush/unmap callout was used
 * (TCMU_STS_OK from one of those means queued when nr_threads is 0).
 */
static int call(struct runner_slot *s, bool *callout)
{
	struct runner_store *r = s->aio->r;
	struct tcmur_handler *h = r->h;
	const struct store_io *io = s->io;

	*callout = true;
	if (s->flushing || io->op == STORE_IO_FLUSH) {
		if (h->flush)
			return h->flush(&r->dev, &s->cmd);
		if (!runner_scsi_only(r))
			return TCMU_STS_NOT_HANDLED;
		if (s->flushing)
			runner_cdb_sync(s->cdb);
		else
			memcpy(s->cdb, s->init_cdb, sizeof(s->cdb));
	} else if (io->op == STORE_IO_TRIM) {
		if (!h->unmap)
			return TCMU_STS_NOT_HANDLED;
		return h->unmap(&r->dev, &s->cmd, io->off, io->len);
	} else if (!runner_scsi_only(r)) {
		if (io->op == STORE_IO_WRITE)
			return h->write(&r->dev, &s->cmd, s->lib.iovec,
					s->lib.iov_cnt, io->len, io->off);
		return h->read(&r->dev, &s->cmd, s->lib.iovec, s->lib.iov_cnt,
			       io->len, io->off);
	} else {
		memcpy(s->cdb, s->init_cdb, sizeof(s->cdb));
	}
	*callout = false;
	return h->handle_cmd(&r->dev, &s->cmd);
}

static bool queued(const struct runner_store *r, bool callout, int sts)
{
	return callout ? !r->h->nr_threads && sts == TCMU_STS_OK :
			 sts == TCMU_STS_ASYNC_HANDLED;
}

static void *worker(void *arg)
{
	struct runner_store *r = arg;
	struct runner_wq *wq = r->wq;
	struct runner_slot *s;
	bool callout;
	int sts;

	pthread_mutex_lock(&wq->lock);
	for (;;) {
		while (!wq->head && !wq->stop)
			pthread_cond_wait(&wq->cond, &wq->lock);
		if (!wq->head)
			break;
		s = wq->head;
		wq->head = s->next;
		if (!wq->head)
			wq->tail = NULL;
		pthread_mutex_unlock(&wq->lock);
		runner_call_begin(r);
		sts = call(s, &callout);
		runner_call_end(r);
		/* A worker's callout is synchronous, handle_cmd's maybe not. */
		if (callout || sts != TCMU_STS_ASYNC_HANDLED)
			finished(s, sts);
		pthread_mutex_lock(&wq->lock);
	}
	pthread_mutex_unlock(&wq->lock);
	return NULL;
}

static int wq_start(struct runner_store *r)
{
	struct runner_wq *wq;
	int i;

	wq = calloc(1, sizeof(*wq) + r->h->nr_threads * sizeof(pthread_t));
	if (!wq)
		return -ENOMEM;
	pthread_mutex_init(&wq->lock, NULL);
	pthread_cond_init(&wq->cond, NULL);
	r->wq = wq;
	for (i = 0; i < r->h->nr_threads; i++) {
		if (pthread_create(&wq->threads[i], NULL, worker, r))
			break;
		wq->nr++;
	}
	if (!wq->nr) {
		runner_wq_stop(r);
		return -EAGAIN;
	}
	return 0;
}

void runner_wq_stop(struct runner_store *r)
{
	struct runner_wq *wq = r->wq;
	int i;

	if (!wq)
		return;
	pthread_mutex_lock(&wq->lock);
	wq->stop = true;
	pthread_cond_broadcast(&wq->cond);
	pthread_mutex_unlock(&wq->lock);
	for (i = 0; i < wq->nr; i++)
		pthread_join(wq->threads[i], NULL);
	pthread_cond_destroy(&wq->cond);
	pthread_mutex_destroy(&wq->lock);
	free(wq);
	r->wq = NULL;
}

/* Hand @s to the plugin: a worker, or the callout from here. */
static void dispatch(struct runner_slot *s)
{
	struct runner_store *r = s->aio->r;
	struct runner_wq *wq = r->wq;
	bool callout;
	int sts;

	memset(&s->cmd, 0, sizeof(s->cmd));
	s->cmd.lib_cmd = &s->lib;
	s->cmd.requested = s->flushing ? 0 : s->io->len;
	s->cmd.done = cmd_done;
	memset(s->lib.sense_buf, 0, sizeof(s->lib.sense_buf));
	if (r->h->nr_threads) {
		s->next = NULL;
		pthread_mutex_lock(&wq->lock);
		if (wq->tail)
			wq->tail->next = s;
		else
			wq->head = s;
		wq->tail = s;
		pthread_cond_signal(&wq->cond);
		pthread_mutex_unlock(&wq->lock);
		return;
	}
	runner_call_begin(r);
	sts = call(s, &callout);
	runner_call_end(r);
	if (!queued(r, callout, sts))
		finished(s, sts);
}

/*
 * Up to RUNNER_AIO_CHUNK slots more, onto the free stack: when every slot
 * made so far is in flight. -EBUSY at the depth opened for, or -ENOMEM.
 */
static int grow(struct runner_aio *a)
{
	unsigned int i, n = a->nr - a->nr_made;
	struct runner_slot *c;

	if (!n)
		return -EBUSY;
	if (n > RUNNER_AIO_CHUNK)
		n = RUNNER_AIO_CHUNK;
	c = calloc(n, sizeof(*c));
	if (!c)
		return -ENOMEM;
	a->chunks[a->nr_made / RUNNER_AIO_CHUNK] = c;
	for (i = 0; i < n; i++) {
		struct runner_slot *s = &c[n - 1 - i];

		s->aio = a;
		s->lib.cdb = s->cdb;
		s->lib.iovec = s->iov;
		s->lib.hm_private = &s->cmd;
		a->free[a->nr_free++] = s;
	}
	a->nr_made += n;
	return 0;
}

static int aio_open(struct store *st, unsigned int depth)
{
	struct runner_aio **ap, *a;
	struct runner_store *r = runner_port(st, &ap);
	int ret = -ENOMEM;

	if (*ap)
		return -EBUSY;
	pthread_mutex_lock(&r->io_lock);
	if (r->h->nr_threads && !r->wq)
		ret = wq_start(r);
	else
		ret = 0;
	pthread_mutex_unlock(&r->io_lock);
	if (ret)
		return ret;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->r = r;
	a->nr = depth;
	/* Pointers only, calloc'd: pages are touched as the depth grows. */
	a->chunks = calloc((depth + RUNNER_AIO_CHUNK - 1) / RUNNER_AIO_CHUNK,
			   sizeof(*a->chunks));
	a->free = calloc(depth, sizeof(*a->free));
	a->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!a->chunks || !a->free || a->efd < 0) {
		ret = a->efd < 0 ? -errno : -ENOMEM;
		if (a->efd >= 0)
			close(a->efd);
		free(a->chunks);
		free(a->free);
		free(a);
		return ret;
	}
	pthread_mutex_init(&a->lock, NULL);
	*ap = a;
	return a->efd;
}

static void aio_submit(struct store *st, struct store_io *io)
{
	struct runner_aio **ap;
	struct runner_store *r = runner_port(st, &ap);
	struct runner_aio *a = *ap;
	struct runner_slot *s;
	int ret;

	ret = a->nr_free ? 0 : grow(a);
	if (ret) {
		/* The caller keeps no more in flight than it opened for. */
		if (ret == -EBUSY)
			storage_err("tcmu-runner %s: more requests than the %u opened for",
				    r->label, a->nr);
		else
			storage_err("tcmu-runner %s: no memory for a command slot with %u in flight",
				    r->label, a->nr_made);
		io->done(io, ret);
		return;
	}
	s = a->free[--a->nr_free];
	s->io = io;
	s->flushing = false;
	if (io->op == STORE_IO_ZERO) {
		/* No plugin here writes zeroes alone: the synchronous path. */
		finish_with(s, TCMU_STS_OK, store_zero(st, io->len, io->off));
		return;
	}
	if ((io->op == STORE_IO_READ || io->op == STORE_IO_WRITE) &&
	    io->iov_cnt > RUNNER_AIO_IOV) {
		storage_err("tcmu-runner %s: a request in %u pieces, more than %d",
			    r->label, io->iov_cnt, RUNNER_AIO_IOV);
		finish_with(s, TCMU_STS_OK, -E2BIG);
		return;
	}
	if (io->op == STORE_IO_READ || io->op == STORE_IO_WRITE) {
		memcpy(s->iov, io->iov, io->iov_cnt * sizeof(*s->iov));
		s->lib.iov_cnt = io->iov_cnt;
		if (runner_scsi_only(r)) {
			take_cdb(s);
			memcpy(s->init_cdb, s->cdb, sizeof(s->cdb));
		}
	} else {
		s->lib.iov_cnt = 0;
		if (io->op == STORE_IO_FLUSH && runner_scsi_only(r))
			take_sync_cdb(s);
	}
	dispatch(s);
}

static void aio_commit(struct store *st)
{
}

static const char *op_name(const struct runner_slot *s)
{
	if (s->flushing)
		return "flush after a FUA write";
	switch (s->io->op) {
	case STORE_IO_READ:	return "read";
	case STORE_IO_WRITE:	return "write";
	case STORE_IO_FLUSH:	return "flush";
	case STORE_IO_ZERO:	return "zero";
	}
	return "unmap";
}

/* @s's request is over with @err (ZERO's is an errno already). */
static void deliver(struct runner_aio *a, struct runner_slot *s, int err)
{
	struct store_io *io = s->io;

	a->free[a->nr_free++] = s;
	io->done(io, err);
}

static int reap_all(struct runner_aio *a, bool cancelling, int cancel_err)
{
	struct runner_store *r = a->r;
	struct runner_slot *s, *next;
	uint64_t count;
	int n = 0, err;

	if (read(a->efd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		storage_err("tcmu-runner %s: reading the completion eventfd: %s",
			    r->label, strerror(errno));
	pthread_mutex_lock(&a->lock);
	s = a->done_head;
	a->done_head = a->done_tail = NULL;
	pthread_mutex_unlock(&a->lock);
	for (; s; s = next) {
		next = s->next;
		if (s->host_err)
			err = s->host_err;
		else
			err = runner_report(r, op_name(s), s->flushing ? 0 :
					    s->io->len, s->io->off, s->sts,
					    s->lib.sense_buf);
		if (!err && !cancelling && s->io->op == STORE_IO_WRITE &&
		    (s->io->flags & STORE_IO_FUA) && !s->flushing &&
		    r->dev.write_cache && (r->h->flush || runner_scsi_only(r))) {
			s->flushing = true;
			s->lib.iov_cnt = 0;
			dispatch(s);
			continue;
		}
		deliver(a, s, cancelling && !err ? -cancel_err : err);
		n++;
	}
	return n;
}

static int aio_reap(struct store *st)
{
	struct runner_aio **ap;

	runner_port(st, &ap);
	return reap_all(*ap, false, 0);
}

/*
 * The plugin may still be writing into a command's buffers: wait for it
 * to give each one back, then fail them all.
 */
static void aio_cancel(struct store *st, int err)
{
	struct runner_aio **ap;
	struct runner_store *r = runner_port(st, &ap);
	struct runner_aio *a = *ap;
	struct pollfd pfd = { .fd = a->efd, .events = POLLIN };
	int waited = 0;

	reap_all(a, true, err);
	while (a->nr_free < a->nr_made && waited < RUNNER_CANCEL_S * 10) {
		if (poll(&pfd, 1, 100) == 0)
			waited++;
		reap_all(a, true, err);
	}
	if (a->nr_free < a->nr_made)
		storage_err("tcmu-runner %s: the handler still holds %u commands after %d s; leaving them to it",
			    r->label, a->nr_made - a->nr_free, RUNNER_CANCEL_S);
}

void runner_aio_free(struct runner_aio *a)
{
	unsigned int i;

	if (!a)
		return;
	/* Commands a handler never gave back keep their slots. */
	if (a->nr_free < a->nr_made)
		return;
	close(a->efd);
	pthread_mutex_destroy(&a->lock);
	for (i = 0; i * RUNNER_AIO_CHUNK < a->nr_made; i++)
		free(a->chunks[i]);
	free(a->chunks);
	free(a->free);
	free(a);
}

const struct store_aio_ops runner_aio_ops = {
	.open = aio_open,
	.submit = aio_submit,
	.commit = aio_commit,
	.reap = aio_reap,
	.cancel = aio_cancel,
};
