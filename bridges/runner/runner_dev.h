/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The plugin host's side of tcmu-runner's handler ABI. A handler sees a
 * struct tcmu_device only through the accessors it imports (plugin_api.c),
 * so that struct is ours; tcmu_dev_get_private() returns a struct
 * tcmur_device laid out by tcmu-runner's tcmur_device.h, as the daemon's
 * does, because handler_rbd.so reads it. Types and prototypes come from
 * tcmu-runner's own headers (scripts/tcmu-runner-source.sh).
 */
#ifndef TORUS_TCMU_RUNNER_DEV_H
#define TORUS_TCMU_RUNNER_DEV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tcmu-runner.h"
#include "tcmur_device.h"

struct tcmu_device {
	struct tcmur_device rdev;	/* rdev.hm_private: the handler's */
	struct tcmur_handler *handler;
	char *cfgstring;		/* "subtype/cfg" */
	uint64_t dev_size;		/* configfs "Size" */
	uint64_t num_lbas;
	uint32_t block_size;
	uint32_t max_xfer_len;		/* in blocks */
	uint32_t opt_xcopy_rw_len;
	uint32_t max_unmap_len;
	uint32_t opt_unmap_gran;
	uint32_t unmap_gran_align;
	bool write_cache;
	bool solid_state;
	bool unmap_enabled;
	/* The handler's error lines during open, for the message if it fails. */
	char last_err[512];
};

/* Handler registration: what handler_init() registered, for plugin.c. */
void runner_registration_begin(void);
struct tcmur_handler *runner_registration_end(int *count);

/*
 * While dev is being opened by this thread, the handler's error lines
 * (tcmu_err() passes no device) are kept in dev->last_err instead of
 * logged; NULL ends that.
 */
void runner_log_capture(struct tcmu_device *dev);

#endif /* TORUS_TCMU_RUNNER_DEV_H */
