// SPDX-License-Identifier: GPL-2.0-only
/*
 * The profiles by name.
 */
#include <string.h>

#include "profile.h"
#include "torus_util.h"

const struct profile *profile_find(const char *name)
{
	static const struct profile *const all[] = {
		&profile_coreos, &profile_zeroos, &profile_standard,
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(all); i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}
