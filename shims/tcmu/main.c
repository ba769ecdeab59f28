// SPDX-License-Identifier: GPL-2.0-only
/*
 * tcmu-shim: a TCMU handler host. main() parses the command line, opens
 * the store, describes the device, serves rings from the socket or the
 * kernel's UIO device until SIGTERM or SIGINT, and cleans up.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "log.h"
#include "shim.h"
#include "shim_timeline.h"

/* The unit's name (serial, NAA) from where it is served and from what. */
static uint64_t unit_id(const struct shim_config *cfg)
{
	const char *parts[2] = {
		cfg->socket_path ? cfg->socket_path : cfg->uio_path,
		cfg->store.arg,
	};
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */
	const char *p;
	int i;

	for (i = 0; i < 2; i++)
		for (p = parts[i]; *p; p++)
			h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	return h;
}

int main(int argc, char **argv)
{
	static struct shim_config cfg;
	static struct scsi_target target;
	struct store *st;
	char err[512] = "";
	uint64_t size;
	struct store_caps caps;
	int sigfd, ret;

	ret = args_parse(argc, argv, &cfg);
	if (ret)
		return ret > 0 ? 0 : 2;
	/* a usage error too, but it makes the directory: not in args_parse */
	if (cfg.timeline && shim_timeline_arg(cfg.timeline))
		return 2;
	shim_verbose = cfg.verbose;
	ret = cfg.log ? shim_log_open(cfg.log) : 0;
	if (ret) {
		fprintf(stderr, "tcmu-shim: --log %s: %s\n", cfg.log,
			strerror(-ret));
		return 1;
	}

	/* every thread inherits the mask; only the signalfd sees them */
	sigfd = shim_signalfd();
	if (sigfd < 0)
		return 1;

	st = store_open_device(&cfg, &caps, err, sizeof(err));
	if (!st) {
		shim_err("%s", err);
		return 1;
	}
	size = cfg.size && cfg.size < st->size ? cfg.size : st->size;
	if (size % cfg.block_size)
		shim_info("the store's %llu bytes are not a whole number of %u-byte blocks: the last %llu bytes are not offered",
			  (unsigned long long)size, cfg.block_size,
			  (unsigned long long)(size % cfg.block_size));
	if (scsi_target_init(&target, size, cfg.block_size, cfg.max_command_data,
			     caps.lbprz, unit_id(&cfg))) {
		shim_err("the store's %llu bytes do not make a device of %u-byte blocks",
			 (unsigned long long)size, cfg.block_size);
		store_close(st);
		return 1;
	}
	target.thin = caps.thin;
	target.write_cache = caps.write_cache;
	target.write_protect = st->read_only;

	if (cfg.socket_path)
		ret = server_run(&cfg, &target, st, sigfd);
	else
		ret = uio_run(&cfg, &target, st, sigfd);
	if (store_flush(st))
		shim_err("flushing the store on exit failed");
	store_close(st);
	if (cfg.pidfile)
		unlink(cfg.pidfile);
	close(sigfd);
	return ret ? 1 : 0;
}
