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

static int parse_port(const char *s, int *port)
{
	uint64_t v;

	if (parse_uint(s, 65535, &v))
		return -1;
	*port = v;
	return 0;
}

/* HOST:PORT with HOST possibly [IPV6]; port optional when dflt >= 0. */
static int split_hostport(const char *s, char *host, size_t hostlen,
			  int *port, int dflt)
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
		return split_hostport(s + 4, out->host, sizeof(out->host),
				      &out->port, -1);
	return -1;
}

int parse_hostport(const char *s, struct redis_addr *out)
{
	return split_hostport(s, out->host, sizeof(out->host), &out->port,
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

int parse_backend(const char *s, struct backend_spec *out)
{
	memset(out, 0, sizeof(*out));
	if (!strcmp(s, "memory")) {
		out->kind = BACKEND_MEMORY;
		return 0;
	}
	if (!strcmp(s, "null")) {
		out->kind = BACKEND_NULL;
		return 0;
	}
	if (!strncmp(s, "file:", 5)) {
		if (!s[5] || strlen(s + 5) >= sizeof(out->path))
			return -1;
		out->kind = BACKEND_FILE;
		strcpy(out->path, s + 5);
		return 0;
	}
	if (strncmp(s, "redis:", 6))
		return -1;
	out->kind = BACKEND_REDIS;
	return parse_hostport_list(s + 6, out->servers, REDIS_MAX_SERVERS,
				   &out->nservers);
}
