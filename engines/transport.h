/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one interface between the fio glue (engine.c) and a transport.
 * A transport knows its wire; the glue knows fio. Requests are the few
 * block operations fio issues; completions come back by user pointer.
 */
#ifndef TORUS_TRANSPORT_H
#define TORUS_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "completion.h"

enum torus_op {
	TORUS_OP_READ,
	TORUS_OP_WRITE,
	TORUS_OP_TRIM,
	TORUS_OP_FLUSH,
};

/* Connection settings from the engine options. */
struct torus_params {
	const char *uri;
	unsigned int conns;
	unsigned int handshake;		/* enum nbd_hs_mode for NBD */
	bool fua;
	bool structured;
	unsigned int poll_us;		/* busy-poll budget at low depth */
	unsigned int timeout_s;		/* per request and per handshake; 0: none */
	/* Set when the job must stop: blocking set-up gives up early. */
	const volatile bool *stop;
};

/* What a probe learned about the target, for validating the job. */
struct torus_target {
	uint64_t size;
	bool read_only;
	bool can_flush;
	bool can_trim;
	bool can_fua;
	bool multi_conn;
	uint32_t min_block;
	uint32_t pref_block;
	uint32_t max_block;
	char label[512];		/* names the target in messages */
	char detail[256];		/* e.g. how the handshake went */
};

struct torus_transport {
	const char *name;
	/* Does this transport serve uri? */
	bool (*handles)(const char *uri);
	/* Connects once, fills *t, disconnects. err gets a full message. */
	int (*probe)(const struct torus_params *p, struct torus_target *t,
		     char *err, size_t errlen);
	/*
	 * Per-job state for depth outstanding requests. If t->size is set
	 * (a probe ran), the target must not have shrunk; t is then refreshed
	 * from what the connections negotiated.
	 */
	void *(*open)(const struct torus_params *p, unsigned int depth,
		      struct torus_target *t, char *err, size_t errlen);
	/* 0, -EBUSY (no room), or another -errno (fail the request). */
	int (*queue)(void *conn, enum torus_op op, bool fua, uint64_t offset,
		     uint32_t len, void *buf, void *user);
	/* Sends what was queued (or holds it for reap); 0 or -errno. */
	int (*submit)(void *conn);
	int (*reap)(void *conn, unsigned int min, unsigned int max,
		    const struct timespec *timeout,
		    struct torus_completion *out);
	/*
	 * The job is stopping and requests are still outstanding: fail them
	 * all with error (a positive errno); reap() then returns them.
	 */
	void (*cancel)(void *conn, int error);
	void (*close)(void *conn);
};

extern const struct torus_transport torus_nbd_transport;

#endif /* TORUS_TRANSPORT_H */
