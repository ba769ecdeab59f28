// SPDX-License-Identifier: GPL-2.0-only
/* The storage library's error lines (see storage_log.h). */
#include <stdarg.h>
#include <stdio.h>

#include "storage_log.h"

static void to_stderr(const char *line)
{
	fprintf(stderr, "storage: %s\n", line);
}

static void (*log_sink)(const char *line) = to_stderr;

void storage_set_log(void (*sink)(const char *line))
{
	log_sink = sink ? sink : to_stderr;
}

void storage_err(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_sink(line);
}
