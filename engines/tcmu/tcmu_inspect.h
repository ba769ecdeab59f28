/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The TCMU transport before any I/O (tcmu_inspect.c): its options, the
 * uris it serves, attaching a ring to the uri's handler host, what the
 * device says about itself (the glue's target) and the checks that refuse
 * what it cannot do for the job. tcmu_transport.c does the I/O.
 */
#ifndef TORUS_TCMU_INSPECT_H
#define TORUS_TCMU_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../transport.h"
#include "tcmu_client.h"
#include "tcmu_identify.h"
#include "tcmu_ring.h"

/* The kernel's defaults for a user backstore. */
#define DEF_RING_SIZE		"8M"	/* cmd_ring_size_mb */
#define DEF_DATA_SIZE		"1G"	/* max_data_area_mb */
/* 0: hw_max_sectors, 128 of the device's logical blocks */
#define DEF_MAX_TRANSFER	"0"
#define HW_MAX_SECTORS		128u
#define MIN_RING_SIZE		(64u << 10)
#define MAX_RING_SIZE		(256u << 20)
#define MIN_DATA_SIZE		TCMU_DEF_BLK_SIZE
#define MAX_DATA_SIZE		(64ull << 30)
#define MIN_TRANSFER		512u
#define MAX_TRANSFER		(1u << 30)

enum tcmu_ring_mode {
	RING_SHARED,
	RING_PRIVATE,
};

enum tcmu_trim_mode {
	TRIM_UNMAP,
	TRIM_WRITE_SAME,
};

/* The options block the glue lays out for this transport. */
struct tcmu_opts {
	unsigned long long ring_size;
	unsigned long long data_size;
	unsigned long long max_transfer;
	unsigned int trim_mode;
	unsigned int hold_batch;
	unsigned int ring;
};

int tcmu_opts_check(const void *opts, char *err, size_t errlen);
bool tcmu_handles(const char *uri);
/* The split size asked for: max_transfer, or the kernel's default. */
uint64_t tcmu_split_size(const struct tcmu_opts *o, uint32_t block_size);
/* The data area must hold one whole command, known with the device. */
int tcmu_check_data_size(const struct tcmu_opts *o,
			 const struct torus_target *t, char *err,
			 size_t errlen);
/* A ring attached to the uri's handler host; label names it in messages. */
struct tcmu_client *tcmu_target_attach(const struct torus_params *p,
				       const struct tcmu_client_cfg *cfg,
				       char *label, size_t labellen,
				       char *err, size_t errlen);
/* What the device said, as the glue's target. */
void tcmu_target_describe(const struct tcmu_dev *dev, const char *label,
			  struct torus_target *t);
/* The transport's inspect() and check() (struct torus_transport). */
int tcmu_inspect(const struct torus_params *p, struct torus_target *t,
		 char *err, size_t errlen);
int tcmu_job_check(const struct torus_params *p, const struct torus_job *job,
		   const struct torus_target *t, char *err, size_t errlen);

#endif /* TORUS_TCMU_INSPECT_H */
