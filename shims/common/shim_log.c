// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shims' messages (see shim_log.h). Each line is formatted into one
 * buffer and written with one call, so that lines from connection and
 * ring threads do not interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "shim_log.h"
#include "storage_log.h"

int shim_verbose;
static int log_fd = STDERR_FILENO;

int shim_log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0)
		return -errno;
	log_fd = fd;
	return 0;
}

static void shim_vlog(const char *fmt, va_list ap)
{
	char line[1024];
	int n;

	n = snprintf(line, sizeof(line), "%s: ", shim_name);
	n += vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (n >= (int)sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(log_fd, line, n) < 0)
		return;
}

void shim_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	shim_vlog(fmt, ap);
	va_end(ap);
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

/* The storage library's (and the stores') errors read like our own. */
static void storage_line(const char *line)
{
	shim_err("%s", line);
}

static void __attribute__((constructor)) route_storage_log(void)
{
	storage_set_log(storage_line);
}
