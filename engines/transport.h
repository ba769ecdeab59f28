/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The seam between the fio glue (engine.c) and a transport. A transport
 * knows its wire, its options, its messages and its embedded default
 * server; the glue knows fio. Requests are the few block operations fio
 * issues. A finished request (a completion) is handed, once, to the
 * glue's completer in torus_params: from within reap() or cancel(), and
 * for NBD straight from the client that parsed its reply.
 *
 * To add a transport: implement struct torus_transport in its own folder
 * under engines/ and list it in transports.c, the one place that knows
 * them all.
 */
#ifndef TORUS_TRANSPORT_H
#define TORUS_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "torus_completion.h"
#include "torus_stamps.h"

struct fio_option;

enum torus_op {
	TORUS_OP_READ,
	TORUS_OP_WRITE,
	TORUS_OP_TRIM,
	TORUS_OP_FLUSH,
};

/* What the glue hands every transport. */
struct torus_params {
	const char *uri;
	const void *opts;		/* the transport's own option block */
	unsigned int timeout_s;		/* per request and per set-up; 0: none */
	/* Set when the job must stop: blocking set-up gives up early. */
	const volatile bool *stop;
	/* Where finished requests go (the glue's event array). */
	struct torus_completer done;
	/*
	 * timeline=: where each wire command's stamps go, before its
	 * request's completion (fn NULL: off). user is the request's.
	 */
	struct torus_stamper stamp;
};

/*
 * One job's transport state, made by open() and passed to every call
 * after it: each transport's own struct starts with this one.
 */
struct torus_session {
	struct torus_completer done;	/* from torus_params */
};

/* The parts of a job a transport may have to refuse, fio-free. */
struct torus_job {
	bool writes;
	bool trims;
	bool fua;			/* FUA on every write */
};

/* What inspect() learned about the target, for validating the job. */
struct torus_target {
	uint64_t size;
	bool read_only;
	bool can_flush;			/* else flushes complete at once */
	bool can_trim;
	bool can_fua;
	uint32_t min_block;
	uint32_t max_block;
	/* Largest wire command: larger requests are split (0: never). */
	uint32_t cmd_max;
	char label[512];		/* names the target in messages */
	char detail[256];		/* e.g. how the handshake went */
};

struct torus_transport {
	const char *name;		/* as transport= names it */
	const char *kind;		/* "an NBD": its options in messages */
	const char *uri_forms;		/* for messages: the URIs it serves */
	/* Its options: offsets are into its own block of opts_size bytes. */
	const struct fio_option *options;
	size_t opts_size;

	/* Range checks of its options, before anything connects. */
	int (*check_options)(const void *opts, char *err, size_t errlen);
	/* Does this transport serve uri? */
	bool (*handles)(const char *uri);
	/*
	 * Starts (or reuses) the default server of size bytes for a job with
	 * no uri, and writes its uri.
	 */
	int (*embedded)(uint64_t size, char *uri, size_t urilen, char *err,
			size_t errlen);
	/* Connects once, fills *t, disconnects. err gets a full message. */
	int (*inspect)(const struct torus_params *p, struct torus_target *t,
		       char *err, size_t errlen);
	/* Refuses what the target cannot do for this job, naming the fix. */
	int (*check)(const struct torus_params *p, const struct torus_job *job,
		     const struct torus_target *t, char *err, size_t errlen);
	/*
	 * The job's session, for depth outstanding requests. If t->size is
	 * set (inspect() ran), the target must not have shrunk; t is then
	 * refreshed from what the connections negotiated.
	 */
	struct torus_session *(*open)(const struct torus_params *p,
				      unsigned int depth,
				      struct torus_target *t, char *err,
				      size_t errlen);
	/*
	 * 0, -EBUSY (no room), or another -errno (fail the request). After 0
	 * the request's completion comes once, even from within queue().
	 */
	int (*queue)(struct torus_session *s, enum torus_op op, bool fua,
		     uint64_t offset, uint32_t len, void *buf, void *user);
	/* Sends what was queued (or holds it for reap); 0 or -errno. */
	int (*submit)(struct torus_session *s);
	/*
	 * Hands every finished request to the completer, waiting until at
	 * least min have gone or timeout passes: how many, or -errno.
	 */
	int (*reap)(struct torus_session *s, unsigned int min,
		    const struct timespec *timeout);
	/*
	 * The job is stopping and requests are still outstanding: fail them
	 * all with error (a positive errno), to the completer.
	 */
	void (*cancel)(struct torus_session *s, int error);
	void (*close)(struct torus_session *s);
};

/* transports.c: every transport, and lookups over them. */
extern const struct torus_transport *const torus_transports[];
extern const unsigned int torus_ntransports;

const struct torus_transport *torus_transport_for_uri(const char *uri);
const struct torus_transport *torus_transport_named(const char *name);
/* "nbd://... or nbd+unix://..." for messages. */
const char *torus_transport_uri_forms(void);
/* "nbd: nbd://... or nbd+unix://...; tcmu: ...": uri='s help. */
const char *torus_transport_uri_forms_named(void);
/* "nbd" or "nbd, tcmu": the names transport= takes. */
const char *torus_transport_names(void);

#endif /* TORUS_TRANSPORT_H */
