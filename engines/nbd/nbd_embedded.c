// SPDX-License-Identifier: GPL-2.0-only
/*
 * The embedded default NBD server (see nbd_embedded.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "../embedded.h"
#include "nbd_embedded.h"

#define NBDKIT		"nbdkit"

static int start_server(uint64_t size, char *err, size_t errlen);

static struct embedded server = {
	.what = "nbdkit",
	.scheme = "nbd+unix",
	.who = "the embedded default server",
	.instead = "start a server yourself",
	.start = start_server,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

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
	return embedded_get(&server, size, uri, urilen, err, errlen);
}
