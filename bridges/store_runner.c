// SPDX-License-Identifier: GPL-2.0-only
/*
 * The runner store: one of tcmu-runner's handler plugins, loaded
 * unmodified (runner/). Its flag: --plugin-dir, where handler_SUBTYPE.so
 * is looked for.
 */
#include <string.h>

#include "protocol_stores.h"
#include "store.h"

struct runner_spec {
	char subtype[256];
	const char *cfg;
	const char *dir;		/* NULL: the package's directory */
};

static int runner_parse(void *priv, const char *arg, char *err,
			size_t errlen)
{
	struct runner_spec *rs = priv;
	const char *colon = arg ? strchr(arg, ':') : NULL;
	size_t n = colon ? (size_t)(colon - arg) : 0;

	if (!n || n >= sizeof(rs->subtype)) {
		snprintf(err, errlen, "use runner:SUBTYPE:CFG (runner:qcow:/path/to/image.qcow2)");
		return -1;
	}
	memcpy(rs->subtype, arg, n);
	rs->cfg = colon + 1;
	return 0;
}

static int runner_set_flag(void *priv, const char *name, const char *value,
			   char *err, size_t errlen)
{
	struct runner_spec *rs = priv;

	rs->dir = value;
	return 0;
}

static struct store *runner_open(const void *priv,
				 const struct store_params *p, char *err,
				 size_t errlen)
{
	const struct runner_spec *rs = priv;

	return runner_store_open(rs->subtype, rs->dir, rs->cfg, p->size,
				 p->sector_size, err, errlen);
}

static const struct store_flag runner_flags[] = {
	{
		.name = "plugin-dir",
		.arg = "DIR",
		.help = "runner: where handler_SUBTYPE.so is looked for; the\n"
			"package's is " TORUS_TCMU_RUNNER_DIR,
		.dflt = "the tcmu-runner package's directory",
	},
	{ NULL },
};

const struct store_type store_runner = {
	.name = "runner",
	.usage = "runner:SUBTYPE:CFG",
	.help = "a tcmu-runner handler plugin (handler_SUBTYPE.so,\n"
		"or a path to one) with the config string CFG",
	.store_flags = runner_flags,
	.priv_size = sizeof(struct runner_spec),
	.parse = runner_parse,
	.set_flag = runner_set_flag,
	.open = runner_open,
	.write_cache = runner_store_write_cache,
};
