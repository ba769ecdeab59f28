/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine's timeline (timeline=DIR): one record per wire command in
 * DIR/engine-<N>.rec (timeline/timeline_rec.h), each with its request's
 * queued and handed stamps around the transport's own (NBD: sent, header,
 * payload; TCMU: published, seen; libnbd: callback). At the job's end a table of the
 * phases between the stamps goes to stderr, and the same phases, with
 * their histograms, to DIR/engine-<N>.json (the phase summary schema of
 * docs/timeline.md).
 *
 * fio-free: requests are named by a slot number below nr_reqs (fio's
 * io_u->index). Everything is allocated at open and sizing; no
 * allocation per I/O. One job's thread uses it.
 */
#ifndef TORUS_ENGINE_TIMELINE_H
#define TORUS_ENGINE_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "torus_stamps.h"

struct torus_tl;

/*
 * Makes dir if missing and creates dir/engine-<job>.rec for transport
 * ("nbd", "tcmu" or "libnbd"). NULL with a message naming the file or directory
 * and the fix in err.
 */
struct torus_tl *torus_tl_open(const char *dir, unsigned int job,
			       const char *transport, char *err,
			       size_t errlen);

/*
 * Room for nr_reqs requests of at most cmds wire commands each (a request
 * larger than the transport's largest command is split). 0 or -1 with a
 * message in err.
 */
int torus_tl_size(struct torus_tl *tl, unsigned int nr_reqs,
		  unsigned int cmds, char *err, size_t errlen);

/* Request req was handed to the transport: its queued stamp, now. */
uint64_t torus_tl_queued(struct torus_tl *tl, unsigned int req);

/* Now, on the timeline's clock (timeline/timeline_clock.h). */
uint64_t torus_tl_now(struct torus_tl *tl);

/* One of req's wire commands finished (the transport's stamps). */
void torus_tl_cmd(struct torus_tl *tl, unsigned int req,
		  const struct torus_wire_stamps *w);

/*
 * Request req, of op (enum tl_op), goes back to fio at now: its commands'
 * records are written and counted in the phases.
 */
void torus_tl_handed(struct torus_tl *tl, unsigned int req, unsigned int op,
		     uint64_t now);

/*
 * Writes the table (stderr) and dir/engine-<job>.json (not for a job
 * never sized: it failed before any I/O), closes the record file, frees
 * tl: 0, or -1 with a message in err.
 */
int torus_tl_close(struct torus_tl *tl, char *err, size_t errlen);

#endif /* TORUS_ENGINE_TIMELINE_H */
