// SPDX-License-Identifier: GPL-2.0-only
/*
 * Help tails and defaults, read from the option table (option_help.h), so
 * that a default or a range is written once, where fio enforces it.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fio.h"
#include "option_help.h"

/* 65536 as "64k", 8388608 as "8M": the largest unit that divides it. */
static void format_size(unsigned long long v, char *buf, size_t len)
{
	static const char units[] = "kMGT";
	int u = -1;

	while (v && !(v % 1024) && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu", v);
	else
		snprintf(buf, len, "%llu%c", v, units[u]);
}

static bool is_size(const struct fio_option *o)
{
	return o->type == FIO_OPT_STR_VAL;
}

void torus_option_help(const struct fio_option *o, char *buf, size_t len)
{
	char min[32], max[32];

	if (!o->maxval || o->type == FIO_OPT_BOOL) {
		snprintf(buf, len, "%s (default: %s)", o->help,
			 o->def ? o->def : "none");
		return;
	}
	if (is_size(o)) {
		format_size(o->minval, min, sizeof(min));
		format_size(o->maxval, max, sizeof(max));
	} else {
		snprintf(min, sizeof(min), "%d", o->minval);
		snprintf(max, sizeof(max), "%llu", o->maxval);
	}
	snprintf(buf, len, "%s (default: %s; range: %s to %s)", o->help,
		 o->def ? o->def : "none", min, max);
}

/* "64k", "8M", "1G" as fio reads them (kb_base=1024). */
static unsigned long long parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (tolower((unsigned char)*end)) {
	case 't':
		v <<= 10;
		/* fallthrough */
	case 'g':
		v <<= 10;
		/* fallthrough */
	case 'm':
		v <<= 10;
		/* fallthrough */
	case 'k':
		v <<= 10;
		break;
	}
	return v;
}

bool torus_option_changed(const struct fio_option *o, const void *block)
{
	const char *p = (const char *)block + o->off1;
	const char *def = o->def ? o->def : "";
	const char *str;
	unsigned int i;

	switch (o->type) {
	case FIO_OPT_INT:
	case FIO_OPT_BOOL:
		return *(const unsigned int *)p != strtoul(def, NULL, 10);
	case FIO_OPT_STR_VAL:
		return *(const unsigned long long *)p != parse_size(def);
	case FIO_OPT_STR:
		for (i = 0; i < PARSE_MAX_VP && o->posval[i].ival; i++)
			if (!strcmp(o->posval[i].ival, def))
				return *(const unsigned int *)p !=
				       o->posval[i].oval;
		return false;
	case FIO_OPT_STR_STORE:
		str = *(char *const *)p;
		return str && strcmp(str, def);
	default:
		return false;
	}
}
