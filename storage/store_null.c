// SPDX-License-Identifier: GPL-2.0-only
/*
 * The null store: reads zeroes, drops writes (backend_null.c).
 */
#include "store.h"

static struct backend *null_store_open(const void *priv,
				       const struct store_params *p,
				       char *err, size_t errlen)
{
	return backend_null_open(p->size, err, errlen);
}

const struct store_type store_null = {
	.name = "null",
	.usage = "null",
	.help = "reads zeroes, drops writes (needs --size)",
	.flags = STORE_NEEDS_SIZE | STORE_TRIM_ZEROES | STORE_COPIES,
	.parse = store_parse_none,
	.open = null_store_open,
};
