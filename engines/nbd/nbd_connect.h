/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Opening NBD connections: socket, handshake (proto/nbd_handshake.c driven
 * over a blocking socket with a timeout), and a polite disconnect. Runs at
 * job start only, never in the I/O path.
 */
#ifndef TORUS_NBD_CONNECT_H
#define TORUS_NBD_CONNECT_H

#include <stddef.h>

#include "nbd_handshake.h"
#include "nbd_uri.h"

/* Seconds allowed for connect and for each handshake read. */
#define NBD_CONNECT_TIMEOUT	10

/*
 * Connects to the server in uri and negotiates the export. Returns the
 * connected socket, or -1 with a message naming the server in err.
 */
int nbd_connect_export(const struct nbd_uri *uri,
		       const struct nbd_hs_config *cfg, struct nbd_export *exp,
		       char *err, size_t errlen);

/* Sends NBD_CMD_DISC, waits briefly for the server to close, closes fd. */
void nbd_disconnect(int fd);

/* "nbd://host:port/export" or "nbd+unix:///export?socket=..." for messages. */
const char *nbd_uri_label(const struct nbd_uri *uri, char *buf, size_t len);

#endif /* TORUS_NBD_CONNECT_H */
