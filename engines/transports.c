// SPDX-License-Identifier: GPL-2.0-only
/*
 * Every transport the engine has, in one place (see transport.h). The
 * glue asks here which transport serves a uri or answers to a name.
 */
#include <stdio.h>
#include <string.h>

#include "transport.h"

extern const struct torus_transport torus_nbd_transport;
extern const struct torus_transport torus_tcmu_transport;
extern const struct torus_transport torus_libnbd_transport;

/*
 * The first is the default of transport=. A uri picks the first that
 * serves it: libnbd comes after nbd, so it runs only when named.
 */
const struct torus_transport *const torus_transports[] = {
	&torus_nbd_transport,
	&torus_tcmu_transport,
#ifdef TORUS_HAVE_LIBNBD
	&torus_libnbd_transport,
#endif
};
const unsigned int torus_ntransports =
	sizeof(torus_transports) / sizeof(torus_transports[0]);

const struct torus_transport *torus_transport_for_uri(const char *uri)
{
	unsigned int i;

	for (i = 0; i < torus_ntransports; i++)
		if (torus_transports[i]->handles(uri))
			return torus_transports[i];
	return NULL;
}

const struct torus_transport *torus_transport_named(const char *name)
{
	unsigned int i;

	for (i = 0; i < torus_ntransports; i++)
		if (!strcmp(torus_transports[i]->name, name))
			return torus_transports[i];
	return NULL;
}

/* Joins one string field of every transport, for messages. */
static const char *join(char *buf, size_t len, const char *sep,
			const char *(*field)(const struct torus_transport *))
{
	size_t used = 0;
	unsigned int i;

	buf[0] = 0;
	for (i = 0; i < torus_ntransports && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%s",
				 i ? sep : "", field(torus_transports[i]));
	return buf;
}

static const char *uri_forms(const struct torus_transport *tp)
{
	return tp->uri_forms;
}

static const char *name(const struct torus_transport *tp)
{
	return tp->name;
}

const char *torus_transport_uri_forms(void)
{
	static char buf[512];

	return join(buf, sizeof(buf), " or ", uri_forms);
}

const char *torus_transport_uri_forms_named(void)
{
	static char buf[768];
	size_t used = 0;
	unsigned int i;

	buf[0] = 0;
	for (i = 0; i < torus_ntransports && used < sizeof(buf); i++)
		used += snprintf(buf + used, sizeof(buf) - used, "%s%s: %s",
				 i ? "; " : "", torus_transports[i]->name,
				 torus_transports[i]->uri_forms);
	return buf;
}

const char *torus_transport_names(void)
{
	static char buf[128];

	return join(buf, sizeof(buf), ", ", name);
}
