// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shims' timeline record files; see shim_timeline.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shim_cli.h"
#include "shim_log.h"
#include "shim_timeline.h"

const char *shim_timeline_dir;

int shim_timeline_arg(const char *dir)
{
	char err[512];

	/* tl_dir()'s messages start "timeline: ", the option's name */
	if (tl_dir(dir, err, sizeof(err)))
		return shim_bad("--%s", err);
	if (access(dir, W_OK | X_OK)) {
		snprintf(err, sizeof(err),
			 "--timeline %s: cannot make files there: %s (give a directory the shim may write in)",
			 dir, strerror(errno));
		return shim_bad("%s", err);
	}
	shim_timeline_dir = dir;
	return 0;
}

struct tl_writer *shim_timeline_open(unsigned long n, const char *key,
				     const char *const *stamps,
				     unsigned int nr_stamps)
{
	struct tl_writer *w;
	char path[4096], err[4200];

	if (!shim_timeline_dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s-%d-%lu.rec", shim_timeline_dir,
		 shim_name, (int)getpid(), n);
	w = tl_open(path, shim_name, key, stamps, nr_stamps, err, sizeof(err));
	if (!w)
		shim_err("%s; serving on without its records", err);
	return w;
}

void shim_timeline_close(struct tl_writer *w)
{
	char err[512];

	if (w && tl_close(w, err, sizeof(err)))
		shim_err("%s", err);
}
