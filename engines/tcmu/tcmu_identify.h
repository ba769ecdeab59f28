/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the TCMU transport learns from a handler before any I/O: the
 * commands Linux's sd sends when a disk appears, and their answers.
 */
#ifndef TORUS_TCMU_IDENTIFY_H
#define TORUS_TCMU_IDENTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcmu_client.h"

/* What set-up learned from the handler. */
struct tcmu_dev {
	uint32_t block_size;
	uint64_t blocks;
	bool thin;			/* LBPME: trims are worth sending */
	bool read_only;			/* MODE SENSE: write protected */
	bool fua;			/* MODE SENSE: DPOFUA */
	bool write_cache;		/* MODE SENSE: WCE, or not known */
	uint32_t max_transfer;		/* bytes; 0: no limit reported */
	uint32_t max_unmap;		/* bytes; 0: not reported */
	char product[64];
};

/*
 * INQUIRY (a disk?), READ CAPACITY(16), MODE SENSE(6) and the Block
 * Limits VPD page. 0, or -1 with a message naming label in err.
 */
int tcmu_identify(struct tcmu_client *c, const char *label,
		  struct tcmu_dev *dev, char *err, size_t errlen);

#endif /* TORUS_TCMU_IDENTIFY_H */
