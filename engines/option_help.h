/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the engine's option table says about each option, read from the
 * table itself: the help tail --enghelp shows, and whether a job changed
 * an option from its default.
 */
#ifndef TORUS_OPTION_HELP_H
#define TORUS_OPTION_HELP_H

#include <stdbool.h>
#include <stddef.h>

struct fio_option;

/*
 * Writes o's help followed by " (default: VALUE)" or, where the table
 * sets a range, " (default: VALUE; range: MIN to MAX)", sizes as a user
 * types them (64k, 8M).
 */
void torus_option_help(const struct fio_option *o, char *buf, size_t len);

/* Whether the option's value in block (fio's parsed options) is not its default. */
bool torus_option_changed(const struct fio_option *o, const void *block);

#endif /* TORUS_OPTION_HELP_H */
