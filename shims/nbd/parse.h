/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Parsers for command line values: sizes, rates, listen addresses
 * (parse_uint(): shim_cli.h; server addresses: storage/hostport.h). Pure
 * functions returning 0 or -1, tested by tests/shims/test_parse.c.
 */
#ifndef SHIM_PARSE_H
#define SHIM_PARSE_H

#include <stdint.h>

#include "config.h"
#include "hostport.h"
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

#endif /* SHIM_PARSE_H */
