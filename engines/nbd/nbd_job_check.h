/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What an NBD server must offer for a job, the same for every NBD
 * transport (native and libnbd): trims and FUA, refused with one message.
 */
#ifndef TORUS_NBD_JOB_CHECK_H
#define TORUS_NBD_JOB_CHECK_H

#include <stddef.h>

struct torus_params;
struct torus_job;
struct torus_target;

int nbd_job_check(const struct torus_params *p, const struct torus_job *job,
		  const struct torus_target *t, char *err, size_t errlen);

#endif /* TORUS_NBD_JOB_CHECK_H */
