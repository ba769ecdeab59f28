// SPDX-License-Identifier: GPL-2.0-only
/*
 * nbd-shim: an NBD server with the wire behaviour of coreos-torus, ZeroOS
 * 0-Disk or a conformant server. main() parses the command line, opens
 * the export and the socket, serves until SIGTERM or SIGINT, and cleans up.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "config.h"
#include "shim_cli.h"
#include "shim_timeline.h"
#include "peer.h"
#include "log.h"
#include "profile.h"
#include "server.h"

int main(int argc, char **argv)
{
	static struct shim_config cfg;
	static struct server srv;
	char err[512] = "";
	int sigfd, ret;

	ret = args_parse(argc, argv, &cfg);
	if (ret)
		return ret > 0 ? 0 : 2;
	/* a usage error too, but it makes the directory: not in args_parse */
	if (cfg.timeline && shim_timeline_arg(cfg.timeline))
		return 2;
	shim_verbose = cfg.verbose;
	peer_spin_us = cfg.poll_us >= 0 ? cfg.poll_us :
		       cfg.profile->default_poll_us;
	/* short sleeps (shaping) should last what they ask */
	prctl(PR_SET_TIMERSLACK, 1000UL);

	/* every thread inherits the mask; only the signalfd sees them */
	sigfd = shim_signalfd();
	if (sigfd < 0)
		return 1;

	if (server_init(&srv, &cfg, err, sizeof(err))) {
		shim_err("%s", err);
		server_fini(&srv);
		return 1;
	}
	if (cfg.pidfile && write_pidfile(cfg.pidfile)) {
		server_fini(&srv);
		return 1;
	}
	ret = server_run(&srv, sigfd);
	server_fini(&srv);
	if (cfg.pidfile)
		unlink(cfg.pidfile);
	close(sigfd);
	return ret ? 1 : 0;
}
