/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A job before any I/O: its transport, options and target resolved
 * (torus_job_resolve) and, once the target is known, the job checked
 * against it (torus_job_validate). Each prints its own message and
 * returns 1 on a refusal, 0 otherwise.
 */
#ifndef TORUS_JOB_CHECK_H
#define TORUS_JOB_CHECK_H

#include <stddef.h>

struct fio_file;
struct thread_data;
struct torus_params;
struct torus_target;
struct torus_transport;

/*
 * Picks the transport (transport= if it serves the uri, else the uri's
 * own, or transport= with the embedded server, started here), checks
 * option ranges (fio 3.33 lets a negative value through when an option's
 * minimum is 0) and fills *params, whose uri is uri (urilen bytes).
 */
int torus_job_resolve(struct thread_data *td,
		      const struct torus_transport **tp,
		      struct torus_params *params, char *uri, size_t urilen);

/* Checks the job against what the server offers, before any I/O. */
int torus_job_validate(struct thread_data *td,
		       const struct torus_transport *tp,
		       const struct torus_params *p,
		       const struct torus_target *t, struct fio_file *f);

#endif /* TORUS_JOB_CHECK_H */
