// SPDX-License-Identifier: GPL-2.0-only
/* Placeholder until the NBD store lands. */
#include <stdio.h>

#include "backends.h"

struct backend *tcmu_nbd_backend_open(const char *uri, unsigned int timeout_s,
				      char *err, size_t errlen)
{
	snprintf(err, errlen, "the NBD store is not built yet");
	return NULL;
}
