/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Storage behind an export. A backend is a table of operations over a byte
 * range [0, size); layers (replication, torus blocks) are backends over
 * other backends. Every operation returns 0 or a negative errno.
 *
 * Operations may be called from several connection threads at once; a
 * backend that cannot allow that (Redis, torus blocks) locks inside.
 */
#ifndef TORUS_STORAGE_BACKEND_H
#define TORUS_STORAGE_BACKEND_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "torus_split.h"

struct backend;
struct backend_aio_ops;

struct backend_ops {
	const char *name;
	int (*pread)(struct backend *be, void *buf, size_t len, uint64_t off);
	int (*pwrite)(struct backend *be, const void *buf, size_t len,
		      uint64_t off);
	int (*zero)(struct backend *be, size_t len, uint64_t off);
	int (*trim)(struct backend *be, size_t len, uint64_t off);
	int (*flush)(struct backend *be);
	/*
	 * Optional: the bytes [off, off + len) in memory, for replies sent
	 * without a copy (memory, null). NULL when not available.
	 */
	const void *(*peek)(struct backend *be, size_t len, uint64_t off);
	/*
	 * Optional: a new backend over the same data for one connection,
	 * with state of its own (the Redis layout: its own copy of the block
	 * map, as each 0-Disk connection has), closed by the caller. NULL
	 * here means the backend is shared as it is.
	 */
	struct backend *(*session)(struct backend *be, char *err,
				   size_t errlen);
	void (*close)(struct backend *be);
	/* Optional: requests started without waiting (see backend_io). */
	const struct backend_aio_ops *aio;
};

struct backend {
	const struct backend_ops *ops;
	uint64_t size;
};

/*
 * Asynchronous requests, for a caller that keeps many in flight from one
 * thread (tcmu-shim's ring loop): submit() starts a request and returns;
 * the store calls its done() later, from reap() only, in the caller's
 * thread, so a store fed by other threads (a plugin's completion
 * callbacks) hands them over and says so through its fd. The data stays
 * in the caller's iovecs until done(): no copy is made that the store
 * does not need. A store offers this in backend_ops.aio; the synchronous
 * operations still work on the same backend, also while requests are in
 * flight.
 */
enum backend_io_op {
	BACKEND_IO_READ,
	BACKEND_IO_WRITE,		/* durable before done() with _FUA */
	BACKEND_IO_FLUSH,
	BACKEND_IO_ZERO,		/* no data: len bytes read back as 0 */
	BACKEND_IO_TRIM,
};

#define BACKEND_IO_FUA		(1u << 0)

struct backend_io {
	/* The caller's. */
	uint8_t op;			/* enum backend_io_op */
	uint8_t flags;			/* BACKEND_IO_* */
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
	void (*done)(struct backend_io *io, int err);

	/* The store's while the request is its own. */
	struct torus_split split;
	uint8_t stage;
};

struct backend_aio_ops {
	/*
	 * Called once, by the thread that will submit and reap: room for
	 * @depth requests in flight. Returns an fd that polls readable
	 * when reap() has work, or a negative errno (then use the
	 * synchronous operations).
	 */
	int (*open)(struct backend *be, unsigned int depth);
	/* Take @io; it may wait in the store until commit(). Never fails. */
	void (*submit)(struct backend *be, struct backend_io *io);
	/* Send what was submitted. */
	void (*commit)(struct backend *be);
	/*
	 * Finish what has finished (done() for each), send what is due, and
	 * never wait. Call it when the fd polls readable, and at least every
	 * BACKEND_AIO_TICK_MS while requests are in flight (the store's
	 * timeouts). Returns how many completed.
	 */
	int (*reap)(struct backend *be);
	/* Fail everything in flight with @err (done() for each): stopping. */
	void (*cancel)(struct backend *be, int err);
};

#define BACKEND_AIO_TICK_MS	250

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
 * The raw stores (each offered by --backend through store.h). size 0 for backend_file_open means "take the file's
 * size". Errors are written to err (one line, no prefix).
 */
struct backend *backend_memory_open(uint64_t size, char *err, size_t errlen);
struct backend *backend_null_open(uint64_t size, char *err, size_t errlen);
struct backend *backend_file_open(const char *path, uint64_t size,
				  char *err, size_t errlen);
/*
 * BACKEND_FILE_DIRECT: open with O_DIRECT (no page cache). The alignment
 * the file system wants is asked at open (statx); I/O that misses it goes
 * through an aligned bounce buffer (read-modify-write for a partial
 * block), so any caller still works, if slower.
 */
#define BACKEND_FILE_DIRECT	(1u << 0)
struct backend *backend_file_open_flags(const char *path, uint64_t size,
					unsigned int flags, char *err,
					size_t errlen);

struct redis_params {
	const struct redis_spec *spec;
	const char *vdisk;
	uint32_t block_size;
	uint64_t size;
};
struct backend *backend_redis_open(const struct redis_params *p,
				   char *err, size_t errlen);

/* Layers. They own (and close) the backends they are given. */
struct backend *replicate_open(struct backend **children, int n,
			       char *err, size_t errlen);
/*
 * raw: the same data as child without the storage shaping above it (or
 * child itself), for reads torus would not make (see layer_coreos_blocks.c).
 */
struct backend *coreos_blocks_open(struct backend *child, struct backend *raw,
				  uint32_t block_size, char *err,
				  size_t errlen);
struct shaper;
struct backend *shaped_open(struct backend *child, struct shaper *sh,
			    unsigned int write_factor, char *err,
			    size_t errlen);

static inline int backend_pread(struct backend *be, void *buf, size_t len,
				uint64_t off)
{
	return be->ops->pread(be, buf, len, off);
}

static inline int backend_pwrite(struct backend *be, const void *buf,
				 size_t len, uint64_t off)
{
	return be->ops->pwrite(be, buf, len, off);
}

static inline int backend_zero(struct backend *be, size_t len, uint64_t off)
{
	return be->ops->zero(be, len, off);
}

static inline int backend_trim(struct backend *be, size_t len, uint64_t off)
{
	return be->ops->trim(be, len, off);
}

static inline int backend_flush(struct backend *be)
{
	return be->ops->flush(be);
}

static inline const void *backend_peek(struct backend *be, size_t len,
				       uint64_t off)
{
	return be->ops->peek ? be->ops->peek(be, len, off) : NULL;
}

/*
 * The backend a connection should use: be itself when it is shared, else
 * a new one of its own (see backend_ops.session); NULL on failure, with
 * the reason in err.
 */
static inline struct backend *backend_session(struct backend *be, char *err,
					      size_t errlen)
{
	return be->ops->session ? be->ops->session(be, err, errlen) : be;
}

/*
 * Asynchronous requests on @be (see backend_aio_ops): its fd, or
 * -EOPNOTSUPP when it has none.
 */
static inline int backend_aio_open(struct backend *be, unsigned int depth)
{
	return be->ops->aio ? be->ops->aio->open(be, depth) : -EOPNOTSUPP;
}

static inline void backend_aio_submit(struct backend *be,
				      struct backend_io *io)
{
	be->ops->aio->submit(be, io);
}

static inline void backend_aio_commit(struct backend *be)
{
	be->ops->aio->commit(be);
}

static inline int backend_aio_reap(struct backend *be)
{
	return be->ops->aio->reap(be);
}

static inline void backend_aio_cancel(struct backend *be, int err)
{
	be->ops->aio->cancel(be, err);
}

static inline void backend_close(struct backend *be)
{
	if (be)
		be->ops->close(be);
}

#endif /* TORUS_STORAGE_BACKEND_H */
