/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One client of the socket: the attach exchange (proto/tcmu/tcmu_attach.h),
 * the region mapped, its ring served until the socket closes, everything
 * released. Runs in the connection's own thread.
 */
#ifndef TCMU_SHIM_ATTACH_H
#define TCMU_SHIM_ATTACH_H

#include "shim.h"

void attach_serve(int sock, unsigned long id, const struct shim_config *cfg,
		  const struct scsi_target *t, struct store *st);

#endif /* TCMU_SHIM_ATTACH_H */
