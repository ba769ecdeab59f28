// SPDX-License-Identifier: GPL-2.0-only
/*
 * tcmu-shim's command line (shims/tcmu/args.c) on arbitrary argument
 * vectors: every flag, its aliases, --store through the store registry
 * and the stores' own flags, as a user or a script types them.
 *
 * Input: the arguments after the program's name, each ended by a NUL
 * (the last one by the input's end); at most 64.
 */
#include <getopt.h>
#include <string.h>

#include "fuzz.h"
#include "shim.h"

#define MAX_ARGS	64

static void check_config(const struct shim_config *cfg)
{
	const struct store_spec *st = &cfg->store;

	FUZZ_CHECK(!cfg->socket_path != !cfg->uio_path);
	if (cfg->socket_path)
		FUZZ_CHECK(cfg->socket_path[0] &&
			   strlen(cfg->socket_path) < 108);
	FUZZ_CHECK(cfg->block_size == 512 || cfg->block_size == 4096);
	FUZZ_CHECK(cfg->max_command_data >= 512 &&
		   cfg->max_command_data <= (256u << 20) &&
		   !(cfg->max_command_data % cfg->block_size));
	FUZZ_CHECK(!(cfg->size % cfg->block_size));
	FUZZ_CHECK(st->type && st->priv && st->arg);
	if (store_has(st, STORE_NEEDS_SIZE))
		FUZZ_CHECK(cfg->size);
	if (store_has(st, STORE_OWN_SIZE))
		FUZZ_CHECK(!cfg->size);
	FUZZ_CHECK(cfg->timeout_s <= 86400);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct shim_config cfg;
	static FILE *null;
	char *argv[MAX_ARGS + 2];
	const uint8_t *p = data, *end = data + size, *nul;
	int argc = 0, ret, i;

	/* Usage errors and --help go nowhere; sanitizers write to fd 2. */
	if (!null)
		null = fopen("/dev/null", "w");
	stdout = stderr = null;

	argv[argc++] = strdup("tcmu-shim");
	while (p < end && argc <= MAX_ARGS) {
		nul = memchr(p, 0, end - p);
		if (!nul)
			nul = end;
		/* each its own exact-size allocation, for ASan */
		argv[argc] = malloc(nul - p + 1);
		memcpy(argv[argc], p, nul - p);
		argv[argc++][nul - p] = 0;
		p = nul + 1;
	}
	argv[argc] = NULL;

	optind = 0;		/* getopt starts over */
	ret = args_parse(argc, argv, &cfg);
	FUZZ_CHECK(ret >= -1 && ret <= 1);
	if (!ret)
		check_config(&cfg);
	args_free(&cfg);

	for (i = 0; i < argc; i++)
		free(argv[i]);
	return 0;
}
