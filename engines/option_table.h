/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fio's one option table for the engine: the common options, then every
 * transport's, laid out at load (option_table.c). engine.c hands it to
 * fio and asks it for a job's transport block.
 */
#ifndef TORUS_OPTION_TABLE_H
#define TORUS_OPTION_TABLE_H

#include <stddef.h>

struct fio_option;
struct torus_transport;

#define MAX_REQUEST_TIMEOUT	86400

/* The common block; transports' options follow it at offsets set at load. */
struct torus_options {
	void *pad;		/* fio writes the thread_data pointer here */
	char *uri;
	char *transport;
	unsigned int fua;
	unsigned int request_timeout;
	char *timeline;
};

/* The table fio parses with (ioengine_ops.options), NULL-name ended. */
extern struct fio_option torus_option_table[];

/*
 * Lays the table out: the common options, then each transport's with
 * its offsets moved past the blocks before it, each help given its
 * default and range. Returns the option struct's size.
 */
size_t torus_option_table_build(void);

/*
 * tp's block in a job's parsed options (eo): the options it shares with
 * an earlier transport copied in, and every other transport's option the
 * job set named on stderr, as doing nothing.
 */
const void *torus_option_table_block(void *eo,
				     const struct torus_transport *tp);

/*
 * The .cb of every FIO_OPT_STR option with a .posval list, which names
 * its option: fio then hands the engine a value the list lacks, and a
 * bad one is refused naming the valid values (on stderr, where fio's own
 * list goes to stdout):
 *
 *	static int set_ring(void *eo, const char *value)
 *	{
 *		return torus_option_set(eo, "ring", value);
 *	}
 *
 * Stores the value's .oval at the option's offset; 0, or 1 refused.
 */
int torus_option_set(void *eo, const char *name, const char *value);

#endif /* TORUS_OPTION_TABLE_H */
