/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Storage behind an export. A store is a table of operations over a byte
 * range [0, size); layers (replication, coreos-torus blocks) are stores over
 * other stores. Every operation returns 0 or a negative errno.
 *
 * Operations may be called from several connection threads at once; a
 * store that cannot allow that (Redis, coreos-torus blocks) locks inside.
 */
#ifndef TORUS_STORAGE_STORE_OPS_H
#define TORUS_STORAGE_STORE_OPS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "torus_split.h"

struct store;
struct store_aio_ops;

struct store_ops {
	const char *name;
	int (*pread)(struct store *st, void *buf, size_t len, uint64_t off);
	int (*pwrite)(struct store *st, const void *buf, size_t len,
		      uint64_t off);
	int (*zero)(struct store *st, size_t len, uint64_t off);
	int (*trim)(struct store *st, size_t len, uint64_t off);
	int (*flush)(struct store *st);
	/*
	 * Optional: the bytes [off, off + len) in memory, for replies sent
	 * without a copy (memory, null). NULL when not available.
	 */
	const void *(*peek)(struct store *st, size_t len, uint64_t off);
	/*
	 * Optional: a new store over the same data for one connection,
	 * with state of its own (the Redis layout: its own copy of the block
	 * map, as each 0-Disk connection has), closed by the caller. NULL
	 * here means the store is shared as it is.
	 */
	struct store *(*session)(struct store *st, char *err,
				 size_t errlen);
	void (*close)(struct store *st);
	/* Optional: requests started without waiting (see store_io). */
	const struct store_aio_ops *aio;
};

struct store {
	const struct store_ops *ops;
	uint64_t size;
	/*
	 * Set by the opener (file:PATH,ro, a read-only NBD export) and
	 * copied by layers: writes, zeroes and trims fail with -EROFS here,
	 * before the store sees them, and the shims say so to initiators
	 * (NBD_FLAG_READ_ONLY, MODE SENSE's WP) and refuse them up front.
	 */
	bool read_only;
};

/*
 * Asynchronous requests, for a caller that keeps many in flight from one
 * thread (tcmu-shim's ring loop): submit() starts a request and returns;
 * the store calls its done() later, from reap() only, in the caller's
 * thread, so a store fed by other threads (a plugin's completion
 * callbacks) hands them over and says so through its fd. The data stays
 * in the caller's iovecs until done(): no copy is made that the store
 * does not need. A store offers this in store_ops.aio; the synchronous
 * operations still work on the same store, also while requests are in
 * flight.
 */
enum store_io_op {
	STORE_IO_READ,
	STORE_IO_WRITE,		/* durable before done() with _FUA */
	STORE_IO_FLUSH,
	STORE_IO_ZERO,		/* no data: len bytes read back as 0 */
	STORE_IO_TRIM,
};

#define STORE_IO_FUA		(1u << 0)

struct store_io {
	/* The caller's. */
	uint8_t op;			/* enum store_io_op */
	uint8_t flags;			/* STORE_IO_* */
	uint64_t off, len;
	const struct iovec *iov;	/* READ, WRITE: len bytes in all */
	uint32_t iov_cnt;
	/*
	 * The initiator's SCSI command when the request is exactly one
	 * (tcmu-shim), for a store that takes whole commands; else NULL.
	 * Only valid during submit(): a store keeps a copy.
	 */
	const uint8_t *cdb;
	uint32_t cdb_max;		/* bytes readable at cdb */
	/* 0 or a negative errno, as the synchronous operations return. */
	void (*done)(struct store_io *io, int err);

	/* The store's while the request is its own. */
	struct torus_split split;
	uint8_t stage;
};

struct store_aio_ops {
	/*
	 * Called once, by the thread that will submit and reap: room for
	 * @depth requests in flight. Returns an fd that polls readable
	 * when reap() has work, or a negative errno (then use the
	 * synchronous operations).
	 */
	int (*open)(struct store *st, unsigned int depth);
	/* Take @io; it may wait in the store until commit(). Never fails. */
	void (*submit)(struct store *st, struct store_io *io);
	/* Send what was submitted. */
	void (*commit)(struct store *st);
	/*
	 * Finish what has finished (done() for each), send what is due, and
	 * never wait. Call it when the fd polls readable, and at least every
	 * STORE_AIO_TICK_MS while requests are in flight (the store's
	 * timeouts). Returns how many completed.
	 */
	int (*reap)(struct store *st);
	/* Fail everything in flight with @err (done() for each): stopping. */
	void (*cancel)(struct store *st, int err);
};

#define STORE_AIO_TICK_MS	250

#define REDIS_MAX_SERVERS	64

struct redis_addr {
	char host[256];
	int port;
};

/* The redis store's servers (store_redis.c parses them). */
struct redis_spec {
	int nservers;				/* storage servers */
	struct redis_addr servers[REDIS_MAX_SERVERS];
	/* hold lba:<vdisk>, sector s on meta[s % nmeta]; 0: the servers */
	int nmeta;
	struct redis_addr meta[REDIS_MAX_SERVERS];
};

/*
 * The raw stores (each offered by --store through store.h). size 0 for store_file_open means "take the file's
 * size". Errors are written to err (one line, no prefix).
 */
struct store *store_memory_open(uint64_t size, char *err, size_t errlen);
struct store *store_null_open(uint64_t size, char *err, size_t errlen);
struct store *store_file_open(const char *path, uint64_t size,
			      char *err, size_t errlen);
/*
 * STORE_FILE_DIRECT: open with O_DIRECT (no page cache). The alignment
 * the file system wants is asked at open (statx); I/O that misses it goes
 * through an aligned bounce buffer (read-modify-write for a partial
 * block), so any caller still works, if slower.
 */
#define STORE_FILE_DIRECT	(1u << 0)
/* STORE_FILE_RO: open read-only, never created nor extended (store.read_only). */
#define STORE_FILE_RO		(1u << 1)
struct store *store_file_open_flags(const char *path, uint64_t size,
				    unsigned int flags, char *err,
				    size_t errlen);

struct redis_params {
	const struct redis_spec *spec;
	const char *vdisk;
	uint32_t block_size;
	uint64_t size;
};
struct store *store_redis_open(const struct redis_params *p,
			       char *err, size_t errlen);

/* Layers. They own (and close) the stores they are given. */
struct store *replicate_open(struct store **children, int n,
			     char *err, size_t errlen);
/*
 * raw: the same data as child without the storage shaping above it (or
 * child itself), for reads coreos-torus would not make (see layer_coreos_blocks.c).
 */
struct store *coreos_blocks_open(struct store *child, struct store *raw,
				  uint32_t block_size, char *err,
				  size_t errlen);
struct shaper;
struct store *shaped_open(struct store *child, struct shaper *sh,
			  unsigned int write_factor, char *err,
			  size_t errlen);

static inline int store_pread(struct store *st, void *buf, size_t len,
			      uint64_t off)
{
	return st->ops->pread(st, buf, len, off);
}

static inline int store_pwrite(struct store *st, const void *buf,
			       size_t len, uint64_t off)
{
	if (st->read_only)
		return -EROFS;
	return st->ops->pwrite(st, buf, len, off);
}

static inline int store_zero(struct store *st, size_t len, uint64_t off)
{
	if (st->read_only)
		return -EROFS;
	return st->ops->zero(st, len, off);
}

static inline int store_trim(struct store *st, size_t len, uint64_t off)
{
	if (st->read_only)
		return -EROFS;
	return st->ops->trim(st, len, off);
}

static inline int store_flush(struct store *st)
{
	return st->ops->flush(st);
}

static inline const void *store_peek(struct store *st, size_t len,
				     uint64_t off)
{
	return st->ops->peek ? st->ops->peek(st, len, off) : NULL;
}

/*
 * The store a connection should use: be itself when it is shared, else
 * a new one of its own (see store_ops.session); NULL on failure, with
 * the reason in err.
 */
static inline struct store *store_session(struct store *st, char *err,
					  size_t errlen)
{
	return st->ops->session ? st->ops->session(st, err, errlen) : st;
}

/*
 * Asynchronous requests on @st (see store_aio_ops): its fd, or
 * -EOPNOTSUPP when it has none.
 */
static inline int store_aio_open(struct store *st, unsigned int depth)
{
	return st->ops->aio ? st->ops->aio->open(st, depth) : -EOPNOTSUPP;
}

/* Callers refuse writes to a read-only store before they get here. */
static inline void store_aio_submit(struct store *st,
				    struct store_io *io)
{
	st->ops->aio->submit(st, io);
}

static inline void store_aio_commit(struct store *st)
{
	st->ops->aio->commit(st);
}

static inline int store_aio_reap(struct store *st)
{
	return st->ops->aio->reap(st);
}

static inline void store_aio_cancel(struct store *st, int err)
{
	st->ops->aio->cancel(st, err);
}

static inline void store_close(struct store *st)
{
	if (st)
		st->ops->close(st);
}

#endif /* TORUS_STORAGE_STORE_OPS_H */
