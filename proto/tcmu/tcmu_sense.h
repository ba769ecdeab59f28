/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * SCSI sense data, no I/O and no allocation: a condition in parts
 * (struct tcmu_sense), written as fixed-format sense for a CHECK
 * CONDITION, read back from fixed or descriptor sense, and turned into an
 * errno and a message.
 */
#ifndef TORUS_TCMU_SENSE_H
#define TORUS_TCMU_SENSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcmu_scsi.h"

/* Sense keys. */
#define SCSI_SK_NO_SENSE		0x0
#define SCSI_SK_RECOVERED_ERROR		0x1
#define SCSI_SK_NOT_READY		0x2
#define SCSI_SK_MEDIUM_ERROR		0x3
#define SCSI_SK_HARDWARE_ERROR		0x4
#define SCSI_SK_ILLEGAL_REQUEST		0x5
#define SCSI_SK_UNIT_ATTENTION		0x6
#define SCSI_SK_DATA_PROTECT		0x7
#define SCSI_SK_BLANK_CHECK		0x8
#define SCSI_SK_VENDOR_SPECIFIC		0x9
#define SCSI_SK_COPY_ABORTED		0xa
#define SCSI_SK_ABORTED_COMMAND		0xb
#define SCSI_SK_VOLUME_OVERFLOW		0xd
#define SCSI_SK_MISCOMPARE		0xe
#define SCSI_SK_COMPLETED		0xf

/* Additional sense codes (ASC, ASCQ 0 unless noted). */
#define SCSI_ASC_NOT_READY		0x04
#define SCSI_ASC_LU_COMM_FAILURE	0x08
#define SCSI_ASC_WRITE_ERROR		0x0c
#define SCSI_ASC_UNRECOVERED_READ_ERROR	0x11
#define SCSI_ASC_PARAMETER_LIST_LENGTH	0x1a
#define SCSI_ASC_INVALID_OPCODE		0x20
#define SCSI_ASC_LBA_OUT_OF_RANGE	0x21
#define SCSI_ASC_INVALID_FIELD_IN_CDB	0x24
#define SCSI_ASC_INVALID_FIELD_IN_PARAM	0x26
#define SCSI_ASC_WRITE_PROTECTED	0x27	/* ASCQ 7: space allocation failed */
#define SCSI_ASC_MEDIUM_NOT_PRESENT	0x3a
#define SCSI_ASC_INTERNAL_FAILURE	0x44

/* Fixed-format sense as tcmu_sense_fixed() writes it. */
#define TCMU_SENSE_FIXED_LEN		18
/* The sense buffer in a TCMU ring entry. */
#define TCMU_SENSE_BUFFERSIZE		96

/*
 * A sense condition in parts. The sense-key specific field is the field
 * pointer of ILLEGAL REQUEST: which CDB (cd) or parameter byte, and which
 * bit when bpv is set.
 */
struct tcmu_sense {
	uint8_t key;
	uint8_t asc;
	uint8_t ascq;
	bool info_valid;
	uint64_t info;
	bool sksv;
	bool cd;		/* the field is in the CDB, not the data */
	bool bpv;
	uint8_t bit;
	uint16_t field;
};

/* Fill s; field pointers for ILLEGAL REQUEST (bit < 0: no bit pointer). */
void tcmu_sense_set(struct tcmu_sense *s, uint8_t key, uint8_t asc,
		    uint8_t ascq);
void tcmu_sense_invalid_field(struct tcmu_sense *s, bool cdb, uint16_t byte,
			      int bit);

/*
 * Write s as current fixed-format sense. Returns TCMU_SENSE_FIXED_LEN, or
 * 0 when len is short. An information value wider than the fixed format's
 * 32 bits is written with VALID clear.
 */
size_t tcmu_sense_fixed(uint8_t *buf, size_t len, const struct tcmu_sense *s);

/*
 * Read fixed (0x70/0x71) or descriptor (0x72/0x73) sense. Returns 0, or
 * -1 when buf holds no recognisable sense (the caller reports EIO).
 */
int tcmu_sense_decode(const uint8_t *buf, size_t len, struct tcmu_sense *s);

/* A positive errno for a CHECK CONDITION with this sense (0: recovered). */
int tcmu_sense_errno(const struct tcmu_sense *s);
/* "MEDIUM ERROR" and the like; never NULL. */
const char *tcmu_sense_key_str(uint8_t key);
/* Text for the common ASC/ASCQ pairs, NULL for the others. */
const char *tcmu_sense_asc_str(uint8_t asc, uint8_t ascq);
/* "<key>: <asc text> (asc 0x.. ascq 0x..)" into buf; returns buf. */
const char *tcmu_sense_msg(const struct tcmu_sense *s, char *buf, size_t len);

#endif /* TORUS_TCMU_SENSE_H */
