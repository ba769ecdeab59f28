/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Server addresses as users write them: HOST:PORT, [IPV6]:PORT. Pure
 * functions returning 0 or -1, shared by the redis store and nbd-shim's
 * --listen; tested by tests/shims/test_parse.c.
 */
#ifndef TORUS_STORAGE_HOSTPORT_H
#define TORUS_STORAGE_HOSTPORT_H

#include <stddef.h>

#include "store_ops.h"

/* HOST:PORT with HOST possibly [IPV6]; the port may be left out if dflt >= 0. */
int hostport_split(const char *s, char *host, size_t hostlen, int *port,
		   int dflt);

/* HOST:PORT or HOST (port 6379). */
int parse_hostport(const char *s, struct redis_addr *out);

/* HOST:PORT[,HOST:PORT...] (ports default to 6379), at most max. */
int parse_hostport_list(const char *s, struct redis_addr *out, int max,
			int *n);

#endif /* TORUS_STORAGE_HOSTPORT_H */
