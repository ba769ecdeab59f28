// SPDX-License-Identifier: GPL-2.0-only
/*
 * coreos-torus replication with write level "all": every write, zero, trim and
 * flush goes to each of the R replicas in turn and succeeds only when all
 * of them did. Reads come from the first replica that answers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "store_ops.h"
#include "torus_util.h"

struct replicate {
	struct store st;
	int n;
	struct store *child[];
};

static struct replicate *to_rep(struct store *st)
{
	return container_of(st, struct replicate, st);
}

static int rep_pread(struct store *st, void *buf, size_t len, uint64_t off)
{
	struct replicate *r = to_rep(st);
	int i, ret = -EIO;

	for (i = 0; i < r->n; i++) {
		ret = store_pread(r->child[i], buf, len, off);
		if (!ret)
			return 0;
	}
	return ret;
}

enum rep_op { REP_WRITE, REP_ZERO, REP_TRIM, REP_FLUSH };

/* Write level "all": every replica, and the first error if any failed. */
static int rep_all(struct store *st, enum rep_op op, const void *buf,
		   size_t len, uint64_t off)
{
	struct replicate *r = to_rep(st);
	int i, ret = 0, first = 0;

	for (i = 0; i < r->n; i++) {
		switch (op) {
		case REP_WRITE:
			ret = store_pwrite(r->child[i], buf, len, off);
			break;
		case REP_ZERO:
			ret = store_zero(r->child[i], len, off);
			break;
		case REP_TRIM:
			ret = store_trim(r->child[i], len, off);
			break;
		case REP_FLUSH:
			ret = store_flush(r->child[i]);
			break;
		}
		if (ret && !first)
			first = ret;
	}
	return first;
}

static int rep_pwrite(struct store *st, const void *buf, size_t len,
		      uint64_t off)
{
	return rep_all(st, REP_WRITE, buf, len, off);
}

static int rep_zero(struct store *st, size_t len, uint64_t off)
{
	return rep_all(st, REP_ZERO, NULL, len, off);
}

static int rep_trim(struct store *st, size_t len, uint64_t off)
{
	return rep_all(st, REP_TRIM, NULL, len, off);
}

static int rep_flush(struct store *st)
{
	return rep_all(st, REP_FLUSH, NULL, 0, 0);
}

static void rep_close(struct store *st)
{
	struct replicate *r = to_rep(st);
	int i;

	for (i = 0; i < r->n; i++)
		store_close(r->child[i]);
	free(r);
}

static const struct store_ops replicate_ops = {
	.name = "replicate",
	.pread = rep_pread,
	.pwrite = rep_pwrite,
	.zero = rep_zero,
	.trim = rep_trim,
	.flush = rep_flush,
	.close = rep_close,
};

/* The replicas must all have the same size. */
struct store *replicate_open(struct store **children, int n,
			     char *err, size_t errlen)
{
	struct replicate *r;
	int i;

	r = calloc(1, sizeof(*r) + n * sizeof(r->child[0]));
	if (!r) {
		snprintf(err, errlen, "replication: out of memory");
		goto fail;
	}
	for (i = 0; i < n; i++) {
		if (children[i]->size != children[0]->size) {
			snprintf(err, errlen,
				 "replication: replica %d has %llu bytes, replica 0 has %llu",
				 i, (unsigned long long)children[i]->size,
				 (unsigned long long)children[0]->size);
			free(r);
			goto fail;
		}
		r->child[i] = children[i];
	}
	r->n = n;
	r->st.ops = &replicate_ops;
	r->st.size = children[0]->size;
	r->st.read_only = children[0]->read_only;
	return &r->st;
fail:
	for (i = 0; i < n; i++)
		store_close(children[i]);
	return NULL;
}
