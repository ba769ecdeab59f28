/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Timeline records: one fixed-size record per I/O, stamped on
 * CLOCK_MONOTONIC, written by the engine (one file per fio job) and by
 * the shims (one file per connection or ring), and joined afterwards by
 * scripts/timelinelib.py. The file says who wrote it and what each stamp
 * means, so that the reader needs no table of its own.
 *
 * File: struct tl_header, then struct tl_disk until the end (version 2;
 * version 1 wrote struct tl_rec itself, 64 bytes, and is still read). Host
 * byte order (the writer and the reader share a machine and its clock).
 *
 * No allocation per I/O: tl_next() hands out a record to fill in, packed
 * into the next slot of a buffer made at open when the next is asked for
 * (or at close), written out with one write() when the buffer fills.
 * A writer belongs to one thread. Summaries are made from the file
 * afterwards (tl_read), not while the I/O runs.
 */
#ifndef TORUS_TIMELINE_REC_H
#define TORUS_TIMELINE_REC_H

#include <stddef.h>
#include <stdint.h>

#define TL_MAGIC	"TORUSTL1"
#define TL_VERSION	2
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
	uint32_t rec_size;		/* sizeof(struct tl_disk) */
	uint32_t nr_stamps;		/* stamps used in each record's t[] */
	uint32_t pid;
	char source[TL_NAME_LEN];	/* "engine-nbd", "nbd-shim", ... */
	char key[TL_NAME_LEN];		/* what tl_rec.key is: "nbd-cookie" */
	char stamps[TL_STAMPS][TL_NAME_LEN];	/* t[i]'s name */
	char pad[512 - 8 - 4 * 4 - TL_NAME_LEN * (2 + TL_STAMPS)];
};

/* A record as its writer fills it in and tl_read() hands it back. */
struct tl_rec {
	uint64_t key;			/* NBD cookie, TCMU cmd_id */
	uint64_t offset;		/* in bytes */
	uint32_t len;			/* in bytes */
	uint16_t op;			/* enum tl_op */
	uint16_t stream;		/* connection or ring, as the writer counts */
	uint64_t t[TL_STAMPS];		/* CLOCK_MONOTONIC ns; 0: not taken */
};

/* A stamp not taken, in tl_disk.dt[]. */
#define TL_DT_NONE	INT32_MIN
/* The unit of dt[i] when bit i of tl_disk.coarse is set: 1024 ns. */
#define TL_COARSE_SHIFT	10

/*
 * A record in the file, 48 bytes: the stamps as the first and the others'
 * distance from it in ns (an I/O's stamps lie within 2.1 s of each other,
 * but for a stuck one: its distances, further, in units of 1024 ns).
 */
struct tl_disk {
	uint64_t key;
	uint64_t offset;
	uint32_t len;
	uint8_t op;
	uint8_t coarse;			/* bit i: dt[i] in 1024 ns */
	uint16_t stream;
	uint64_t t0;			/* t[0] */
	int32_t dt[TL_STAMPS - 1];	/* t[i + 1] - t[0]; TL_DT_NONE: 0 */
};

struct tl_writer;

/*
 * Creates path (replacing a file there) and writes its header. NULL with
 * a message naming the file and the cause in err.
 */
struct tl_writer *tl_open(const char *path, const char *source,
			  const char *key, const char *const *stamps,
			  unsigned int nr_stamps, char *err, size_t errlen);

/*
 * The next record, zeroed: fill it in before the next call (or tl_close),
 * which packs it; it is written out later.
 */
struct tl_rec *tl_next(struct tl_writer *w);

/* Records written, and the first write error seen (0 or -errno). */
uint64_t tl_count(const struct tl_writer *w);
int tl_error(const struct tl_writer *w);

/* Writes what is buffered and closes: 0 or -errno (message in err). */
int tl_close(struct tl_writer *w, char *err, size_t errlen);

/*
 * Calls fn on each record of the file at path, in order, through one
 * buffer of its own (of either version). The number of records, or -errno
 * (-EPROTO: not a record file of version 1 or 2) with a message naming
 * the file in err.
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
