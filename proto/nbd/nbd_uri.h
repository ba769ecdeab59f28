/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * NBD URIs (NetworkBlockDevice/nbd doc/uri.md), the forms this project
 * speaks: nbd://host[:port][/export] and nbd+unix:///[export]?socket=PATH.
 */
#ifndef TORUS_NBD_URI_H
#define TORUS_NBD_URI_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/un.h>

#define NBD_URI_HOST_MAX	256
#define NBD_URI_EXPORT_MAX	4096

struct nbd_uri {
	bool unix_socket;
	char host[NBD_URI_HOST_MAX];		/* TCP: host name or address */
	char port[8];				/* TCP: decimal port */
	char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char export_name[NBD_URI_EXPORT_MAX + 1];
	/* Parts parsed but ignored (user name, unknown query parameters). */
	char warning[512];
};

/*
 * Parses uri into *out. On failure returns -1 and writes a message that
 * names the problem and the expected form into err. On success, a
 * non-empty out->warning says what was ignored, for the caller to print.
 */
int nbd_uri_parse(const char *uri, struct nbd_uri *out, char *err,
		  size_t errlen);

#endif /* TORUS_NBD_URI_H */
