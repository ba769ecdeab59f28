// SPDX-License-Identifier: GPL-2.0-only
/*
 * The embedded default NBD server (see nbd_embedded.h).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../embedded.h"
#include "nbd_embedded.h"

#define NBDKIT		"nbdkit"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct embedded server = { .what = "nbdkit" };

static void stop_server(void)
{
	embedded_stop(&server);
}

static int start_server(uint64_t size, char *err, size_t errlen)
{
	char sizearg[64], hint[160];

	if (!embedded_in_path(NBDKIT)) {
		snprintf(err, errlen,
			 "no uri given, and nbdkit (which serves the embedded default target) is not installed: install the Debian package nbdkit (apt-get install nbdkit), or point the engine at a server with uri=nbd://host:port/export");
		return -1;
	}
	if (embedded_prepare(&server, "nbd.sock", err, errlen))
		return -1;
	snprintf(sizearg, sizeof(sizearg), "size=%" PRIu64, size);
	snprintf(hint, sizeof(hint),
		 "run 'nbdkit -U /tmp/x.sock memory %s' by hand to see why",
		 sizearg);
	{
		char *const argv[] = {
			NBDKIT, "--foreground", "--exit-with-parent",
			"-U", server.sock, "--pidfile", server.pidfile,
			"memory", sizearg, NULL,
		};

		if (embedded_start(&server, argv, hint, err, errlen))
			return -1;
	}
	server.size = size;
	atexit(stop_server);
	fprintf(stderr,
		"torus: no uri given: started the embedded default server 'nbdkit memory %s' on %s (pid %d)\n",
		sizearg, server.sock, (int)server.pid);
	return 0;
}

int nbd_embedded_get(uint64_t size, char *uri, size_t urilen, char *err,
			size_t errlen)
{
	int ret = 0;

	pthread_mutex_lock(&lock);
	if (!server.pid)
		ret = start_server(size, err, errlen);
	else if (size > server.size) {
		snprintf(err, errlen,
			 "this job needs %" PRIu64 " bytes but the embedded default server was started with %" PRIu64 "; give every job the same size=, or start a server yourself and pass uri=",
			 size, server.size);
		ret = -1;
	}
	if (!ret)
		snprintf(uri, urilen, "nbd+unix:///?socket=%s", server.sock);
	pthread_mutex_unlock(&lock);
	return ret;
}
