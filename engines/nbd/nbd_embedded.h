/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The NBD transport's embedded default target: with no uri, it starts
 * `nbdkit memory` on a private Unix socket, one per fio process, shared by
 * its jobs (so a verify job sees what a write job wrote). It is stopped
 * when that process exits (atexit, and nbdkit's --exit-with-parent if fio
 * dies), after every job's cleanup.
 */
#ifndef TORUS_NBD_EMBEDDED_H
#define TORUS_NBD_EMBEDDED_H

#include <stddef.h>
#include <stdint.h>

/*
 * Starts the server for size bytes if this process has none yet, and
 * writes its uri. Returns 0, or -1 with a message.
 */
int nbd_embedded_get(uint64_t size, char *uri, size_t urilen, char *err,
			size_t errlen);

#endif /* TORUS_NBD_EMBEDDED_H */
