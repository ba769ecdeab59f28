/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Messages to stderr, every line prefixed "nbd-shim: ". Debug lines only
 * appear with --verbose.
 */
#ifndef SHIM_LOG_H
#define SHIM_LOG_H

extern int shim_verbose;

void shim_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shim_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shim_debug_line(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* The arguments are not evaluated unless --verbose: free on hot paths. */
#define shim_debug(...)					\
	do {						\
		if (shim_verbose)			\
			shim_debug_line(__VA_ARGS__);	\
	} while (0)

#endif /* SHIM_LOG_H */
