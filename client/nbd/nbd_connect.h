/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Opening NBD connections: socket, handshake (proto/nbd/nbd_handshake.c driven
 * over a blocking socket with a timeout), and a polite disconnect. Runs at
 * job start only, never in the I/O path.
 */
#ifndef TORUS_NBD_CONNECT_H
#define TORUS_NBD_CONNECT_H

#include <stddef.h>

#include "nbd_handshake.h"
#include "nbd_uri.h"

#include <stdbool.h>

struct nbd_connect_limits {
	unsigned int timeout_s;		/* connect + handshake; 0: none */
	const volatile bool *stop;	/* when set, give up (may be NULL) */
};

/*
 * Connects to the server in uri and negotiates the export, within one
 * deadline for the whole exchange. Returns the connected (blocking)
 * socket, or -1 with a message naming the server in err.
 */
int nbd_connect_export(const struct nbd_uri *uri,
		       const struct nbd_hs_config *cfg,
		       const struct nbd_connect_limits *lim,
		       struct nbd_export *exp, char *err, size_t errlen);

/* Sends NBD_CMD_DISC, waits briefly for the server to close, closes fd. */
void nbd_disconnect(int fd);

/* "nbd://host:port/export" or "nbd+unix:///export?socket=..." for messages. */
const char *nbd_uri_label(const struct nbd_uri *uri, char *buf, size_t len);

#endif /* TORUS_NBD_CONNECT_H */
