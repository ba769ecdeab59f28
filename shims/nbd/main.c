// SPDX-License-Identifier: GPL-2.0-only
/*
 * nbd-shim: an NBD server with the wire behaviour of torus, ZeroOS 0-Disk
 * or a conformant server. main() parses the command line, opens the
 * export and the socket, serves until SIGTERM or SIGINT, and cleans up.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "config.h"
#include "peer.h"
#include "log.h"
#include "profile.h"
#include "server.h"

static int write_pidfile(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) {
		shim_err("--pidfile %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct shim_config cfg;
	static struct server srv;
	char err[512] = "";
	sigset_t mask;
	int sigfd, ret;

	ret = args_parse(argc, argv, &cfg);
	if (ret)
		return ret > 0 ? 0 : 2;
	shim_verbose = cfg.verbose;
	peer_spin_us = cfg.poll_us >= 0 ? cfg.poll_us :
		       cfg.profile->default_poll_us;
	/* short sleeps (shaping) should last what they ask */
	prctl(PR_SET_TIMERSLACK, 1000UL);

	/* every thread inherits the mask; only the signalfd sees them */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sigfd < 0) {
		shim_err("signalfd: %s", strerror(errno));
		return 1;
	}

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
