/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * SCSI's numbers for the TCMU transport, written from the SBC and SPC
 * standards: operation codes, status bytes, and the lengths of the pages
 * and lists both sides of a ring exchange. The initiator's CDBs are
 * tcmu_cdb_build.h, the target's parser tcmu_cdb_parse.h, sense data
 * (keys and codes too) tcmu_sense.h. All multi-byte fields in CDBs and
 * replies are big-endian.
 */
#ifndef TORUS_TCMU_SCSI_H
#define TORUS_TCMU_SCSI_H

/* Operation codes. */
#define SCSI_TEST_UNIT_READY		0x00
#define SCSI_READ_6			0x08
#define SCSI_WRITE_6			0x0a
#define SCSI_INQUIRY			0x12
#define SCSI_MODE_SENSE_6		0x1a
#define SCSI_READ_CAPACITY_10		0x25
#define SCSI_READ_10			0x28
#define SCSI_WRITE_10			0x2a
#define SCSI_SYNCHRONIZE_CACHE_10	0x35
#define SCSI_UNMAP			0x42
#define SCSI_MODE_SENSE_10		0x5a
#define SCSI_READ_16			0x88
#define SCSI_WRITE_16			0x8a
#define SCSI_SYNCHRONIZE_CACHE_16	0x91
#define SCSI_WRITE_SAME_16		0x93
#define SCSI_SERVICE_ACTION_IN_16	0x9e
#define SCSI_MAINTENANCE_IN		0xa3
#define SCSI_READ_12			0xa8
#define SCSI_WRITE_12			0xaa

/* Service actions. */
#define SCSI_SAI_READ_CAPACITY_16	0x10
#define SCSI_MI_REPORT_SUPPORTED_OPCODES 0x0c

/* Status bytes. */
#define SCSI_STATUS_GOOD		0x00
#define SCSI_STATUS_CHECK_CONDITION	0x02

/* The parameter list tcmu_unmap_param() writes: header + one descriptor. */
#define TCMU_UNMAP_PARAM_LEN		24
#define TCMU_UNMAP_DESC_LEN		16

/* Reply lengths the engine asks for. */
#define TCMU_READ_CAPACITY_16_LEN	32
#define TCMU_INQUIRY_STD_LEN		36
#define TCMU_VPD_BLOCK_LIMITS		0xb0
#define TCMU_VPD_BLOCK_LIMITS_LEN	64
#define TCMU_MODE_PAGE_CACHING		0x08
/* Header (4) + block descriptor (8) + caching page (20). */
#define TCMU_MODE_SENSE_CACHING_LEN	32

#endif /* TORUS_TCMU_SCSI_H */
