/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Messages to stderr, every line prefixed "nbd-shim: ". Debug lines only
 * appear with --verbose.
 */
#ifndef SHIM_LOG_H
#define SHIM_LOG_H

extern int shim_verbose;

void shim_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shim_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shim_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* SHIM_LOG_H */
