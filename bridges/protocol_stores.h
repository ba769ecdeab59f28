/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The stores beyond the storage library's raw ones, opened directly (the
 * shims reach them through store.h; tests/tcmu-runner's store-io calls
 * these): each is a struct store (store_ops.h). Errors are one line in
 * err, no prefix.
 */
#ifndef TORUS_STORAGE_PROTOCOL_STORES_H
#define TORUS_STORAGE_PROTOCOL_STORES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store_ops.h"

/*
 * An NBD export through the project's NBD client (client/nbd): coreos-torus's
 * arrangement, a TCMU frontend over a network volume. Each ring gets its
 * own connection (store_session()).
 */
struct store *nbd_store_open(const char *uri, unsigned int timeout_s,
			     char *err, size_t errlen);

/*
 * One of tcmu-runner's handler plugins, loaded unmodified: @handler is a
 * subtype ("qcow") found in @dir (NULL: the Debian package's directory) or
 * a path to a handler_*.so; @cfg the part of tcmu-runner's cfgstring after
 * "subtype/" (for qcow, the image path). @size 0: the plugin's own idea of
 * the size, where it has one.
 */
struct store *runner_store_open(const char *handler, const char *dir,
				const char *cfg, uint64_t size,
				uint32_t block_size, char *err,
				size_t errlen);
/* The write cache the plugin reported at open (tcmu_dev_set_write_cache_enabled). */
bool runner_store_write_cache(const struct store *st);

#endif /* TORUS_STORAGE_PROTOCOL_STORES_H */
