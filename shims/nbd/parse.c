// SPDX-License-Identifier: GPL-2.0-only
/*
 * Command line value parsers; see parse.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse.h"

static int mul_check(uint64_t *v, uint64_t m)
{
	if (m && *v > UINT64_MAX / m)
		return -1;
	*v *= m;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	return parse_size_units(s, "KMGTP", out);
}

int parse_rate(const char *s, uint64_t *out)
{
	const char *end;
	uint64_t v, m = 1;
	bool bits = false;

	if (parse_number(s, &v, &end))
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		m = 1000;
		end++;
		break;
	case 'M':
		m = 1000000;
		end++;
		break;
	case 'G':
		m = 1000000000;
		end++;
		break;
	}
	if (!strcasecmp(end, "bit") || !strcasecmp(end, "bps")) {
		bits = true;
	} else if (*end && strcasecmp(end, "B") && strcasecmp(end, "B/s")) {
		return -1;
	}
	if (mul_check(&v, m))
		return -1;
	if (bits)
		v /= 8;
	if (!v)
		return -1;
	*out = v;
	return 0;
}

int parse_listen(const char *s, struct listen_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (!strncmp(s, "unix:", 5)) {
		s += 5;
		if (!*s || strlen(s) >= sizeof(out->path))
			return -1;
		out->is_unix = true;
		strcpy(out->path, s);
		return 0;
	}
	if (!strncmp(s, "tcp:", 4))
		return hostport_split(s + 4, out->host, sizeof(out->host),
				      &out->port, -1);
	return -1;
}
