/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The seam between the fio glue (engine.c) and a transport. A transport
 * knows its wire, its options, its messages and its embedded default
 * server; the glue knows fio. Requests are the few block operations fio
 * issues; completions come back by user pointer.
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

struct fio_option;

enum torus_op {
	TORUS_OP_READ,
	TORUS_OP_WRITE,
	TORUS_OP_TRIM,
	TORUS_OP_FLUSH,
};

/* A finished request. */
struct torus_completion {
	void *user;
	int error;			/* 0 or a positive errno */
};

/* What the glue hands every transport. */
struct torus_params {
	const char *uri;
	const void *opts;		/* the transport's own option block */
	unsigned int timeout_s;		/* per request and per set-up; 0: none */
	/* Set when the job must stop: blocking set-up gives up early. */
	const volatile bool *stop;
};

/* The parts of a job a transport may have to refuse, fio-free. */
struct torus_job {
	bool writes;
	bool trims;
	bool fua;			/* FUA on every write */
};

/* What a probe learned about the target, for validating the job. */
struct torus_target {
	uint64_t size;
	bool read_only;
	bool can_flush;			/* else flushes complete at once */
	bool can_trim;
	bool can_fua;
	uint32_t min_block;
	uint32_t max_block;
	char label[512];		/* names the target in messages */
	char detail[256];		/* e.g. how the handshake went */
};

struct torus_transport {
	const char *name;		/* as transport= names it */
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
	int (*probe)(const struct torus_params *p, struct torus_target *t,
		     char *err, size_t errlen);
	/* Refuses what the target cannot do for this job, naming the fix. */
	int (*check)(const struct torus_params *p, const struct torus_job *job,
		     const struct torus_target *t, char *err, size_t errlen);
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
	/*
	 * Waits until at least min are done or timeout passes, moves at most
	 * max into out[]; the count, or -errno.
	 */
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

/* transports.c: every transport, and lookups over them. */
extern const struct torus_transport *const torus_transports[];
extern const unsigned int torus_ntransports;

const struct torus_transport *torus_transport_for_uri(const char *uri);
const struct torus_transport *torus_transport_named(const char *name);
/* "nbd://... or nbd+unix://..." for messages. */
const char *torus_transport_uri_forms(void);
/* "nbd" or "nbd, tcmu": the names transport= takes. */
const char *torus_transport_names(void);

#endif /* TORUS_TRANSPORT_H */
