/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where the storage library's error lines go. A program that links it
 * may route them into its own log (the shim prefixes "nbd-shim: "); by
 * default they go to stderr prefixed "storage: ".
 */
#ifndef TORUS_STORAGE_LOG_H
#define TORUS_STORAGE_LOG_H

void storage_set_log(void (*sink)(const char *line));
void storage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* TORUS_STORAGE_LOG_H */
