// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the runner store's two sides, synchronous (runner.c) and
 * asynchronous (runner_aio.c), both do with the handler: the gate every
 * callout passes, the CDBs a handler that takes only SCSI commands gets,
 * and the report of a status that is not good. Both call here; this file
 * calls neither.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <scsi/scsi.h>

#include "runner_store.h"
#include "storage_log.h"
#include "torus_be.h"

struct runner_store *runner_port(struct store *st, struct runner_aio ***aio)
{
	struct runner_sess *sess;

	/* The device opens sessions (store_session()); a session, none. */
	if (st->ops->session) {
		if (aio)
			*aio = &to_runner(st)->aio;
		return to_runner(st);
	}
	sess = (struct runner_sess *)((char *)st -
				      offsetof(struct runner_sess, st));
	if (aio)
		*aio = &sess->aio;
	return sess->r;
}

static const char *status_name(int sts)
{
	switch (sts) {
	case TCMU_STS_NOT_HANDLED:	return "command not handled";
	case TCMU_STS_NO_RESOURCE:	return "no resources";
	case TCMU_STS_PASSTHROUGH_ERR:	return "check condition";
	case TCMU_STS_BUSY:		return "busy";
	case TCMU_STS_WR_ERR:		return "write error";
	case TCMU_STS_RD_ERR:		return "read error";
	case TCMU_STS_MISCOMPARE:	return "miscompare";
	case TCMU_STS_INVALID_CMD:	return "invalid command";
	case TCMU_STS_INVALID_CDB:	return "invalid field in CDB";
	case TCMU_STS_TIMEOUT:		return "timed out";
	case TCMU_STS_HW_ERR:		return "hardware error";
	case TCMU_STS_RANGE:		return "LBA out of range";
	}
	return "failed";
}

static int sts_errno(int sts)
{
	switch (sts) {
	case TCMU_STS_OK:		return 0;
	case TCMU_STS_NOT_HANDLED:
	case TCMU_STS_INVALID_CMD:	return -EOPNOTSUPP;
	case TCMU_STS_NO_RESOURCE:	return -ENOMEM;
	case TCMU_STS_BUSY:		return -EBUSY;
	case TCMU_STS_TIMEOUT:		return -ETIMEDOUT;
	case TCMU_STS_RANGE:
	case TCMU_STS_INVALID_CDB:	return -EINVAL;
	}
	return -EIO;
}

int runner_report(struct runner_store *r, const char *what, size_t len,
		  uint64_t off, int sts, const uint8_t *sense)
{
	if (sts == TCMU_STS_OK)
		return 0;
	if (sts == TCMU_STS_PASSTHROUGH_ERR)
		storage_err("tcmu-runner %s: %s of %zu bytes at %llu: %s (sense key 0x%x, asc/ascq 0x%02x/0x%02x)",
			    r->label, what, len, (unsigned long long)off,
			    status_name(sts), sense[2] & 0xf, sense[12],
			    sense[13]);
	else
		storage_err("tcmu-runner %s: %s of %zu bytes at %llu: %s (TCMU status %d)",
			    r->label, what, len, (unsigned long long)off,
			    status_name(sts), sts);
	return sts_errno(sts);
}

void runner_cdb_rw(uint8_t *cdb, bool write, uint64_t lba, uint32_t blocks)
{
	memset(cdb, 0, 16);
	if (lba + blocks - 1 <= UINT32_MAX && blocks <= CDB10_MAX_BLOCKS) {
		cdb[0] = write ? WRITE_10 : READ_10;
		put_be32(cdb + 2, lba);
		put_be16(cdb + 7, blocks);
	} else {
		cdb[0] = write ? WRITE_16 : READ_16;
		put_be64(cdb + 2, lba);
		put_be32(cdb + 10, blocks);
	}
}

void runner_cdb_sync(uint8_t *cdb)
{
	memset(cdb, 0, 16);
	cdb[0] = SYNCHRONIZE_CACHE;
}

void runner_call_begin(struct runner_store *r)
{
	if (r->h->nr_threads)
		while (sem_wait(&r->calls) && errno == EINTR)
			;
	else
		pthread_mutex_lock(&r->call_lock);
}

void runner_call_end(struct runner_store *r)
{
	if (r->h->nr_threads)
		sem_post(&r->calls);
	else
		pthread_mutex_unlock(&r->call_lock);
}
