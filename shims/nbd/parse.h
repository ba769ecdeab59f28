/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Parsers for command line values: sizes, rates, listen and server
 * addresses (parse_uint(): shim_cli.h). Pure functions returning 0 or -1, tested by
 * tests/shims/test_parse.c.
 */
#ifndef SHIM_PARSE_H
#define SHIM_PARSE_H

#include <stdint.h>

#include "backend.h"
#include "config.h"
#include "shim_cli.h"

/* A decimal number with an optional K, M, G, T or P suffix (powers of
 * 1024; "KiB" and "KB" are the same as "K"). */
int parse_size(const char *s, uint64_t *out);

/*
 * Bytes per second, decimal: "125000000", "125M" (10^6 bytes), "1G",
 * or bits with "bit": "1gbit", "100mbit", "10kbit".
 */
int parse_rate(const char *s, uint64_t *out);

/* unix:PATH, tcp:HOST:PORT or tcp:[IPV6]:PORT. */
int parse_listen(const char *s, struct listen_addr *out);

/* HOST:PORT or HOST (port 6379). */
int parse_hostport(const char *s, struct redis_addr *out);

/* HOST:PORT[,HOST:PORT...] (ports default to 6379), at most max. */
int parse_hostport_list(const char *s, struct redis_addr *out, int max,
			int *n);

/* memory, null, file:PATH or redis:HOST:PORT[,HOST:PORT...]. */
int parse_backend(const char *s, struct backend_spec *out);

#endif /* SHIM_PARSE_H */
