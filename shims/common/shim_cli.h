/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The shims' command line helpers: numbers and sizes, the usage error,
 * and the start-up steps main() shares (pid file, signals). Parsers are
 * pure functions returning 0 or -1.
 */
#ifndef SHIM_CLI_H
#define SHIM_CLI_H

#include <stdint.h>

/* An unsigned decimal number at the start of @s; @end: the byte after it. */
int parse_number(const char *s, uint64_t *out, const char **end);

/* A plain unsigned decimal number no larger than max. */
int parse_uint(const char *s, uint64_t max, uint64_t *out);

/*
 * A decimal number with an optional suffix from @units, the n-th (from
 * 1) meaning 1024^n: "KMGT" allows K, M, G and T. "KiB" and "KB" are the
 * same as "K".
 */
int parse_size_units(const char *s, const char *units, uint64_t *out);

/*
 * A command line error: "<shim_name>: " @fmt (with @arg) and a line
 * pointing to --help, on stderr. Returns -1, args_parse()'s error.
 */
int shim_bad(const char *fmt, const char *arg);

/* --version: "<shim_name> VERSION" on stdout. Returns 1, as --help. */
int shim_version(void);

/*
 * A deprecated spelling was used: "<shim_name>: @old is deprecated: use
 * @new" on stderr (and go on).
 */
void shim_deprecated(const char *old, const char *new);

/* Write the pid file (once the shim is ready): 0 or -1, logged. */
int write_pidfile(const char *path);

/*
 * Block SIGTERM and SIGINT in this and every thread started after, and
 * ignore SIGPIPE: returns a signalfd that sees the two, or -1 (logged).
 */
int shim_signalfd(void);

#endif /* SHIM_CLI_H */
