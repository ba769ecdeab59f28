/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The command line, parsed (args.c) and checked before anything starts.
 */
#ifndef SHIM_CONFIG_H
#define SHIM_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

struct profile;

struct listen_addr {
	bool is_unix;
	char path[108];			/* unix */
	char host[256];			/* tcp */
	int port;
};

struct shim_config {
	const struct profile *profile;
	struct listen_addr listen;
	const char *export_name;
	uint64_t size;			/* 0: the store's own */
	struct store_spec store;	/* --store and the store's flags */
	int replicas;
	uint64_t latency_us;
	uint64_t bandwidth;		/* bytes per second, 0: unlimited */
	bool shape_storage;		/* --shape-at storage */
	uint32_t block_size;
	int64_t poll_us;		/* -1: the profile's default */
	bool advertise_trim;		/* zeroos: SEND_TRIM, answered EIO */
	const char *timeline;		/* --timeline DIR, or NULL */
	const char *pidfile;
	int verbose;
};

/*
 * Parse argv into cfg. Returns 0 to run, 1 when --help was printed, -1
 * after printing an error to stderr.
 */
int args_parse(int argc, char **argv, struct shim_config *cfg);

#endif /* SHIM_CONFIG_H */
