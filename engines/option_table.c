// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine's option table (option_table.h): fio parses engine options
 * into one struct through one table. Each transport's options are written
 * against its own block; at load they are laid out after the common
 * part, their offsets moved there.
 */
#include <stdio.h>
#include <string.h>

#include "fio.h"
#include "optgroup.h"

#include "option_help.h"
#include "option_table.h"
#include "transport.h"

#define MAX_OPTIONS		64	/* common and every transport's, + end */
#define MAX_HELP		1024	/* an option's help with its tail */
#define MAX_TRANSPORTS		8
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

static const struct fio_option common_options[] = {
	{
		.name	= "uri",
		.lname	= "Target URI",
		/* Its help names each transport's uris: set at load. */
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct torus_options, uri),
	},
	{
		.name	= "transport",
		.lname	= "Transport",
		/* Its help and default come from transports.c: set at load. */
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct torus_options, transport),
	},
	{
		.name	= "fua",
		.lname	= "Force unit access",
		.help	= "Set FUA on every write; the server must advertise it",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct torus_options, fua),
		.def	= "0",
	},
	{
		/* Not "timeout": fio takes that name as an alias of runtime. */
		.name	= "request_timeout",
		.lname	= "Request timeout",
		.help	= "Seconds a request (and the connect + handshake) may wait for the server before it fails with ETIMEDOUT and the connection is closed; 0 waits forever",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct torus_options, request_timeout),
		.def	= "30",
		.minval	= 0,
		.maxval	= MAX_REQUEST_TIMEOUT,
	},
	{
		.name	= "timeline",
		.lname	= "Timeline directory",
		.help	= "Directory (made if missing) for per-I/O stamps: each job writes DIR/engine-N.rec, a record of every wire command (N: fio's job number), and DIR/engine-N.json, its phases, and prints the phase table at its end (docs/timeline.md); empty: off",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct torus_options, timeline),
	},
};

/* The common options and every transport's, filled in at load. */
struct fio_option torus_option_table[MAX_OPTIONS];
static struct fio_option *const options = torus_option_table;
/*
 * The table as laid out, with the .posval lists that fio's copy lacks
 * (see torus_option_set()).
 */
static struct fio_option laid_out[MAX_OPTIONS];
/* The transport whose table each option came from (NULL: common). */
static const struct torus_transport *option_owner[MAX_OPTIONS];
/* Each option's help with its default and range, for --enghelp. */
static char option_help[MAX_OPTIONS][MAX_HELP];
/* uri= and transport= name every transport: built from transports.c. */
static char uri_help[MAX_HELP], transport_help[MAX_HELP];
/* Where each transport's block starts in the option struct. */
static size_t opts_offset[MAX_TRANSPORTS];

/*
 * An option two transports both have (conns=) is in fio's table once, as
 * the first transport's: fio finds an option by its name. Before a job
 * runs, its value is copied into the later transport's own block.
 */
struct shared_option {
	unsigned int index;		/* in options[] */
	const struct torus_transport *tp;
	size_t off;			/* in the option struct */
};
static struct shared_option shared[MAX_OPTIONS];
static unsigned int nshared;

/*
 * fio parses engine options into one struct through one table. Each
 * transport's options are written against its own block; lay the blocks
 * out after the common part and move their offsets there.
 */
size_t torus_option_table_build(void)
{
	size_t off = sizeof(struct torus_options), n = 0;
	unsigned int i, k;

	for (k = 0; k < ARRAY_SIZE(common_options); k++) {
		options[n] = common_options[k];
		if (!strcmp(options[n].name, "uri")) {
			snprintf(uri_help, sizeof(uri_help),
				 "Target of torus " TORUS_VERSION ": a uri of one of the transports (%s); without one the transport's embedded server is started, sized to the job",
				 torus_transport_uri_forms_named());
			options[n].help = uri_help;
		}
		if (!strcmp(options[n].name, "transport")) {
			snprintf(transport_help, sizeof(transport_help),
				 "Which transport: one of %s; with a uri, one that serves it (unset: the first listed that does), without one, whose embedded server to start (man libtorus.7)",
				 torus_transport_names());
			options[n].help = transport_help;
			/* The first transport listed (transports.c). */
			options[n].def = torus_transports[0]->name;
		}
		n++;
	}
	for (i = 0; i < torus_ntransports && i < MAX_TRANSPORTS; i++) {
		const struct torus_transport *tp = torus_transports[i];
		const struct fio_option *o;

		off = (off + 7) & ~(size_t)7;
		opts_offset[i] = off;
		for (o = tp->options; o && o->name && n < MAX_OPTIONS - 1; o++) {
			for (k = 0; k < n; k++)
				if (!strcmp(options[k].name, o->name))
					break;
			if (k < n) {
				shared[nshared].index = k;
				shared[nshared].tp = tp;
				shared[nshared++].off = o->off1 + off;
				continue;
			}
			options[n] = *o;
			options[n].off1 += off;
			option_owner[n] = tp;
			n++;
		}
		off += tp->opts_size;
	}
	options[n].name = NULL;
	for (k = 0; k < n; k++) {
		/* Every option is the engine's, in no group of fio's. */
		options[k].category = FIO_OPT_C_ENGINE;
		options[k].group = FIO_OPT_G_INVALID;
		torus_option_help(&options[k], option_help[k], MAX_HELP);
		options[k].help = option_help[k];
		laid_out[k] = options[k];
		/* Else fio refuses a bad value itself, before the callback. */
		if (options[k].type == FIO_OPT_STR && options[k].cb)
			memset(options[k].posval, 0, sizeof(options[k].posval));
	}
	return off;
}

static bool shares_option(const struct torus_transport *tp, unsigned int k)
{
	unsigned int i;

	for (i = 0; i < nshared; i++)
		if (shared[i].tp == tp && shared[i].index == k)
			return true;
	return false;
}

/* The job's value of each shared option, into tp's own block. */
static void copy_shared_options(void *eo, const struct torus_transport *tp)
{
	unsigned int i;

	for (i = 0; i < nshared; i++) {
		const struct fio_option *o = &options[shared[i].index];
		const char *from = (const char *)eo + o->off1;
		char *to = (char *)eo + shared[i].off;

		if (shared[i].tp != tp)
			continue;
		switch (o->type) {
		case FIO_OPT_STR_STORE:
			memcpy(to, from, sizeof(void *));
			break;
		case FIO_OPT_STR_VAL:
			memcpy(to, from, sizeof(unsigned long long));
			break;
		default:
			memcpy(to, from, sizeof(unsigned int));
			break;
		}
	}
}

/*
 * An option of another transport than the job's does nothing: say so,
 * naming the option and its transport, once per job.
 */
static void warn_foreign_options(const void *eo,
				 const struct torus_transport *tp)
{
	unsigned int k;

	for (k = 0; options[k].name; k++) {
		const struct torus_transport *owner = option_owner[k];

		if (!owner || owner == tp || shares_option(tp, k) ||
		    !torus_option_changed(&laid_out[k], eo))
			continue;
		fprintf(stderr,
			"torus: %s is %s option; the %s transport ignores it\n",
			options[k].name, owner->kind, tp->name);
	}
}

const void *torus_option_table_block(void *eo,
				     const struct torus_transport *tp)
{
	unsigned int i;

	warn_foreign_options(eo, tp);
	copy_shared_options(eo, tp);
	for (i = 0; i < torus_ntransports; i++)
		if (torus_transports[i] == tp)
			break;
	return (const char *)eo + opts_offset[i];
}

/* "a (what a is), b (...) or c (...)": an option's valid values. */
static void list_values(const struct fio_option *o, char *buf, size_t len)
{
	size_t used = 0;
	unsigned int i, n = 0;

	while (n < PARSE_MAX_VP && o->posval[n].ival)
		n++;
	buf[0] = '\0';
	for (i = 0; i < n && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%s%s%s%s",
				 i == 0 ? "" : i + 1 < n ? ", " : " or ",
				 o->posval[i].ival,
				 o->posval[i].help ? " (" : "",
				 o->posval[i].help ? o->posval[i].help : "",
				 o->posval[i].help ? ")" : "");
}

int torus_option_set(void *eo, const char *name, const char *value)
{
	const struct fio_option *o = NULL;
	char values[1024];
	size_t len = 0;
	unsigned int i;

	for (i = 0; laid_out[i].name; i++)
		if (!strcmp(laid_out[i].name, name))
			o = &laid_out[i];
	if (!o)
		return 1;
	/* As fio reads a value: up to a ',' or a ':'. */
	if (value)
		len = strcspn(value, ",:");
	for (i = 0; value && i < PARSE_MAX_VP && o->posval[i].ival; i++) {
		if (strlen(o->posval[i].ival) != len ||
		    strncmp(o->posval[i].ival, value, len))
			continue;
		*(unsigned int *)((char *)eo + o->off1) = o->posval[i].oval;
		return 0;
	}
	list_values(o, values, sizeof(values));
	if (value && *value)
		log_err("torus: %s=%s is not a valid value: use %s\n", name,
			value, values);
	else
		log_err("torus: %s needs a value: use %s\n", name, values);
	return 1;
}
