// SPDX-License-Identifier: GPL-2.0-only
/*
 * tcmu+unix:///?socket=PATH (see tcmu_uri.h). The socket path is
 * percent-decoded, as in NBD's URIs.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "torus_pct.h"
#include "tcmu_uri.h"

#define FORM "tcmu+unix:///?socket=/path/to/socket"

bool tcmu_uri_is_tcmu(const char *uri)
{
	return uri && !strncasecmp(uri, "tcmu", 4) &&
	       (uri[4] == ':' || uri[4] == '+');
}

int tcmu_uri_parse(const char *uri, struct tcmu_uri *out, char *err,
		   size_t errlen)
{
	const char *p, *q;
	size_t n = strlen(TCMU_URI_SCHEME);
	int nsock = 0;

	memset(out, 0, sizeof(*out));
	if (strncasecmp(uri, TCMU_URI_SCHEME, n)) {
		snprintf(err, errlen,
			 "uri=%s: the TCMU transport takes a handler host's Unix socket: %s",
			 uri, FORM);
		return -1;
	}
	p = uri + n;
	if (*p != '/' && *p != '?' && *p != '\0') {
		snprintf(err, errlen,
			 "uri=%s: a TCMU uri has no host (the handler host is local, reached by its socket): %s",
			 uri, FORM);
		return -1;
	}
	q = strchr(p, '?');
	if ((q ? (size_t)(q - p) : strlen(p)) > 1) {
		snprintf(err, errlen,
			 "uri=%s: a TCMU uri has no path (one handler host serves one device): %s",
			 uri, FORM);
		return -1;
	}
	while (q && *q) {
		const char *key = q + 1, *end = strchr(key, '&');
		size_t len = end ? (size_t)(end - key) : strlen(key);

		if (len >= 7 && !strncmp(key, "socket=", 7)) {
			if (len == 7) {
				snprintf(err, errlen,
					 "uri=%s: socket= is empty: %s", uri,
					 FORM);
				return -1;
			}
			if (nsock++)
				snprintf(out->warning, sizeof(out->warning),
					 "uri=%s: socket= given twice, the last one is used",
					 uri);
			if (pct_decode(out->socket, sizeof(out->socket), key + 7,
				       len - 7)) {
				snprintf(err, errlen,
					 "uri=%s: the socket path is too long (at most %zu bytes) or has a bad %%-escape",
					 uri, sizeof(out->socket) - 1);
				return -1;
			}
		} else if (len) {
			snprintf(out->warning, sizeof(out->warning),
				 "uri=%s: ignoring unknown parameter '%.*s'",
				 uri, (int)len, key);
		}
		q = end;
	}
	if (!nsock) {
		snprintf(err, errlen, "uri=%s: no socket= parameter: %s", uri,
			 FORM);
		return -1;
	}
	return 0;
}
