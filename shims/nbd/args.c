// SPDX-License-Identifier: GPL-2.0-only
/*
 * The command line: options, their checks, and --help.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "torus_bits.h"
#include "parse.h"
#include "profile.h"
#include "shim_cli.h"
#include "shim_log.h"
#include "shim_store.h"

const char shim_name[] = "nbd-shim";

static const char usage_head[] =
"NAME\n"
"    nbd-shim - an NBD server that behaves like CoreOS torus (coreos-torus),\n"
"    ZeroOS 0-Disk or a conformant server\n"
"\n"
"SYNOPSIS\n"
"    nbd-shim --profile coreos|zeroos|standard [--listen unix:PATH|tcp:HOST:PORT]\n"
"             [--export NAME] [--size SIZE] [--store STORE]\n"
"             [--redis-meta HOST:PORT[,...]] [--vdisk NAME] [--plugin-dir DIR]\n"
"             [--replicas R] [--latency-us N] [--bandwidth RATE]\n"
"             [--shape-at WHERE] [--block-size N] [--advertise-trim]\n"
"             [--poll-us N] [--timeline DIR] [--pidfile PATH] [-v]\n"
"             [--version] [--help]\n"
"\n"
"DESCRIPTION\n"
"    Serves one export over NBD with the wire behaviour of the chosen\n"
"    profile, as described in docs/shims.md:\n"
"\n"
"    coreos    coreos-torus, `torusblk nbdserve`: EXPORT_NAME and LIST only\n"
"              (any other option closes the connection), flags 0x0025,\n"
"              always 124 zeroes, one request at a time, one connection\n"
"              per volume, 512 KiB blocks with read-modify-write, R-way\n"
"              replication with write level all.\n"
"    zeroos    zero-os/0-Disk `nbdserver`: NO_ZEROES, no default export\n"
"              (clients must name it), ERR_UNSUP for unknown options,\n"
"              INFO/GO in the pre-standard field order, flags 0x014d, TRIM\n"
"              answers EIO, bad requests drop the connection, one request\n"
"              at a time; optionally the deduped Redis layout, with a copy\n"
"              of the block map per connection.\n"
"    standard  a conformant server (GO with block sizes, structured\n"
"              replies, multi-conn), batched and fast.\n"
"\n"
"    It prints \"nbd-shim: listening on ...\" to stderr when it accepts\n"
"    connections, and exits 0 after a clean shutdown on SIGTERM or SIGINT.\n"
"\n"
"OPTIONS\n"
"    --profile coreos|zeroos|standard\n"
"        The server to behave like. Required. torus is the old spelling of\n"
"        coreos (warns).\n"
"    --listen unix:PATH | tcp:HOST:PORT\n"
"        Where to listen. Port 0 picks a free port; the ready line shows\n"
"        it (default: tcp:127.0.0.1:10809)\n"
"    --socket PATH\n"
"        An alias of --listen unix:PATH, as tcmu-shim spells it.\n"
"    --export NAME\n"
"        The export's name; coreos and zeroos serve it under that name only\n"
"        (default: coreos \"torus\", zeroos \"default\", standard \"\")\n"
"    --size SIZE\n"
"        The export's size, with an optional K, M, G, T suffix (powers of\n"
"        1024). Required unless the store has a size of its own (a file's,\n"
"        an NBD export's). coreos needs a multiple of its block size.\n"
"    --store STORE\n"
"        Where data lives, the same stores as tcmu-shim's:\n";

static const char usage_store_tail[] =
"        With --replicas R > 1 (memory, null and file only), file uses\n"
"        PATH.0 .. PATH.R-1. redis and nbd give each connection its own\n"
"        session, which only --profile zeroos takes (default: memory)\n";

static const char usage_tail[] =
"    --backend STORE (old spelling)\n        Warns, then does what --store does.\n"
"    --replicas R\n"
"        coreos: keep R copies, every write to all (default: 1)\n"
"    --latency-us N\n"
"        Hold each reply until N microseconds after its request arrived\n"
"        (default: 0)\n"
"    --bandwidth RATE\n"
"        Limit the data of all connections to RATE bytes per second:\n"
"        125M (10^6 bytes), 1G, or bits: 1gbit, 100mbit; 0 is no limit\n"
"        (default: 0)\n"
"    --shape-at client|storage\n"
"        Where --latency-us and --bandwidth apply: to the requests and\n"
"        replies of the clients, or to every operation on the stores\n"
"        behind the profile, as coreos-torus's traffic to its peers: its 512 KiB\n"
"        block reads and writes, each write once per replica\n"
"        (default: client)\n"
"    --block-size N\n"
"        zeroos: the volume block size (the preferred block size and the\n"
"        Redis block). coreos: its internal block. standard: the preferred\n"
"        block size (default: zeroos 4096, coreos 512K, standard 4096)\n"
"    --advertise-trim\n"
"        zeroos: add SEND_TRIM to 0-Disk's flags, so that clients send TRIM\n"
"        and see the EIO 0-Disk answers it with (a test hook: 0-Disk does\n"
"        not advertise TRIM).\n"
"    --poll-us N\n"
"        Before sleeping on an idle connection, poll it for N microseconds.\n"
"        Answers sooner, in smaller batches: it helps a client that waits\n"
"        for each reply, and costs a batching client (the engine) more CPU\n"
"        per request (default: 0)\n"
"    --timeline DIR\n"
"        Write a record of every request (its cookie, offset, length and\n"
"        the times it was received, started, stored and replied) to\n"
"        DIR/nbd-shim-PID-N.rec, one file per connection N; DIR is made\n"
"        if missing. scripts/compare --timeline joins them with the\n"
"        engine's (docs/timeline.md)\n"
"    --pidfile PATH\n"
"        Write the process id to PATH once listening; removed on exit.\n"
"    -v, --verbose\n"
"        Log every connection, option and request.\n"
"    --version\n"
"        Print \"nbd-shim VERSION\" and exit.\n"
"    --help\n"
"        Show this text.\n"
"\n"
"EXAMPLES\n"
"    nbd-shim --profile coreos --size 1G --replicas 2 --bandwidth 1gbit \\\n"
"             --shape-at storage\n"
"    nbd-shim --profile zeroos --listen unix:/tmp/z.sock --size 2000M \\\n"
"             --store redis:127.0.0.1:6379,127.0.0.1:6380 \\\n"
"             --redis-meta 127.0.0.1:6381\n"
"    nbd-shim --profile standard --store null --size 1T\n";

static void usage(void)
{
	fputs(usage_head, stdout);
	store_help(stdout);
	fputs(usage_store_tail, stdout);
	store_flags_help(stdout);
	fputs(usage_tail, stdout);
}

enum {
	OPT_PROFILE = 256, OPT_LISTEN, OPT_SOCKET, OPT_EXPORT, OPT_SIZE,
	OPT_STORE, OPT_OLD_BACKEND, OPT_REPLICAS, OPT_LATENCY, OPT_BANDWIDTH,
	OPT_SHAPE_AT,
	OPT_BLOCK_SIZE, OPT_ADVERTISE_TRIM, OPT_POLL, OPT_TIMELINE,
	OPT_PIDFILE, OPT_VERSION, OPT_HELP,
};

static const struct option base_options[] = {
	{ "profile", required_argument, NULL, OPT_PROFILE },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "export", required_argument, NULL, OPT_EXPORT },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "store", required_argument, NULL, OPT_STORE },
	{ "backend", required_argument, NULL, OPT_OLD_BACKEND },
	{ "replicas", required_argument, NULL, OPT_REPLICAS },
	{ "latency-us", required_argument, NULL, OPT_LATENCY },
	{ "bandwidth", required_argument, NULL, OPT_BANDWIDTH },
	{ "shape-at", required_argument, NULL, OPT_SHAPE_AT },
	{ "block-size", required_argument, NULL, OPT_BLOCK_SIZE },
	{ "advertise-trim", no_argument, NULL, OPT_ADVERTISE_TRIM },
	{ "poll-us", required_argument, NULL, OPT_POLL },
	{ "timeline", required_argument, NULL, OPT_TIMELINE },
	{ "pidfile", required_argument, NULL, OPT_PIDFILE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* Checks that need every option. */
static int args_check(struct shim_config *cfg)
{
	const struct profile *prof = cfg->profile;
	const struct store_spec *st = &cfg->store;

	if (!prof)
		return shim_bad("--profile is required (%s)",
				"coreos, zeroos or standard");
	if (!cfg->export_name)
		cfg->export_name = prof->default_export;
	if (prof == &profile_coreos && !*cfg->export_name)
		return shim_bad("--export: %s", "coreos-torus refuses empty volume names");
	if (strlen(cfg->export_name) > 4096)
		return shim_bad("--export: %s", "the name is longer than 4096 bytes");
	if (!cfg->block_size)
		cfg->block_size = prof->default_block_size;
	if (store_has(st, STORE_SESSIONS) && prof != &profile_zeroos)
		return shim_bad("--store %s is only for --profile zeroos (the one profile that gives each connection a session of its own)",
				st->arg);
	if (cfg->advertise_trim && prof != &profile_zeroos)
		return shim_bad("--advertise-trim is only for --profile zeroos%s", "");
	if (cfg->replicas > 1 && prof != &profile_coreos)
		return shim_bad("--replicas is only for --profile coreos%s", "");
	if (cfg->replicas > 1 && !store_has(st, STORE_COPIES))
		return shim_bad("--replicas needs a store whose copies are separate data (memory, null or file:PATH), not --store %s",
				st->arg);
	if (!cfg->size && store_has(st, STORE_NEEDS_SIZE))
		return shim_bad("--size is required with the %s store",
				st->type->name);
	if (cfg->size && store_has(st, STORE_OWN_SIZE))
		return shim_bad("--size does not apply to --store %s: the store's size is the export's",
				st->arg);
	if (!cfg->size && cfg->replicas > 1)
		return shim_bad("--size is required with --replicas%s", "");
	if (prof == &profile_zeroos && !is_pow2(cfg->block_size))
		return shim_bad("--block-size must be a power of two for %s",
				"zeroos (as 0-Disk rounds it)");
	if (prof == &profile_coreos && cfg->size &&
	    cfg->size % cfg->block_size)
		return shim_bad("--size must be a multiple of the block size for %s",
				"coreos (512K unless --block-size says otherwise)");
	return 0;
}

int args_parse(int argc, char **argv, struct shim_config *cfg)
{
	static struct option options[SHIM_MAX_OPTS];
	struct shim_store_flags sf = { 0 };
	uint64_t v;
	int opt;

	memset(cfg, 0, sizeof(*cfg));
	parse_listen("tcp:127.0.0.1:10809", &cfg->listen);
	if (shim_store_parse(&cfg->store, "memory"))
		return -1;
	cfg->replicas = 1;
	cfg->poll_us = -1;
	shim_options(options, base_options);

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "v", options, NULL)) != -1) {
		switch (opt) {
		case OPT_PROFILE:
			/* torus: the old spelling (torus names this project) */
			if (!strcmp(optarg, "torus")) {
				shim_deprecated("--profile torus", "--profile coreos");
				optarg = "coreos";
			}
			cfg->profile = profile_find(optarg);
			if (!cfg->profile)
				return shim_bad("--profile %s: use coreos, zeroos or standard",
						optarg);
			break;
		case OPT_LISTEN:
			if (parse_listen(optarg, &cfg->listen))
				return shim_bad("--listen %s: use unix:PATH or tcp:HOST:PORT",
						optarg);
			break;
		case OPT_SOCKET:
			if (!*optarg ||
			    strlen(optarg) >= sizeof(cfg->listen.path))
				return shim_bad("--socket %s: use a path shorter than 108 bytes",
						optarg);
			memset(&cfg->listen, 0, sizeof(cfg->listen));
			cfg->listen.is_unix = true;
			strcpy(cfg->listen.path, optarg);
			break;
		case OPT_EXPORT:
			cfg->export_name = optarg;
			break;
		case OPT_SIZE:
			if (parse_size(optarg, &cfg->size) || !cfg->size)
				return shim_bad("--size %s: use a number of bytes with an optional K, M, G or T suffix",
						optarg);
			break;
		case OPT_OLD_BACKEND:
			shim_deprecated("--backend", "--store");
			/* fall through */
		case OPT_STORE:
			if (shim_store_parse(&cfg->store, optarg))
				return -1;
			break;
		case OPT_REPLICAS:
			if (parse_uint(optarg, 64, &v) || !v)
				return shim_bad("--replicas %s: use a number from 1 to 64",
						optarg);
			cfg->replicas = v;
			break;
		case OPT_LATENCY:
			if (parse_uint(optarg, 60000000, &cfg->latency_us))
				return shim_bad("--latency-us %s: use microseconds, at most 60000000",
						optarg);
			break;
		case OPT_BANDWIDTH:
			if (parse_rate(optarg, &cfg->bandwidth))
				return shim_bad("--bandwidth %s: use bytes per second (125M, 1G) or bits (1gbit, 100mbit)",
						optarg);
			break;
		case OPT_SHAPE_AT:
			if (!strcmp(optarg, "storage"))
				cfg->shape_storage = true;
			else if (strcmp(optarg, "client"))
				return shim_bad("--shape-at %s: use client or storage",
						optarg);
			break;
		case OPT_BLOCK_SIZE:
			if (parse_size(optarg, &v) || v < 512 || v > (32u << 20))
				return shim_bad("--block-size %s: use 512 to 32M",
						optarg);
			cfg->block_size = v;
			break;
		case OPT_ADVERTISE_TRIM:
			cfg->advertise_trim = true;
			break;
		case OPT_POLL:
			if (parse_uint(optarg, 1000000, &v))
				return shim_bad("--poll-us %s: use microseconds, at most 1000000",
						optarg);
			cfg->poll_us = v;
			break;
		case OPT_TIMELINE:
			cfg->timeline = optarg;
			break;
		case OPT_PIDFILE:
			cfg->pidfile = optarg;
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
