// SPDX-License-Identifier: GPL-2.0-only
/*
 * NBD URI parsing. No I/O: feeds on strings only.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torus_pct.h"
#include "nbd_uri.h"
#include "nbd_wire.h"

#define URI_FORMS "expected nbd://host[:port]/export or nbd+unix:///export?socket=/path/to.sock"

static int uri_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* The path is "/export" or empty; the export name is the rest, decoded. */
static int parse_export(const char *path, size_t len, struct nbd_uri *u,
			const char *uri, char *err, size_t errlen)
{
	if (len && path[0] == '/') {
		path++;
		len--;
	}
	if (pct_decode(u->export_name, sizeof(u->export_name), path, len))
		return uri_err(err, errlen,
			       "bad export name in uri '%s': invalid percent-encoding or longer than %d bytes",
			       uri, NBD_URI_EXPORT_MAX);
	return 0;
}

static void add_warning(struct nbd_uri *u, const char *fmt, ...)
{
	size_t used = strlen(u->warning);
	va_list ap;

	if (used && used + 2 < sizeof(u->warning)) {
		strcpy(u->warning + used, "; ");
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(u->warning + used, sizeof(u->warning) - used, fmt, ap);
	va_end(ap);
}

/*
 * The query: socket=PATH for nbd+unix, tls-* refused (no TLS here), any
 * other parameter ignored with a warning that names it.
 */
static int parse_query(const char *query, struct nbd_uri *u, const char *uri,
		       char *err, size_t errlen)
{
	const char *p = query;
	bool have_socket = false;

	while (p && *p) {
		const char *end = strchr(p, '&');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t namelen = eq ? (size_t)(eq - p) : len;

		if (namelen == 6 && !strncmp(p, "socket", 6) && u->unix_socket &&
		    have_socket) {
			add_warning(u, "a second socket= in the uri is ignored");
		} else if (namelen == 6 && !strncmp(p, "socket", 6) &&
			   u->unix_socket) {
			if (!eq || eq + 1 == p + len ||
			    pct_decode(u->socket, sizeof(u->socket), eq + 1,
				       len - 7))
				return uri_err(err, errlen,
					       "bad socket path in uri '%s': empty, invalid percent-encoding or longer than %zu bytes",
					       uri, sizeof(u->socket) - 1);
			have_socket = true;
		} else if (namelen >= 3 && !strncmp(p, "tls", 3)) {
			return uri_err(err, errlen,
				       "uri '%s': TLS parameters are not supported by this engine",
				       uri);
		} else if (len) {
			add_warning(u, "unknown query parameter '%.*s' in the uri is ignored",
				    (int)(namelen > 64 ? 64 : namelen), p);
		}
		p = end ? end + 1 : NULL;
	}
	if (u->unix_socket && !have_socket)
		return uri_err(err, errlen,
			       "uri '%s' has no socket=PATH query; %s", uri,
			       URI_FORMS);
	return 0;
}

static int parse_tcp(const char *rest, struct nbd_uri *u, const char *uri,
		     char *err, size_t errlen)
{
	const char *slash = strchr(rest, '/');
	const char *q = strchr(rest, '?');
	const char *hostend, *authend, *at;
	size_t hostlen;
	char *endp;
	long port;

	authend = slash ? slash : (q ? q : rest + strlen(rest));
	if (q && q < authend)
		authend = q;

	/* user@ names a TLS identity (NBD URI spec): meaningless here. */
	at = memchr(rest, '@', authend - rest);
	if (at) {
		add_warning(u, "the user name '%.*s' in the uri is ignored (it is only used for TLS, which this engine does not speak)",
			    (int)(at - rest > 64 ? 64 : at - rest), rest);
		rest = at + 1;
	}

	if (rest[0] == '[') {
		const char *rb = memchr(rest, ']', authend - rest);

		if (!rb)
			return uri_err(err, errlen,
				       "uri '%s': IPv6 address lacks ']'", uri);
		hostlen = rb - rest - 1;
		if (hostlen >= sizeof(u->host))
			return uri_err(err, errlen, "uri '%s': host too long", uri);
		memcpy(u->host, rest + 1, hostlen);
		u->host[hostlen] = 0;
		hostend = rb + 1;
	} else {
		hostend = memchr(rest, ':', authend - rest);
		if (!hostend)
			hostend = authend;
		hostlen = hostend - rest;
		if (hostlen >= sizeof(u->host))
			return uri_err(err, errlen, "uri '%s': host too long", uri);
		memcpy(u->host, rest, hostlen);
		u->host[hostlen] = 0;
	}
	if (!u->host[0])
		return uri_err(err, errlen, "uri '%s' has no host; %s", uri,
			       URI_FORMS);

	snprintf(u->port, sizeof(u->port), "%d", NBD_DEFAULT_PORT);
	if (hostend < authend) {
		if (*hostend != ':')
			return uri_err(err, errlen, "uri '%s': junk after host",
				       uri);
		port = strtol(hostend + 1, &endp, 10);
		if (endp != authend || endp == hostend + 1 || port < 1 ||
		    port > 65535)
			return uri_err(err, errlen,
				       "uri '%s': port must be a number from 1 to 65535",
				       uri);
		snprintf(u->port, sizeof(u->port), "%ld", port);
	}

	if (q && parse_query(q + 1, u, uri, err, errlen))
		return -1;
	return parse_export(authend, q ? (size_t)(q - authend) : strlen(authend),
			    u, uri, err, errlen);
}

int nbd_uri_parse(const char *uri, struct nbd_uri *u, char *err,
		  size_t errlen)
{
	static const char tcp[] = "nbd://", unx[] = "nbd+unix://";
	const char *rest, *q;

	memset(u, 0, sizeof(*u));
	if (!uri || !*uri)
		return uri_err(err, errlen, "empty uri; %s", URI_FORMS);

	if (!strncmp(uri, "nbds://", 7) || !strncmp(uri, "nbds+unix://", 12))
		return uri_err(err, errlen,
			       "uri '%s' asks for TLS, which the native nbd transport does not speak; use transport=libnbd for TLS (docs/libnbd.md), or nbd:// or nbd+unix:// against a server without TLS",
			       uri);

	if (!strncmp(uri, tcp, sizeof(tcp) - 1))
		return parse_tcp(uri + sizeof(tcp) - 1, u, uri, err, errlen);

	if (strncmp(uri, unx, sizeof(unx) - 1))
		return uri_err(err, errlen, "unsupported uri '%s'; %s", uri,
			       URI_FORMS);

	rest = uri + sizeof(unx) - 1;
	if (*rest != '/' && *rest != '?')
		return uri_err(err, errlen,
			       "uri '%s': nbd+unix takes no host (write three slashes: nbd+unix:///export?socket=PATH)",
			       uri);
	u->unix_socket = true;
	q = strchr(rest, '?');
	if (!q)
		return uri_err(err, errlen,
			       "uri '%s' has no socket=PATH query; %s", uri,
			       URI_FORMS);
	if (parse_export(rest, q - rest, u, uri, err, errlen))
		return -1;
	return parse_query(q + 1, u, uri, err, errlen);
}
