// SPDX-License-Identifier: GPL-2.0-only
/*
 * Shaping at the storage (--shape-at storage): every operation on the
 * store below pays the latency and moves its bytes over the shared link
 * before it runs, as the requests of coreos-torus to its peers, or of 0-Disk to
 * its ARDB servers, crossed the network. Writes count write_factor times:
 * coreos-torus sends each block to every replica.
 */
#include <stdio.h>
#include <stdlib.h>

#include "store_ops.h"
#include "shape.h"
#include "torus_util.h"

struct shaped {
	struct store st;
	struct store *child;
	struct shaper *sh;
	unsigned int write_factor;
};

static struct shaped *to_shaped(struct store *st)
{
	return container_of(st, struct shaped, st);
}

static void charge(struct shaped *s, uint64_t bytes)
{
	shaper_wait(shaper_due(s->sh, now_ns(), bytes));
}

static int shaped_pread(struct store *st, void *buf, size_t len,
			uint64_t off)
{
	struct shaped *s = to_shaped(st);

	charge(s, len);
	return store_pread(s->child, buf, len, off);
}

static int shaped_pwrite(struct store *st, const void *buf, size_t len,
			 uint64_t off)
{
	struct shaped *s = to_shaped(st);

	charge(s, (uint64_t)len * s->write_factor);
	return store_pwrite(s->child, buf, len, off);
}

static int shaped_zero(struct store *st, size_t len, uint64_t off)
{
	struct shaped *s = to_shaped(st);

	charge(s, 0);
	return store_zero(s->child, len, off);
}

static int shaped_trim(struct store *st, size_t len, uint64_t off)
{
	struct shaped *s = to_shaped(st);

	charge(s, 0);
	return store_trim(s->child, len, off);
}

static int shaped_flush(struct store *st)
{
	struct shaped *s = to_shaped(st);

	charge(s, 0);
	return store_flush(s->child);
}

/* A connection's own view below is shaped on the same link. */
static struct store *shaped_session(struct store *st, char *err,
				    size_t errlen)
{
	struct shaped *s = to_shaped(st);
	struct store *child = store_session(s->child, err, errlen);

	if (!child || child == s->child)
		return child ? st : NULL;
	return shaped_open(child, s->sh, s->write_factor, err, errlen);
}

static void shaped_close(struct store *st)
{
	struct shaped *s = to_shaped(st);

	store_close(s->child);
	free(s);
}

static const struct store_ops shaped_ops = {
	.name = "shaped",
	.pread = shaped_pread,
	.pwrite = shaped_pwrite,
	.zero = shaped_zero,
	.trim = shaped_trim,
	.flush = shaped_flush,
	.session = shaped_session,
	.close = shaped_close,
};

struct store *shaped_open(struct store *child, struct shaper *sh,
			  unsigned int write_factor, char *err,
			  size_t errlen)
{
	struct shaped *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, errlen, "shaping: out of memory");
		store_close(child);
		return NULL;
	}
	s->child = child;
	s->sh = sh;
	s->write_factor = write_factor;
	s->st.ops = &shaped_ops;
	s->st.size = child->size;
	s->st.read_only = child->read_only;
	return &s->st;
}
