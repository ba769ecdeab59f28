// SPDX-License-Identifier: GPL-2.0-only
/*
 * The registry of stores (store.h): the one list, and parsing, flags,
 * opening and --help through it. A new store: its file with its struct
 * store_type store_NAME, and one line in STORES. It lives over every
 * store, storage/'s and the bridges', so that it is the only file naming
 * them all.
 */
#include <stdlib.h>
#include <string.h>

#include "store.h"

/* Every store, in --help's order. */
#define STORES(X)	\
	X(memory)	\
	X(null)		\
	X(file)		\
	X(redis)	\
	X(nbd)		\
	X(runner)

#define STORE_DECLARE(name)	extern const struct store_type store_##name;
#define STORE_ENTRY(name)	&store_##name,

STORES(STORE_DECLARE)

const struct store_type *const store_types[] = {
	STORES(STORE_ENTRY)
	NULL,
};

/* The help's columns: the store's syntax, then its description. */
#define HELP_INDENT	10
#define HELP_COLUMN	30

const char *store_usages(void)
{
	static char buf[512];
	size_t n = 0;
	int i;

	if (buf[0])
		return buf;
	for (i = 0; store_types[i]; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s%s",
			      !i ? "" : store_types[i + 1] ? ", " : " or ",
			      store_types[i]->usage);
	return buf;
}

static const struct store_type *find(const char *arg)
{
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
	int i;

	for (i = 0; store_types[i]; i++)
		if (strlen(store_types[i]->name) == n &&
		    !strncmp(store_types[i]->name, arg, n))
			return store_types[i];
	return NULL;
}

/* A store without a parser takes no argument. */
static int parse_none(const char *arg, char *err, size_t errlen)
{
	if (!arg)
		return 0;
	snprintf(err, errlen, "this store takes no argument (nothing after \":\")");
	return -1;
}

void store_spec_free(struct store_spec *spec)
{
	free(spec->priv);
	memset(spec, 0, sizeof(*spec));
}

int store_parse(struct store_spec *spec, const char *arg, char *err,
		size_t errlen)
{
	const struct store_type *t = find(arg);
	const char *colon = strchr(arg, ':');
	const char *val = colon ? colon + 1 : NULL;
	char why[512];
	void *priv;

	if (!t) {
		snprintf(err, errlen, "--store %s: no such store: use %s",
			 arg, store_usages());
		return -1;
	}
	priv = calloc(1, t->priv_size ? t->priv_size : 1);
	if (!priv) {
		snprintf(err, errlen, "--store %s: out of memory", arg);
		return -1;
	}
	why[0] = '\0';
	if (t->parse ? t->parse(priv, val, why, sizeof(why)) :
	    parse_none(val, why, sizeof(why))) {
		snprintf(err, errlen, "--store %s: %s", arg,
			 why[0] ? why : "bad argument");
		free(priv);
		return -1;
	}
	store_spec_free(spec);
	spec->type = t;
	spec->arg = arg;
	spec->priv = priv;
	return 0;
}

const struct store_type *store_flag_owner(const char *name)
{
	const struct store_flag *f;
	int i;

	for (i = 0; store_types[i]; i++)
		for (f = store_types[i]->store_flags; f && f->name; f++)
			if (!strcmp(f->name, name))
				return store_types[i];
	return NULL;
}

int store_set_flag(struct store_spec *spec, const char *name,
		   const char *value, char *err, size_t errlen)
{
	const struct store_type *t = store_flag_owner(name);
	char why[512];

	if (!t || t != spec->type) {
		snprintf(err, errlen, "--%s is only for --store %s",
			 name, t ? t->usage : "(no store)");
		return -1;
	}
	why[0] = '\0';
	if (t->set_flag(spec->priv, name, value, why, sizeof(why))) {
		snprintf(err, errlen, "--%s %s: %s", name, value,
			 why[0] ? why : "bad value");
		return -1;
	}
	return 0;
}

struct store *store_open(const struct store_spec *spec,
			 const struct store_params *p, char *err,
			 size_t errlen)
{
	return spec->type->open(spec->priv, p, err, errlen);
}

/* Lines of @text, the first after @col - @at spaces, the rest at @col. */
static void help_lines(FILE *f, const char *text, int at, int col)
{
	const char *nl;

	fprintf(f, "%*s", col > at ? col - at : 1, "");
	for (;;) {
		nl = strchr(text, '\n');
		fprintf(f, "%.*s\n", nl ? (int)(nl - text) : (int)strlen(text),
			text);
		if (!nl)
			return;
		text = nl + 1;
		fprintf(f, "%*s", col, "");
	}
}

void store_help(FILE *f)
{
	const struct store_type *t;
	int i, n;

	for (i = 0; store_types[i]; i++) {
		t = store_types[i];
		n = fprintf(f, "%*s%s", HELP_INDENT, "", t->usage);
		if (n >= HELP_COLUMN - 1) {
			fputc('\n', f);
			n = 0;
		}
		help_lines(f, t->help, n, HELP_COLUMN);
	}
}

void store_flags_help(FILE *f)
{
	const struct store_flag *fl;
	const char *last;
	char text[1024];
	int i;

	for (i = 0; store_types[i]; i++) {
		for (fl = store_types[i]->store_flags; fl && fl->name; fl++) {
			fprintf(f, "    --%s %s\n", fl->name, fl->arg);
			last = strrchr(fl->help, '\n');
			last = last ? last + 1 : fl->help;
			/* the default at the end, on a line of its own if long */
			snprintf(text, sizeof(text), "%s%s%s%s%s", fl->help,
				 !fl->dflt ? "" :
				 strlen(last) + strlen(fl->dflt) > 56 ? "\n" : " ",
				 fl->dflt ? "(default: " : "",
				 fl->dflt ? fl->dflt : "", fl->dflt ? ")" : "");
			help_lines(f, text, 0, 8);
		}
	}
}
