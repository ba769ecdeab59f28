// SPDX-License-Identifier: GPL-2.0-only
/* Placeholder until the tcmu-runner plugin host lands. */
#include <stdio.h>

#include "backends.h"

struct backend *tcmu_runner_backend_open(const char *handler, const char *dir,
					 const char *cfg, uint64_t size,
					 uint32_t block_size, char *err,
					 size_t errlen)
{
	snprintf(err, errlen, "tcmu-runner plugins are not supported yet");
	return NULL;
}
