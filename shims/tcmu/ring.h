/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One TCMU command ring being served: the handler side of the ring
 * (proto/tcmu), the SCSI target's per-ring state, and the two wake-ups.
 * Over a socket these are the engine's eventfds (8-byte counters); from a
 * kernel both are the UIO fd (4-byte read to wait, 4-byte write to say
 * that commands were retired).
 */
#ifndef TCMU_SHIM_RING_H
#define TCMU_SHIM_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scsi_target.h"
#include "tcmu_ring.h"

struct ring {
	char name[64];
	struct tcmu_hdl hdl;
	struct tcmu_hdl_cmd cmd;	/* its iov array is ours */
	struct scsi_lu lu;
	int wait_fd;			/* readable: cmd_head moved */
	int notify_fd;			/* written: cmd_tail moved */
	bool uio;			/* 4-byte UIO reads and writes */
	bool read_len;			/* the producer takes short reads */
	uint64_t nr_cmds;
};

/*
 * Check the mailbox of @region (@size bytes mapped) and allocate every
 * buffer the ring will need. 0, or -errno with a message in @err:
 * -EPROTONOSUPPORT for a mailbox version other than 2.
 */
int ring_init(struct ring *r, const char *name, void *region, uint64_t size,
	      const struct scsi_target *t, struct backend *be, char *err,
	      size_t errlen);
void ring_free(struct ring *r);

/*
 * Serve commands until @stop_fd (a socket or a signalfd) has an event:
 * returns 1 then; -EPROTO when the producer broke the ring; -errno when
 * waiting or notifying failed.
 */
int ring_run(struct ring *r, int stop_fd);

#endif /* TCMU_SHIM_RING_H */
