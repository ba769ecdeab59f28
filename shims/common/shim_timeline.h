/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --timeline DIR, the same in both shims: the directory is checked (made
 * if missing) before the shim starts, and every connection (nbd-shim) or
 * ring (tcmu-shim) writes its own record file there,
 * DIR/<shim_name>-<pid>-<n>.rec (timeline/timeline_rec.h), from the
 * thread that serves it. Off, each stamp point costs one test of the
 * writer pointer.
 */
#ifndef SHIM_TIMELINE_H
#define SHIM_TIMELINE_H

#include "timeline_rec.h"

/* --timeline's directory; NULL: no records. */
extern const char *shim_timeline_dir;

/*
 * --timeline's value, once the rest of the command line is good: made if
 * missing and writable, then kept. 0, or -1 after shim_bad().
 */
int shim_timeline_arg(const char *dir);

/*
 * The writer of connection or ring @n, with the shim's name as source:
 * NULL when --timeline is off, or when the file cannot be made (logged:
 * the shim serves on without records).
 */
struct tl_writer *shim_timeline_open(unsigned long n, const char *key,
				     const char *const *stamps,
				     unsigned int nr_stamps);

/* Writes out and closes @w (NULL: nothing); a write error is logged. */
void shim_timeline_close(struct tl_writer *w);

#endif /* SHIM_TIMELINE_H */
