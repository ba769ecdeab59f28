/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Messages to stderr, every line prefixed "nbd-shim: " (shim_name, in
 * args.c). Debug lines only appear with --verbose.
 */
#ifndef NBD_SHIM_LOG_H
#define NBD_SHIM_LOG_H

#include "shim_log.h"

#endif /* NBD_SHIM_LOG_H */
