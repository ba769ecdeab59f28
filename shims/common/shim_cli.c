// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shims' command line helpers; see shim_cli.h.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "shim_cli.h"
#include "shim_log.h"

int shim_bad(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", shim_name);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s: try --help\n", shim_name);
	return -1;
}

int shim_version(void)
{
	printf("%s %s\n", shim_name, TORUS_VERSION);
	return 1;
}

void shim_deprecated(const char *old, const char *new)
{
	fprintf(stderr, "%s: %s is deprecated: use %s\n", shim_name, old, new);
}

int write_pidfile(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) {
		shim_err("--pidfile %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int shim_signalfd(void)
{
	sigset_t mask;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	fd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (fd < 0)
		shim_err("signalfd: %s", strerror(errno));
	return fd;
}
