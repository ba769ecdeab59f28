/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tcmu-shim's command line, parsed and checked (args.c), and the pieces
 * main() strings together: the store (store.c), the socket server
 * (server.c, attach.c) and the kernel's ring (uio.c); write_pidfile()
 * and the rest of what nbd-shim shares are in shim_cli.h.
 */
#ifndef TCMU_SHIM_H
#define TCMU_SHIM_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"
#include "scsi_target.h"
#include "shim_cli.h"

struct shim_config {
	const char *socket_path;	/* --listen unix:PATH */
	const char *uio_path;
	struct store_spec store;	/* --store and the store's flags */
	uint64_t size;			/* 0: the store's own */
	uint32_t block_size;
	uint32_t max_command_data;	/* bytes one READ or WRITE may move */
	const char *pidfile;
	const char *log;
	const char *timeline;		/* --timeline DIR, or NULL */
	unsigned int timeout_s;
	int verbose;
};

/*
 * Parse argv into cfg. Returns 0 to run, 1 when --help was printed, -1
 * after printing an error to stderr.
 */
int args_parse(int argc, char **argv, struct shim_config *cfg);
/* What args_parse() allocated. */
void args_free(struct shim_config *cfg);

/* What the open store lets the device offer. */
struct store_caps {
	bool lbprz;		/* trimmed blocks read as zeroes */
	bool thin;		/* trims reach the data (else fully provisioned) */
	bool write_cache;	/* a volatile cache that flushes empty */
};

/* The store the spec names, sized, and what it can do. */
struct store *store_open_device(const struct shim_config *cfg,
				struct store_caps *caps, char *err,
				size_t errlen);

/* Serve rings attached over the socket until @sigfd fires: 0 or -1. */
int server_run(const struct shim_config *cfg, const struct scsi_target *t,
	       struct store *st, int sigfd);

/* Serve the kernel's ring at cfg->uio_path until @sigfd fires: 0 or -1. */
int uio_run(const struct shim_config *cfg, const struct scsi_target *t,
	    struct store *st, int sigfd);

#endif /* TCMU_SHIM_H */
