/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The TCMU transport's embedded default target: with no uri, the handler
 * host tcmu-shim with a memory store sized to the job, on a private Unix
 * socket, one per fio process (see ../embedded.h).
 */
#ifndef TORUS_TCMU_EMBEDDED_H
#define TORUS_TCMU_EMBEDDED_H

#include <stddef.h>
#include <stdint.h>

int tcmu_embedded_get(uint64_t size, char *uri, size_t urilen, char *err,
		      size_t errlen);

#endif /* TORUS_TCMU_EMBEDDED_H */
