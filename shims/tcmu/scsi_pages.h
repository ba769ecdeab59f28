/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The data-in replies the target builds itself (INQUIRY and its VPD
 * pages, READ CAPACITY, MODE SENSE, REPORT SUPPORTED OPERATION CODES),
 * internal to scsi_target.c. Each writes the whole reply into @buf
 * (SCSI_RESP_MAX bytes) and returns its length, whatever the allocation
 * length: the caller truncates. -1 with *s set for a CHECK CONDITION.
 */
#ifndef TCMU_SHIM_SCSI_PAGES_H
#define TCMU_SHIM_SCSI_PAGES_H

#include "scsi_target.h"

#define SCSI_ASC_SAVING_PARAMS_UNSUP	0x39

int scsi_inquiry(const struct scsi_target *t, const struct tcmu_cdb *c,
		 uint8_t *buf, struct tcmu_sense *s);
int scsi_read_capacity(const struct scsi_target *t, const struct tcmu_cdb *c,
		       uint8_t *buf, struct tcmu_sense *s);
int scsi_mode_sense(const struct scsi_target *t, const struct tcmu_cdb *c,
		    uint8_t *buf, struct tcmu_sense *s);
int scsi_report_opcodes(const struct scsi_target *t, const struct tcmu_cdb *c,
			uint8_t *buf, struct tcmu_sense *s);

#endif /* TCMU_SHIM_SCSI_PAGES_H */
