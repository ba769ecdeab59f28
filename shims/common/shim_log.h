/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The shims' messages: every line prefixed "<shim_name>: ", to stderr or
 * the file shim_log_open() names. Debug lines only appear when
 * shim_verbose is set (--verbose, -v).
 */
#ifndef SHIM_LOG_H
#define SHIM_LOG_H

/* The program's name, prefixing every message: each shim defines it. */
extern const char shim_name[];

extern int shim_verbose;

/* Send every line to @path (appended) from now on: 0 or -errno. */
int shim_log_open(const char *path);

void shim_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shim_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shim_debug_line(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* The arguments are not evaluated unless verbose: free on hot paths. */
#define shim_debug(...)					\
	do {						\
		if (shim_verbose)			\
			shim_debug_line(__VA_ARGS__);	\
	} while (0)

#endif /* SHIM_LOG_H */
