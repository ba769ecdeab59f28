// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shims' number parsers; see shim_cli.h. Nothing else in here: the
 * pure parts of the shims (and their unit tests) link this alone.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shim_cli.h"

int parse_number(const char *s, uint64_t *out, const char **end)
{
	char *e;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	*out = strtoull(s, &e, 10);
	if (errno)
		return -1;
	*end = e;
	return 0;
}

int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	const char *end;

	if (parse_number(s, out, &end) || *end || *out > max)
		return -1;
	return 0;
}

int parse_size_units(const char *s, const char *units, uint64_t *out)
{
	const char *end, *u;
	unsigned int shift = 0;
	uint64_t v;

	if (parse_number(s, &v, &end))
		return -1;
	if (*end) {
		u = strchr(units, toupper((unsigned char)*end));
		if (!u)
			return -1;
		shift = 10 * (u - units + 1);
		end++;
		if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
			end += strlen(end);
		if (*end)
			return -1;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -1;
	*out = v << shift;
	return 0;
}
