/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A completion: a finished request, handed on once, as it finishes, by
 * the layer that saw it finish, straight to whoever queued it. user is
 * the pointer the request was queued with; error is 0 or a positive
 * errno. The engine's glue passes its own function down, so a reply
 * parsed by client/nbd lands in the array fio's ->event reads.
 */
#ifndef TORUS_COMPLETION_H
#define TORUS_COMPLETION_H

#include <stdint.h>

typedef void torus_complete_fn(void *arg, void *user, int error);

/* Where completions go: set once, when the client is made. */
struct torus_completer {
	torus_complete_fn *fn;
	void *arg;
};

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

#endif /* TORUS_COMPLETION_H */
