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

#define SUN_PATH_MAX	sizeof(((struct sockaddr_un *)0)->sun_path)

const char shim_name[] = "tcmu-shim";

static const char usage_text[] =
"NAME\n"
"    tcmu-shim - a TCMU handler host: answers SCSI from a TCMU command ring\n"
"    like a disk, over a memory, null, file, NBD or tcmu-runner store\n"
"\n"
"SYNOPSIS\n"
"    tcmu-shim (--socket PATH | --uio /dev/uioN) [--backend SPEC] [--size SIZE]\n"
"              [--block-size 512|4096] [--max-transfer SIZE] [--pidfile FILE]\n"
"              [--log FILE] [--plugin-dir DIR] [--timeout SECONDS] [-v]\n"
"              [--help]\n"
"\n"
"DESCRIPTION\n"
"    Consumes TCMU command rings (the shared region of the kernel's\n"
"    target_core_user) and answers every SCSI command in them as a direct\n"
"    access block device: INQUIRY and its VPD pages, READ CAPACITY, MODE\n"
"    SENSE, READ and WRITE, SYNCHRONIZE CACHE, UNMAP, WRITE SAME(16),\n"
"    REPORT SUPPORTED OPERATION CODES.\n"
"\n"
"    With --socket, any number of clients (the fio engine's jobs) attach a\n"
"    ring each over a Unix socket (a memfd region and two eventfds); each\n"
"    ring has a thread, and closing the socket detaches it. With --uio, it\n"
"    serves the one ring of a kernel's user backstore (LIO, tcm-user).\n"
"\n"
"    It prints \"tcmu-shim: listening on ...\" (or \"serving ...\") when\n"
"    ready, and exits 0 after a clean shutdown on SIGTERM or SIGINT.\n"
"\n"
"OPTIONS\n"
"    --socket PATH\n"
"        Listen on the Unix socket PATH for rings to attach.\n"
"    --uio /dev/uioN\n"
"        Serve the kernel's ring behind the UIO device (its map 0).\n"
"    --backend SPEC\n"
"        Where data lives (default memory):\n"
"          memory            an anonymous mapping (needs --size)\n"
"          null              reads zeroes, drops writes (needs --size)\n"
"          file:PATH[,direct]  a file or block device, with O_DIRECT when\n"
"                            \",direct\" follows; its size unless --size\n"
"          nbd:URI           an NBD export (nbd://HOST[:PORT][/NAME] or\n"
"                            nbd+unix:///NAME?socket=PATH), its size\n"
"          runner:SUBTYPE:CFG  a tcmu-runner handler plugin (handler_SUBTYPE.so,\n"
"                            or a path to one) with the config string CFG\n"
"    --size SIZE\n"
"        The device's size, with an optional K, M, G, T suffix (powers of\n"
"        1024); a multiple of the block size.\n"
"    --block-size 512|4096\n"
"        The logical block size (default 512, the kernel's user backstore\n"
"        default).\n"
"    --max-transfer SIZE\n"
"        The most one READ or WRITE may move (default 8M), reported in the\n"
"        Block Limits VPD page; a multiple of the block size. Behind a\n"
"        kernel, keep it at or below hw_max_sectors * 512.\n"
"    --pidfile FILE\n"
"        Write the process id to FILE once ready; removed on exit.\n"
"    --log FILE\n"
"        Append log lines to FILE instead of stderr.\n"
"    --plugin-dir DIR\n"
"        Where runner: looks for handler_SUBTYPE.so (default: the\n"
"        tcmu-runner package's directory).\n"
"    --timeout SECONDS\n"
"        How long an attaching client and the nbd: store's connection may\n"
"        take (default 30; 0: no limit).\n"
"    -v, --verbose\n"
"        Log every attach, detach and command.\n"
"    --help\n"
"        Show this text.\n"
"\n"
"EXAMPLES\n"
"    tcmu-shim --socket /tmp/tcmu.sock --size 1G\n"
"    tcmu-shim --socket /tmp/tcmu.sock --backend file:/var/tmp/disk.img,direct\n"
"    tcmu-shim --uio /dev/uio0 --backend nbd:nbd://127.0.0.1:10809\n"
"    tcmu-shim --uio /dev/uio0 --backend runner:qcow:/var/tmp/disk.qcow2\n";

enum {
	OPT_SOCKET = 256, OPT_UIO, OPT_BACKEND, OPT_SIZE, OPT_BLOCK_SIZE,
	OPT_MAX_TRANSFER, OPT_PIDFILE, OPT_LOG, OPT_PLUGIN_DIR, OPT_TIMEOUT,
	OPT_HELP,
};

static const struct option long_options[] = {
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "uio", required_argument, NULL, OPT_UIO },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "block-size", required_argument, NULL, OPT_BLOCK_SIZE },
	{ "max-transfer", required_argument, NULL, OPT_MAX_TRANSFER },
	{ "pidfile", required_argument, NULL, OPT_PIDFILE },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "plugin-dir", required_argument, NULL, OPT_PLUGIN_DIR },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static int parse_backend(const char *s, struct store_spec *st)
{
	const char *colon;
	char *comma;
	size_t n;

	memset(st, 0, sizeof(*st));
	st->arg = s;
	if (!strcmp(s, "memory")) {
		st->kind = STORE_MEMORY;
	} else if (!strcmp(s, "null")) {
		st->kind = STORE_NULL;
	} else if (!strncmp(s, "file:", 5) && s[5]) {
		st->kind = STORE_FILE;
		st->path = strdup(s + 5);
		if (!st->path)
			return -1;
		/* ",direct" at the end is the option, not the file's name */
		comma = strrchr(st->path, ',');
		if (comma && !strcmp(comma, ",direct")) {
			*comma = '\0';
			st->direct = true;
		}
		if (!*st->path)
			return -1;
	} else if (!strncmp(s, "nbd:", 4) && s[4]) {
		st->kind = STORE_NBD;
		st->uri = s + 4;
	} else if (!strncmp(s, "runner:", 7)) {
		st->kind = STORE_RUNNER;
		colon = strchr(s + 7, ':');
		n = colon ? (size_t)(colon - (s + 7)) : 0;
		if (!n || n >= sizeof(st->subtype))
			return -1;
		memcpy(st->subtype, s + 7, n);
		st->cfg = colon + 1;
	} else {
		return -1;
	}
	return 0;
}

/* Checks that need every option. */
static int args_check(struct shim_config *cfg)
{
	enum store_kind kind = cfg->store.kind;

	if (!cfg->socket_path && !cfg->uio_path)
		return shim_bad("give --socket PATH (rings attached by the engine) or --uio /dev/uioN (a kernel's ring)%s",
				"");
	if (cfg->socket_path && cfg->uio_path)
		return shim_bad("--socket and --uio exclude each other: one ring source per process%s",
				"");
	if (!cfg->size && (kind == STORE_MEMORY || kind == STORE_NULL))
		return shim_bad("--size is required with the %s backend",
				kind == STORE_MEMORY ? "memory" : "null");
	if (cfg->size && kind == STORE_NBD)
		return shim_bad("--size does not apply to %s: the export's size is the device's",
				"--backend nbd:");
	if (cfg->size % cfg->block_size)
		return shim_bad("--size must be a multiple of --block-size (%s bytes)",
				cfg->block_size == 512 ? "512" : "4096");
	if (cfg->max_transfer % cfg->block_size)
		return shim_bad("--max-transfer must be a multiple of --block-size (%s bytes)",
				cfg->block_size == 512 ? "512" : "4096");
	if (cfg->plugin_dir && kind != STORE_RUNNER)
		return shim_bad("--plugin-dir is only for --backend runner:...%s", "");
	return 0;
}

int args_parse(int argc, char **argv, struct shim_config *cfg)
{
	uint64_t v;
	int opt;

	memset(cfg, 0, sizeof(*cfg));
	parse_backend("memory", &cfg->store);
	cfg->block_size = 512;
	cfg->max_transfer = 8u << 20;
	cfg->timeout_s = 30;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "v", long_options, NULL)) != -1) {
		switch (opt) {
		case OPT_SOCKET:
			if (!*optarg || strlen(optarg) >= SUN_PATH_MAX)
				return shim_bad("--socket %s: use a path shorter than 108 bytes",
						optarg);
			cfg->socket_path = optarg;
			break;
		case OPT_UIO:
			if (!strstr(optarg, "uio"))
				return shim_bad("--uio %s: use the UIO device of a tcm-user backstore, /dev/uioN",
						optarg);
			cfg->uio_path = optarg;
			break;
		case OPT_BACKEND:
			if (parse_backend(optarg, &cfg->store))
				return shim_bad("--backend %s: use memory, null, file:PATH[,direct], nbd:URI or runner:SUBTYPE:CFG",
						optarg);
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
			if (parse_size_units(optarg, "KMGT", &v) ||
			    v < 512 || v > (256u << 20))
				return shim_bad("--max-transfer %s: use 512 to 256M (a multiple of the block size)",
						optarg);
			cfg->max_transfer = v;
			break;
		case OPT_PIDFILE:
			cfg->pidfile = optarg;
			break;
		case OPT_LOG:
			cfg->log = optarg;
			break;
		case OPT_PLUGIN_DIR:
			cfg->plugin_dir = optarg;
			break;
		case OPT_TIMEOUT:
			if (parse_uint(optarg, 86400, &v))
				return shim_bad("--timeout %s: use seconds from 0 (no limit) to 86400",
						optarg);
			cfg->timeout_s = v;
			break;
		case 'v':
			cfg->verbose++;
			break;
		case OPT_HELP:
			fputs(usage_text, stdout);
			return 1;
		default:
			return shim_bad("unknown option or missing value: %s",
					argv[optind - 1]);
		}
	}
	if (optind < argc)
		return shim_bad("unexpected argument: %s", argv[optind]);
	return args_check(cfg);
}
