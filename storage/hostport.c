// SPDX-License-Identifier: GPL-2.0-only
/*
 * Server address parsers; see hostport.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hostport.h"

static int parse_port(const char *s, int *port)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > 65535)
		return -1;
	*port = v;
	return 0;
}

int hostport_split(const char *s, char *host, size_t hostlen, int *port,
		   int dflt)
{
	const char *colon, *h = s;
	size_t n;

	if (*s == '[') {
		colon = strchr(s, ']');
		if (!colon)
			return -1;
		h = s + 1;
		n = colon - h;
		colon++;
		if (*colon && *colon != ':')
			return -1;
		if (!*colon)
			colon = NULL;
	} else {
		colon = strrchr(s, ':');
		n = colon ? (size_t)(colon - s) : strlen(s);
	}
	if (!n || n >= hostlen)
		return -1;
	memcpy(host, h, n);
	host[n] = '\0';
	if (!colon) {
		if (dflt < 0)
			return -1;
		*port = dflt;
		return 0;
	}
	return parse_port(colon + 1, port);
}

int parse_hostport(const char *s, struct redis_addr *out)
{
	return hostport_split(s, out->host, sizeof(out->host), &out->port,
			      6379);
}

int parse_hostport_list(const char *s, struct redis_addr *out, int max,
			int *n)
{
	char item[300];
	const char *p, *comma;
	size_t len;

	*n = 0;
	for (p = s; ; p = comma + 1) {
		comma = strchr(p, ',');
		len = comma ? (size_t)(comma - p) : strlen(p);
		if (!len || len >= sizeof(item) || *n == max)
			return -1;
		memcpy(item, p, len);
		item[len] = '\0';
		if (parse_hostport(item, &out[(*n)++]))
			return -1;
		if (!comma)
			return 0;
	}
}
