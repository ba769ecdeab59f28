// SPDX-License-Identifier: GPL-2.0-only
/*
 * The stores on a shim's command line; see shim_store.h.
 */
#include <stdlib.h>
#include <string.h>

#include "shim_cli.h"
#include "shim_store.h"

/* The k-th flag of all the stores' flags, in registry order. */
static const struct store_flag *nth_flag(int k)
{
	const struct store_flag *f;
	int i;

	for (i = 0; store_types[i]; i++)
		for (f = store_types[i]->store_flags; f && f->name; f++)
			if (!k--)
				return f;
	return NULL;
}

void shim_options(struct option out[SHIM_MAX_OPTS],
		  const struct option *base)
{
	const struct store_flag *f;
	int n = 0, k;

	for (; base->name && n < SHIM_MAX_OPTS - 1; base++)
		out[n++] = *base;
	for (k = 0; (f = nth_flag(k)) && n < SHIM_MAX_OPTS - 1; k++)
		out[n++] = (struct option){ f->name, required_argument, NULL,
					    SHIM_STORE_OPT + k };
	out[n] = (struct option){ NULL, 0, NULL, 0 };
}

int shim_store_flag(struct shim_store_flags *sf, int val, const char *value)
{
	const struct store_flag *f = nth_flag(val - SHIM_STORE_OPT);

	if (!f)
		return shim_bad("unknown option%s", "");
	if (sf->n == SHIM_MAX_STORE_FLAGS)
		return shim_bad("more than 16 store flags; the last was --%s",
				f->name);
	sf->name[sf->n] = f->name;
	sf->value[sf->n++] = value;
	return 0;
}

int shim_store_parse(struct store_spec *spec, const char *arg)
{
	char err[1024];

	if (store_parse(spec, arg, err, sizeof(err)))
		return shim_bad("%s", err);
	return 0;
}

int shim_store_apply(struct store_spec *spec,
		     const struct shim_store_flags *sf)
{
	char err[1024];
	int i;

	for (i = 0; i < sf->n; i++)
		if (store_set_flag(spec, sf->name[i], sf->value[i], err,
				   sizeof(err)))
			return shim_bad("%s", err);
	return 0;
}
