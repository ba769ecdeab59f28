/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Messages, every line prefixed "tcmu-shim: ", to stderr or the --log
 * file. Debug lines only appear with -v.
 */
#ifndef TCMU_SHIM_LOG_H
#define TCMU_SHIM_LOG_H

extern int shim_verbose;

/* Send every line to @path (appended) from now on: 0 or -errno. */
int shim_log_open(const char *path);

void shim_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shim_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shim_debug_line(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* The arguments are not evaluated unless -v: free on hot paths. */
#define shim_debug(...)					\
	do {						\
		if (shim_verbose)			\
			shim_debug_line(__VA_ARGS__);	\
	} while (0)

#endif /* TCMU_SHIM_LOG_H */
