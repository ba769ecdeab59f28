// SPDX-License-Identifier: GPL-2.0-only
/*
 * The command line: options, their checks, and --help.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "log.h"
#include "shim.h"
#include "shim_store.h"

#define SUN_PATH_MAX	sizeof(((struct sockaddr_un *)0)->sun_path)

const char shim_name[] = "tcmu-shim";

static const char usage_head[] =
"NAME\n"
"    tcmu-shim - a TCMU handler host: answers SCSI from a TCMU command ring\n"
"    like a disk, over any of the stores nbd-shim offers\n"
"\n"
"SYNOPSIS\n"
"    tcmu-shim (--listen unix:PATH | --uio /dev/uioN) [--store STORE]\n"
"              [--redis-meta HOST:PORT[,...]] [--vdisk NAME] [--plugin-dir DIR]\n"
"              [--size SIZE] [--block-size 512|4096] [--max-command-data SIZE]\n"
"              [--pidfile FILE] [--log FILE] [--timeout SECONDS]\n"
"              [--timeline DIR] [-v] [--version] [--help]\n"
"\n"
"DESCRIPTION\n"
"    Consumes TCMU command rings (the shared region of the kernel's\n"
"    target_core_user) and answers every SCSI command in them as a direct\n"
"    access block device: INQUIRY and its VPD pages, READ CAPACITY, MODE\n"
"    SENSE, READ and WRITE, SYNCHRONIZE CACHE, UNMAP, WRITE SAME(16),\n"
"    REPORT SUPPORTED OPERATION CODES.\n"
"\n"
"    With --listen, any number of clients (the fio engine's jobs) attach a\n"
"    ring each over a Unix socket (a memfd region and two eventfds); each\n"
"    ring has a thread, and closing the socket detaches it. With --uio, it\n"
"    serves the one ring of a kernel's user backstore (LIO, tcm-user).\n"
"\n"
"    It prints \"tcmu-shim: listening on ...\" (or \"serving ...\") when\n"
"    ready, and exits 0 after a clean shutdown on SIGTERM or SIGINT.\n"
"\n"
"OPTIONS\n"
"    --listen unix:PATH\n"
"        Listen on the Unix socket PATH for rings to attach.\n"
"    --socket PATH\n"
"        An alias of --listen unix:PATH.\n"
"    --uio /dev/uioN\n"
"        Serve the kernel's ring behind the UIO device (its map 0).\n"
"    --store STORE\n"
"        Where data lives, the same stores as nbd-shim's:\n";

static const char usage_store_tail[] =
"        (default: memory)\n";

static const char usage_tail[] =
"    --backend STORE (old spelling)\n        Warns, then does what --store does.\n"
"    --size SIZE\n"
"        The device's size, with an optional K, M, G, T suffix (powers of\n"
"        1024); a multiple of the block size. Required by memory, null\n"
"        and redis; not allowed with nbd (the export's size).\n"
"    --block-size 512|4096\n"
"        The logical block size, the kernel's user backstore default\n"
"        (default: 512)\n"
"    --max-command-data SIZE\n"
"        The most one READ or WRITE command may move; a multiple of the\n"
"        block size. The Block Limits VPD page offers 128 blocks, or\n"
"        fewer when this is less, as maximum and optimal transfer (as\n"
"        tcmu-runner does): what an initiator behind a kernel sends. Not\n"
"        the engine's max_transfer, the size it splits requests at\n"
"        (default: 8M)\n"
"    --max-transfer SIZE\n"
"        Deprecated alias of --max-command-data (warns).\n"
"    --pidfile FILE\n"
"        Write the process id to FILE once ready; removed on exit.\n"
"    --log FILE\n"
"        Append log lines to FILE instead of stderr.\n"
"    --timeout SECONDS\n"
"        How long an attaching client and the nbd store's connection may\n"
"        take; 0: no limit (default: 30)\n"
"    --timeline DIR\n"
"        Write a record of every command (its cmd_id, the bytes it\n"
"        addresses and the times it was picked, started, stored and\n"
"        completed) to DIR/tcmu-shim-PID-N.rec, one file per ring N\n"
"        (uioN: N); DIR is made if missing. scripts/compare --timeline\n"
"        joins them with the engine's (docs/timeline.md)\n"
"    -v, --verbose\n"
"        Log every attach, detach and command.\n"
"    --version\n"
"        Print \"tcmu-shim VERSION\" and exit.\n"
"    --help\n"
"        Show this text.\n"
"\n"
"EXAMPLES\n"
"    tcmu-shim --listen unix:/tmp/tcmu.sock --size 1G\n"
"    tcmu-shim --listen unix:/tmp/tcmu.sock --store file:/var/tmp/disk.img,direct\n"
"    tcmu-shim --uio /dev/uio0 --store nbd:nbd://127.0.0.1:10809\n"
"    tcmu-shim --uio /dev/uio0 --store runner:qcow:/var/tmp/disk.qcow2\n";

static void usage(void)
{
	fputs(usage_head, stdout);
	store_help(stdout);
	fputs(usage_store_tail, stdout);
	store_flags_help(stdout);
	fputs(usage_tail, stdout);
}

enum {
	OPT_LISTEN = 256, OPT_SOCKET, OPT_UIO, OPT_STORE, OPT_OLD_BACKEND, OPT_SIZE,
	OPT_BLOCK_SIZE, OPT_MAX_COMMAND_DATA, OPT_MAX_TRANSFER, OPT_PIDFILE,
	OPT_LOG, OPT_TIMEOUT, OPT_TIMELINE, OPT_VERSION, OPT_HELP,
};

static const struct option base_options[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "uio", required_argument, NULL, OPT_UIO },
	{ "store", required_argument, NULL, OPT_STORE },
	{ "backend", required_argument, NULL, OPT_OLD_BACKEND },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "block-size", required_argument, NULL, OPT_BLOCK_SIZE },
	{ "max-command-data", required_argument, NULL, OPT_MAX_COMMAND_DATA },
	{ "max-transfer", required_argument, NULL, OPT_MAX_TRANSFER },
	{ "pidfile", required_argument, NULL, OPT_PIDFILE },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "timeline", required_argument, NULL, OPT_TIMELINE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* Checks that need every option. */
static int args_check(struct shim_config *cfg)
{
	const struct store_spec *st = &cfg->store;

	if (!cfg->socket_path && !cfg->uio_path)
		return shim_bad("give --listen unix:PATH (rings attached by the engine) or --uio /dev/uioN (a kernel's ring)%s",
				"");
	if (cfg->socket_path && cfg->uio_path)
		return shim_bad("--listen and --uio exclude each other: one ring source per process%s",
				"");
	if (!cfg->size && store_has(st, STORE_NEEDS_SIZE))
		return shim_bad("--size is required with the %s store",
				st->type->name);
	if (cfg->size && store_has(st, STORE_OWN_SIZE))
		return shim_bad("--size does not apply to --store %s: the export's size is the device's",
				st->arg);
	if (cfg->size % cfg->block_size)
		return shim_bad("--size must be a multiple of --block-size (%s bytes)",
				cfg->block_size == 512 ? "512" : "4096");
	if (cfg->max_command_data % cfg->block_size)
		return shim_bad("--max-command-data must be a multiple of --block-size (%s bytes)",
				cfg->block_size == 512 ? "512" : "4096");
	return 0;
}

/* --listen unix:PATH, --socket PATH */
static int set_socket(struct shim_config *cfg, const char *flag,
		      const char *path)
{
	if (!*path || strlen(path) >= SUN_PATH_MAX)
		return shim_bad(flag, path);
	cfg->socket_path = path;
	return 0;
}

int args_parse(int argc, char **argv, struct shim_config *cfg)
{
	static struct option options[SHIM_MAX_OPTS];
	struct shim_store_flags sf = { 0 };
	uint64_t v;
	int opt;

	memset(cfg, 0, sizeof(*cfg));
	if (shim_store_parse(&cfg->store, "memory"))
		return -1;
	cfg->block_size = 512;
	cfg->max_command_data = 8u << 20;
	cfg->timeout_s = 30;
	shim_options(options, base_options);

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "v", options, NULL)) != -1) {
		switch (opt) {
		case OPT_LISTEN:
			if (strncmp(optarg, "unix:", 5))
				return shim_bad("--listen %s: use unix:PATH (tcmu-shim takes rings over a Unix socket only)",
						optarg);
			if (set_socket(cfg, "--listen unix:%s: use a path shorter than 108 bytes",
				       optarg + 5))
				return -1;
			break;
		case OPT_SOCKET:
			if (set_socket(cfg, "--socket %s: use a path shorter than 108 bytes",
				       optarg))
				return -1;
			break;
		case OPT_UIO:
			if (!strstr(optarg, "uio"))
				return shim_bad("--uio %s: use the UIO device of a tcm-user backstore, /dev/uioN",
						optarg);
			cfg->uio_path = optarg;
			break;
		case OPT_OLD_BACKEND:
			shim_deprecated("--backend", "--store");
			/* fall through */
		case OPT_STORE:
			if (shim_store_parse(&cfg->store, optarg))
				return -1;
			break;
		case OPT_SIZE:
			if (parse_size_units(optarg, "KMGT", &cfg->size) ||
			    !cfg->size)
				return shim_bad("--size %s: use a number of bytes with an optional K, M, G or T suffix",
						optarg);
			break;
		case OPT_BLOCK_SIZE:
			if (parse_size_units(optarg, "KMGT", &v) ||
			    (v != 512 && v != 4096))
				return shim_bad("--block-size %s: use 512 or 4096",
						optarg);
			cfg->block_size = v;
			break;
		case OPT_MAX_TRANSFER:
			shim_deprecated("--max-transfer",
					"--max-command-data (the engine's max_transfer is another setting: its split size)");
			/* fall through */
		case OPT_MAX_COMMAND_DATA:
			if (parse_size_units(optarg, "KMGT", &v) ||
			    v < 512 || v > (256u << 20))
				return shim_bad("--max-command-data %s: use 512 to 256M (a multiple of the block size)",
						optarg);
			cfg->max_command_data = v;
			break;
		case OPT_PIDFILE:
			cfg->pidfile = optarg;
			break;
		case OPT_LOG:
			cfg->log = optarg;
			break;
		case OPT_TIMEOUT:
			if (parse_uint(optarg, 86400, &v))
				return shim_bad("--timeout %s: use seconds from 0 (no limit) to 86400",
						optarg);
			cfg->timeout_s = v;
			break;
		case OPT_TIMELINE:
			cfg->timeline = optarg;
			break;
		case 'v':
			cfg->verbose++;
			break;
		case OPT_VERSION:
			return shim_version();
		case OPT_HELP:
			usage();
			return 1;
		default:
			if (opt >= SHIM_STORE_OPT) {
				if (shim_store_flag(&sf, opt, optarg))
					return -1;
				break;
			}
			return shim_bad("unknown option or missing value: %s",
					argv[optind - 1]);
		}
	}
	if (optind < argc)
		return shim_bad("unexpected argument: %s", argv[optind]);
	/* the stores' flags may come before --store */
	if (shim_store_apply(&cfg->store, &sf))
		return -1;
	return args_check(cfg);
}

void args_free(struct shim_config *cfg)
{
	store_spec_free(&cfg->store);
}
