// SPDX-License-Identifier: GPL-2.0-only
/*
 * The memory store: an anonymous mapping of --size bytes
 * (backend_memory.c).
 */
#include "store.h"

static struct backend *memory_store_open(const void *priv,
					 const struct store_params *p,
					 char *err, size_t errlen)
{
	return backend_memory_open(p->size, err, errlen);
}

const struct store_type store_memory = {
	.name = "memory",
	.usage = "memory",
	.help = "an anonymous mapping (needs --size)",
	.flags = STORE_NEEDS_SIZE | STORE_TRIM_ZEROES | STORE_COPIES,
	.parse = store_parse_none,
	.open = memory_store_open,
};
