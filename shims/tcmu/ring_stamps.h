/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --timeline: a record per command of a ring (its cmd_id, the bytes it
 * addresses and what it does), with four stamps:
 *
 *   picked     taken off the ring: when the ring loop looked at cmd_head
 *              and saw it published. One look covers every entry
 *              published by then; the loop looks again when it has taken
 *              them all. So a command that waits behind others of its
 *              batch waits in the server (picked to started), not in the
 *              wake-up (published to picked), as nbd-shim's received is
 *              the receive that brought a request in
 *   started    handed to the SCSI target (synchronous) or to the store
 *              (store_ops.aio); not taken for a command answered
 *              without the store (refused, no data)
 *   stored     the target or the store finished it
 *   completed  its reply about to be written: just before cmd_tail moves
 *              past it (the producer may see it from then on), and so
 *              before the wake-up that tells the producer
 *
 * The command being taken keeps its record in the ring (r->rec), one
 * started on the store in its struct ring_cmd; written when completed.
 */
#ifndef TCMU_SHIM_RING_STAMPS_H
#define TCMU_SHIM_RING_STAMPS_H

#include <stdbool.h>

#include "timeline_rec.h"
#include "torus_clock.h"

struct ring;

enum {
	RS_PICKED,
	RS_STARTED,
	RS_STORED,
	RS_COMPLETED,
	RS_COUNT,
};

/*
 * In ring_init(), in the ring's thread: r->tl stays NULL when --timeline
 * is off. The file's number is the ring's (the N in "ring N", "uioN").
 */
void ring_stamps_open(struct ring *r);
void ring_stamps_close(struct ring *r);

/* Before taking the next command: looks at cmd_head when it is due. */
void ring_stamps_look(struct ring *r);

/*
 * r->cmd was just taken: r->rec begun. @sound: its CDB can say the
 * operation and range (not so for a malformed entry).
 */
void ring_stamps_pick(struct ring *r, bool sound);

/* @rec's command is about to be completed (before cmd_tail moves): stamped. */
static inline void ring_stamps_reply(struct tl_rec *rec)
{
	rec->t[RS_COMPLETED] = now_ns();
}

/* @rec's command was completed: written. */
void ring_stamps_done(struct ring *r, struct tl_rec *rec);

#endif /* TCMU_SHIM_RING_STAMPS_H */
