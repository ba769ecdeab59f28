/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The tcmu-runner store's private parts, shared by its synchronous side
 * (runner.c: open, close, one command at a time) and its asynchronous
 * side (runner_aio.c: commands at depth, as tcmu-runner drives plugins),
 * and what both call of runner_call.c. runner.c also calls runner_aio.h;
 * runner_aio.c calls nothing of runner.c.
 */
#ifndef TORUS_TCMU_RUNNER_STORE_H
#define TORUS_TCMU_RUNNER_STORE_H

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "store_ops.h"
#include "runner_dev.h"

struct runner_aio;
struct runner_wq;

struct runner_store {
	struct store st;
	struct tcmu_device dev;
	struct tcmur_handler *h;
	char label[4200];		/* "qcow//tmp/x.qcow2", for messages */
	uint8_t *zeroes;
	/* One synchronous command at a time; its state lives here. */
	pthread_mutex_t io_lock;
	struct tcmur_cmd cmd;
	struct tcmulib_cmd lib;
	struct iovec iov;
	uint8_t cdb[16];
	/* Its asynchronous completion. */
	pthread_mutex_t done_lock;
	pthread_cond_t done_cond;
	bool done;
	int status;
	/*
	 * Callouts in flight at once, as in tcmu-runner: a handler with
	 * nr_threads 0 is called by one thread at a time (the daemon's
	 * command thread), one with nr_threads N by up to N (its workers).
	 */
	pthread_mutex_t call_lock;
	sem_t calls;
	struct runner_wq *wq;		/* nr_threads > 0, once at depth */
	/* Asynchronous requests on this store itself (no session). */
	struct runner_aio *aio;
};

/*
 * A ring's own handle on the device (store_session()): the same
 * plugin device, with asynchronous state of its own.
 */
struct runner_sess {
	struct store st;
	struct runner_store *r;
	struct runner_aio *aio;
};

static inline struct runner_store *to_runner(struct store *st)
{
	return (struct runner_store *)((char *)st -
				       offsetof(struct runner_store, st));
}

/* The most blocks a 10-byte CDB carries. */
#define CDB10_MAX_BLOCKS	0xffffu

/* The device and the asynchronous state behind @st (store or session). */
struct runner_store *runner_port(struct store *st, struct runner_aio ***aio);

/* One line naming the device, the request and @sense; the errno. */
int runner_report(struct runner_store *r, const char *what, size_t len,
		  uint64_t off, int sts, const uint8_t *sense);

/* READ/WRITE(10), or (16) when 10 cannot carry it, as Linux's sd. */
void runner_cdb_rw(uint8_t *cdb, bool write, uint64_t lba, uint32_t blocks);
/* SYNCHRONIZE CACHE(10) of the whole device. */
void runner_cdb_sync(uint8_t *cdb);

/* The handler takes only whole SCSI commands (fbo, zbc). */
static inline bool runner_scsi_only(const struct runner_store *r)
{
	return r->h->handle_cmd && !r->h->read;
}

/* Around every callout into the handler (see calls). */
void runner_call_begin(struct runner_store *r);
void runner_call_end(struct runner_store *r);

#endif /* TORUS_TCMU_RUNNER_STORE_H */
