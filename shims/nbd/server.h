/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The listener: accepts connections on TCP or a Unix socket, runs each in
 * its own thread (handshake, then transmit), and on SIGTERM or SIGINT
 * stops accepting, ends every connection, flushes the export and returns.
 */
#ifndef SHIM_SERVER_H
#define SHIM_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "export.h"
#include "shape.h"

struct shim_config;
struct profile;
struct peer_node;

struct server {
	const struct shim_config *cfg;
	const struct profile *prof;
	struct export exp;
	struct shaper shaper;
	int lfd;
	char where[400];		/* unix:PATH or tcp:HOST:PORT, bound */

	pthread_mutex_t lock;
	pthread_cond_t idle;
	struct peer_node *conns;	/* live connections */
	int nconns;
	bool stopping;			/* SIGTERM/SIGINT: closing them all */
	unsigned long nextid;
};

/* Opens the export and the listening socket. */
int server_init(struct server *s, const struct shim_config *cfg,
		char *err, size_t errlen);
/* Serves until SIGTERM/SIGINT (blocked by the caller, read via sigfd). */
int server_run(struct server *s, int sigfd);
void server_fini(struct server *s);

#endif /* SHIM_SERVER_H */
