// SPDX-License-Identifier: GPL-2.0-only
/*
 * Messages to stderr. Each line is formatted into one buffer and written
 * with one call so that lines from connection threads do not interleave.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "storage_log.h"

int shim_verbose;

static void shim_vlog(const char *fmt, va_list ap)
{
	char line[1024];
	int n;

	n = snprintf(line, sizeof(line), "nbd-shim: ");
	n += vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (n >= (int)sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}

void shim_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	shim_vlog(fmt, ap);
	va_end(ap);
}

/* The storage library's errors read like the shim's own. */
static void storage_line(const char *line)
{
	shim_err("%s", line);
}

static void __attribute__((constructor)) route_storage_log(void)
{
	storage_set_log(storage_line);
}

void shim_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	shim_vlog(fmt, ap);
	va_end(ap);
}

void shim_debug_line(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	shim_vlog(fmt, ap);
	va_end(ap);
}
