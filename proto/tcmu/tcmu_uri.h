/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The TCMU transport's URI: tcmu+unix:///?socket=PATH, a handler host
 * listening on a Unix socket (shims/tcmu). No I/O.
 */
#ifndef TORUS_TCMU_URI_H
#define TORUS_TCMU_URI_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/un.h>

#define TCMU_URI_SCHEME		"tcmu+unix://"

struct tcmu_uri {
	char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
	/* Parts parsed but ignored (unknown query parameters). */
	char warning[256];
};

/* Does uri use this transport's scheme (whatever else is wrong with it)? */
bool tcmu_uri_is_tcmu(const char *uri);

/*
 * Parses uri into *out. On failure returns -1 with a message naming the
 * problem and the expected form in err.
 */
int tcmu_uri_parse(const char *uri, struct tcmu_uri *out, char *err,
		   size_t errlen);

#endif /* TORUS_TCMU_URI_H */
