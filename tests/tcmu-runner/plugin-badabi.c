// SPDX-License-Identifier: GPL-2.0-only
/*
 * A handler plugin built against another struct tcmur_handler than
 * tcmu-runner 1.5.4's (one field more in front, as a future version might
 * add): the host must refuse it as an ABI mismatch, not call into it.
 */
#include <stdbool.h>
#include <stddef.h>

struct other_handler {
	unsigned long abi_version;
	const char *name;
	const char *subtype;
	const char *cfg_desc;
	void *opaque;
	void *fns[32];
};

static struct other_handler h = {
	.abi_version = 2,
	.name = "a handler of another layout",
	.subtype = "badabi",
};

int tcmur_register_handler(void *handler);

int handler_init(void)
{
	return tcmur_register_handler(&h);
}
