/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The initiator's side of SCSI (the engine, playing the kernel's
 * initiator), no I/O and no allocation: encoders for the CDBs it sends
 * and decoders for the replies it reads at start.
 */
#ifndef TORUS_TCMU_CDB_BUILD_H
#define TORUS_TCMU_CDB_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcmu_scsi.h"

/* Each writes the whole CDB (16, 10 or 6 bytes), reserved bytes zeroed. */
void tcmu_cdb_read16(uint8_t cdb[16], uint64_t lba, uint32_t blocks);
void tcmu_cdb_write16(uint8_t cdb[16], uint64_t lba, uint32_t blocks,
		      bool fua);
/* blocks 0 means from lba to the end of the medium. */
void tcmu_cdb_sync16(uint8_t cdb[16], uint64_t lba, uint32_t blocks);
/* The data-out buffer is one logical block (zeroes for a trim). */
void tcmu_cdb_write_same16(uint8_t cdb[16], uint64_t lba, uint32_t blocks,
			   bool unmap);
void tcmu_cdb_unmap(uint8_t cdb[10], uint16_t param_len);
/* Writes TCMU_UNMAP_PARAM_LEN bytes; returns that or 0 when len is short. */
size_t tcmu_unmap_param(uint8_t *buf, size_t len, uint64_t lba,
			uint32_t blocks);
void tcmu_cdb_inquiry(uint8_t cdb[6], bool evpd, uint8_t page,
		      uint16_t alloc_len);
void tcmu_cdb_read_capacity16(uint8_t cdb[16], uint32_t alloc_len);
/* MODE SENSE(6) for the current values of one page. */
void tcmu_cdb_mode_sense6(uint8_t cdb[6], bool dbd, uint8_t page,
			  uint8_t alloc_len);

struct tcmu_capacity {
	uint64_t last_lba;
	uint32_t block_len;
	uint8_t phys_exp;	/* logical blocks per physical block, log2 */
	bool prot_en;
	bool lbpme;		/* thin provisioned: UNMAP is worth sending */
	bool lbprz;		/* unmapped blocks read as zeroes */
};

struct tcmu_inquiry {
	uint8_t qualifier;
	uint8_t device_type;	/* 0 = direct access block device */
	uint8_t version;
	bool protect;
	bool cmdque;
	char vendor[9];		/* trailing spaces dropped, NUL-terminated */
	char product[17];
	char revision[5];
};

struct tcmu_block_limits {
	uint32_t opt_granularity;	/* blocks */
	uint32_t max_transfer;		/* blocks, 0 = no limit reported */
	uint32_t opt_transfer;
	uint32_t max_unmap_lbas;	/* 0 = not reported (short page) */
	uint32_t max_unmap_descs;
	uint32_t unmap_granularity;
	uint64_t max_write_same;
};

/* From a MODE SENSE(6) reply: the header and the caching page. */
struct tcmu_mode_info {
	bool wp;		/* write protected: the medium is read-only */
	bool dpofua;		/* DPO and FUA are honoured */
	bool has_caching;	/* the caching page was in the reply */
	bool wce;		/* a write cache: SYNCHRONIZE CACHE matters */
};

/* Decoders return 0, or -1 with msg set when the reply is malformed. */
int tcmu_read_capacity16_decode(const uint8_t *buf, size_t len,
				struct tcmu_capacity *cap, const char **msg);
int tcmu_inquiry_std_decode(const uint8_t *buf, size_t len,
			    struct tcmu_inquiry *inq, const char **msg);
int tcmu_vpd_block_limits_decode(const uint8_t *buf, size_t len,
				 struct tcmu_block_limits *bl,
				 const char **msg);
/* len: the bytes that arrived (the data-in length). */
int tcmu_mode_sense6_decode(const uint8_t *buf, size_t len,
			    struct tcmu_mode_info *mi, const char **msg);

#endif /* TORUS_TCMU_CDB_BUILD_H */
