/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Messages, every line prefixed "tcmu-shim: " (shim_name, in args.c), to
 * stderr or the --log file. Debug lines only appear with -v.
 */
#ifndef TCMU_SHIM_LOG_H
#define TCMU_SHIM_LOG_H

#include "shim_log.h"

#endif /* TCMU_SHIM_LOG_H */
