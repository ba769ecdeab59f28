/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The SCSI target the handler host plays: a direct-access block device
 * over a struct store, answering what Linux's sd driver and the engine
 * send. No socket and no ring: a CDB and the command's data buffers (the
 * iovecs of a TCMU entry) in, a status with sense and the length of the
 * data-in out. Nothing is allocated per command.
 *
 * struct scsi_target is what every ring shares (geometry, limits, names),
 * read-only once set up; struct scsi_lu is one ring's view of it: its own
 * store session and scratch buffers.
 */
#ifndef TCMU_SHIM_SCSI_TARGET_H
#define TCMU_SHIM_SCSI_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "store_ops.h"
#include "tcmu_cdb_parse.h"

#define SCSI_VENDOR		"TORUS"
#define SCSI_PRODUCT		"tcmu-shim"
#define SCSI_REVISION		"0001"

/* UNMAP block descriptors per command we accept (block limits VPD). */
#define SCSI_MAX_UNMAP_DESCS	64
/* The longest reply built in scsi_lu.resp (REPORT SUPPORTED OPCODES). */
#define SCSI_RESP_MAX		1024

struct scsi_target {
	uint64_t nr_blocks;
	uint32_t block_size;
	uint32_t max_xfer;		/* blocks per READ/WRITE */
	uint32_t max_unmap;		/* blocks per UNMAP command */
	uint32_t max_ws;		/* blocks per WRITE SAME */
	uint32_t granularity;		/* blocks: the optimal granularity */
	bool lbprz;			/* unmapped blocks read as zeroes */
	/* Thin provisioned (UNMAP taken): true unless the store drops trims. */
	bool thin;
	/* MODE SENSE's WCE: true unless the store says it has no cache. */
	bool write_cache;
	/* MODE SENSE's WP: a read-only store; writes get DATA PROTECT. */
	bool write_protect;
	uint64_t id;			/* NAA designator and serial number */
	char serial[17];
};

/*
 * Geometry from the store's @size (a partial last block is not
 * offered), @max_transfer bytes per command (a multiple of @block_size),
 * @lbprz when the store's trim leaves zeroes, @id to name the unit.
 * -EINVAL when the sizes do not make a device.
 */
int scsi_target_init(struct scsi_target *t, uint64_t size,
		     uint32_t block_size, uint32_t max_transfer, bool lbprz,
		     uint64_t id);

struct scsi_lu {
	const struct scsi_target *t;
	struct store *st;
	uint8_t *bounce;		/* max_xfer blocks, page aligned */
	size_t bounce_len;
	uint8_t *param;			/* an UNMAP parameter list */
	size_t param_len;
	uint8_t resp[SCSI_RESP_MAX];	/* replies of emulated commands */
};

/* Every buffer a command may need. 0 or -ENOMEM. */
int scsi_lu_init(struct scsi_lu *lu, const struct scsi_target *t,
		 struct store *st);
void scsi_lu_free(struct scsi_lu *lu);

struct scsi_reply {
	uint8_t status;			/* SCSI_STATUS_* */
	uint8_t sense[TCMU_SENSE_FIXED_LEN];
	uint32_t sense_len;		/* 0 unless CHECK CONDITION */
	/* Bytes of data-in written when fewer than the buffers hold; -1. */
	int64_t read_len;
	int error;			/* the store's errno, for the log */
};

/*
 * Execute one command: @cdb (@cdb_len bytes readable), data-out read from
 * and data-in written to @iov[0..iov_cnt). Data-in shorter than the
 * buffers is followed by zeroes and reported in r->read_len.
 */
void scsi_execute(struct scsi_lu *lu, const uint8_t *cdb, size_t cdb_len,
		  const struct iovec *iov, uint32_t iov_cnt,
		  struct scsi_reply *r);

/*
 * The asynchronous path (a store with store_ops.aio): the same decoding
 * and checks as scsi_execute(), the store request started by the caller,
 * the reply made from its result by scsi_finish(). Errors map to the same
 * sense as in scsi_execute().
 */
enum scsi_plan {
	SCSI_PLAN_DONE,		/* the reply is made (refused, or no data) */
	SCSI_PLAN_START,	/* start io->bio, then scsi_finish() */
	SCSI_PLAN_SYNC,		/* not one request: scsi_execute() it */
};

struct scsi_io {
	struct store_io bio;
	uint64_t lba;		/* the first block, for the sense */
};

/*
 * Decode @cdb: READ, WRITE, SYNCHRONIZE CACHE, UNMAP of one range and
 * WRITE SAME of zeroes become one store request in io->bio, its data
 * @iov (kept valid by the caller until it finishes); anything else is
 * SCSI_PLAN_SYNC. io->bio.done is left to the caller.
 */
enum scsi_plan scsi_prepare(struct scsi_lu *lu, const uint8_t *cdb,
			    size_t cdb_len, const struct iovec *iov,
			    uint32_t iov_cnt, struct scsi_io *io,
			    struct scsi_reply *r);

/* The reply to a started command whose request ended with @err (0, -errno). */
void scsi_finish(const struct scsi_lu *lu, const struct scsi_io *io, int err,
		 struct scsi_reply *r);

/* A CHECK CONDITION reply with this sense (also for the ring's own use). */
void scsi_reply_sense(struct scsi_reply *r, const struct tcmu_sense *s);

#endif /* TCMU_SHIM_SCSI_TARGET_H */
