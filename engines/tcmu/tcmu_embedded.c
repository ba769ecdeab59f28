// SPDX-License-Identifier: GPL-2.0-only
/*
 * The embedded default TCMU handler host (see tcmu_embedded.h).
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../embedded.h"
#include "tcmu_embedded.h"

#define SHIM		"tcmu-shim"
/* Where the build puts it, from the engine's own folder (build/engines). */
#define SHIM_IN_BUILD	"../shims/tcmu/" SHIM

static int start_server(uint64_t size, char *err, size_t errlen);

static struct embedded server = {
	.what = SHIM,
	.scheme = "tcmu+unix",
	.who = "the embedded handler host",
	.instead = "start tcmu-shim yourself",
	.start = start_server,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static void stop_server(void)
{
	embedded_stop(&server);
}

/*
 * The handler host beside this engine in the build tree (libtorus.so is
 * usually a symlink into it), else the one in $PATH.
 */
static int find_shim(char *path, size_t len)
{
	char self[PATH_MAX];
	Dl_info info;
	char *slash;

	if (dladdr((void *)find_shim, &info) && info.dli_fname &&
	    realpath(info.dli_fname, self)) {
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, len, "%s/%s", self, SHIM_IN_BUILD);
			if (!access(path, X_OK))
				return 0;
		}
	}
	if (embedded_in_path(SHIM)) {
		snprintf(path, len, "%s", SHIM);
		return 0;
	}
	return -1;
}

static int start_server(uint64_t size, char *err, size_t errlen)
{
	char prog[PATH_MAX + 64], sizearg[32], hint[2 * PATH_MAX];

	if (find_shim(prog, sizeof(prog))) {
		snprintf(err, errlen,
			 "no uri given, and the TCMU handler host %s (the embedded default target of transport=tcmu) was found neither beside libtorus.so in the build tree (%s) nor in $PATH: build it with scripts/build.sh, or point the engine at a running one with uri=tcmu+unix:///?socket=PATH",
			 SHIM, SHIM_IN_BUILD);
		return -1;
	}
	if (embedded_prepare(&server, "tcmu.sock", err, errlen))
		return -1;
	snprintf(sizearg, sizeof(sizearg), "%" PRIu64, size);
	snprintf(hint, sizeof(hint),
		 "run '%s --socket /tmp/x.sock --store memory --size %s' by hand to see why",
		 prog, sizearg);
	{
		char *const argv[] = {
			prog, "--socket", server.sock, "--pidfile",
			server.pidfile, "--store", "memory", "--size", sizearg,
			NULL,
		};

		if (embedded_start(&server, argv, hint, err, errlen))
			return -1;
	}
	server.size = size;
	atexit(stop_server);
	fprintf(stderr,
		"torus: no uri given: started the embedded default handler host '%s --store memory --size %s' on %s (pid %d)\n",
		SHIM, sizearg, server.sock, (int)server.pid);
	return 0;
}

int tcmu_embedded_get(uint64_t size, char *uri, size_t urilen, char *err,
		      size_t errlen)
{
	return embedded_get(&server, size, uri, urilen, err, errlen);
}
