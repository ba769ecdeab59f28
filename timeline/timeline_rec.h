/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Timeline records: one fixed-size record per I/O, stamped on
 * CLOCK_MONOTONIC, written by the engine (one file per fio job) and by
 * the shims (one file per connection or ring), and joined afterwards by
 * scripts/timelinelib.py. The file says who wrote it and what each stamp
 * means, so that the reader needs no table of its own.
 *
 * File: struct tl_header, then struct tl_rec until the end. Host byte
 * order (the writer and the reader share a machine and its clock).
 *
 * No allocation per I/O: tl_next() hands out the next slot of a buffer
 * made at open, written out with one write() when it fills, and at close.
 * A writer belongs to one thread. Summaries are made from the file
 * afterwards (tl_read), not while the I/O runs.
 */
#ifndef TORUS_TIMELINE_REC_H
#define TORUS_TIMELINE_REC_H

#include <stddef.h>
#include <stdint.h>

#define TL_MAGIC	"TORUSTL1"
#define TL_VERSION	1
#define TL_STAMPS	5
#define TL_NAME_LEN	32

/* What a record's op is, the same for every source. */
enum tl_op {
	TL_OP_READ,
	TL_OP_WRITE,
	TL_OP_TRIM,
	TL_OP_FLUSH,
	TL_OP_OTHER,
};

struct tl_header {
	char magic[8];			/* TL_MAGIC, not NUL-terminated */
	uint32_t version;		/* TL_VERSION */
	uint32_t rec_size;		/* sizeof(struct tl_rec) */
	uint32_t nr_stamps;		/* stamps used in each record's t[] */
	uint32_t pid;
	char source[TL_NAME_LEN];	/* "engine-nbd", "nbd-shim", ... */
	char key[TL_NAME_LEN];		/* what tl_rec.key is: "nbd-cookie" */
	char stamps[TL_STAMPS][TL_NAME_LEN];	/* t[i]'s name */
	char pad[512 - 8 - 4 * 4 - TL_NAME_LEN * (2 + TL_STAMPS)];
};

struct tl_rec {
	uint64_t key;			/* NBD cookie, TCMU cmd_id */
	uint64_t offset;		/* in bytes */
	uint32_t len;			/* in bytes */
	uint16_t op;			/* enum tl_op */
	uint16_t stream;		/* connection or ring, as the writer counts */
	uint64_t t[TL_STAMPS];		/* CLOCK_MONOTONIC ns; 0: not taken */
};

struct tl_writer;

/*
 * Creates path (replacing a file there) and writes its header. NULL with
 * a message naming the file and the cause in err.
 */
struct tl_writer *tl_open(const char *path, const char *source,
			  const char *key, const char *const *stamps,
			  unsigned int nr_stamps, char *err, size_t errlen);

/* The next record, zeroed: fill it in; it is written out later. */
struct tl_rec *tl_next(struct tl_writer *w);

/* Records written, and the first write error seen (0 or -errno). */
uint64_t tl_count(const struct tl_writer *w);
int tl_error(const struct tl_writer *w);

/* Writes what is buffered and closes: 0 or -errno (message in err). */
int tl_close(struct tl_writer *w, char *err, size_t errlen);

/*
 * Calls fn on each record of the file at path, in order, through one
 * buffer of its own. The number of records, or -errno (-EPROTO: not a
 * record file of this version) with a message naming the file in err.
 */
int64_t tl_read(const char *path,
		void (*fn)(void *arg, const struct tl_rec *rec), void *arg,
		char *err, size_t errlen);

/*
 * Makes dir (one level) if it is not there. 0, or -errno with a message
 * naming it and the fix.
 */
int tl_dir(const char *dir, char *err, size_t errlen);

#endif /* TORUS_TIMELINE_REC_H */
