/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The timeline's stamps as a client hands them on: the client that put a
 * command on the wire stamps it there, and hands the stamps to the
 * stamper it was given, as it hands the request's completion to its
 * completer (torus_completion.h).
 */
#ifndef TORUS_STAMPS_H
#define TORUS_STAMPS_H

#include <stdint.h>

/*
 * The timeline (engines/timeline.h): one wire command's stamps, on
 * CLOCK_MONOTONIC in ns, 0 where not taken. The layer that put the
 * command on the wire hands them to the stamper as the command finishes,
 * before the completion of the request it belongs to; a request split
 * into several commands hands several. NBD: t[] is sent, header,
 * payload; TCMU: published, seen; libnbd: callback (its completion
 * callback ran).
 */
struct torus_wire_stamps {
	uint64_t key;			/* NBD cookie, TCMU cmd_id */
	uint64_t offset;		/* in bytes */
	uint32_t len;			/* in bytes */
	uint16_t stream;		/* connection (NBD), 0 for a ring */
	uint64_t t[3];
};

typedef void torus_stamp_fn(void *arg, void *user,
			    const struct torus_wire_stamps *w);

/* Where stamps go; fn NULL: no timeline, and no clock is read for it. */
struct torus_stamper {
	torus_stamp_fn *fn;
	void *arg;
	/*
	 * The stamp of the request being queued, during the ->queue call
	 * (its queued stamp): a command that goes on the wire inside that
	 * call, with nothing ahead of it, may take it as its own first
	 * stamp, one clock read for both.
	 */
	const uint64_t *queued;
};

#endif /* TORUS_STAMPS_H */
