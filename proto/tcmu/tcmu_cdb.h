/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * SCSI command descriptor blocks and sense data for the TCMU transport,
 * written from the SBC and SPC standards. No I/O and no allocation: both
 * sides of the ring feed bytes in and get bytes or structs out.
 *
 * Initiator side (the engine, playing the kernel's initiator): encoders for
 * the commands it sends and decoders for the replies it reads at start.
 *
 * Target side (a handler): tcmu_cdb_parse() classifies a CDB and checks it,
 * and tcmu_unmap_parse() checks an UNMAP parameter list. On a bad command
 * both fill a struct tcmu_sense that tcmu_sense_fixed() turns into the
 * bytes a CHECK CONDITION carries.
 *
 * All multi-byte fields in CDBs and replies are big-endian.
 */
#ifndef TORUS_TCMU_CDB_H
#define TORUS_TCMU_CDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* ---- initiator side ---- */

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

/* ---- target side ---- */

enum tcmu_cdb_class {
	TCMU_CDB_TEST_UNIT_READY,
	TCMU_CDB_READ,
	TCMU_CDB_WRITE,
	TCMU_CDB_SYNC,
	TCMU_CDB_WRITE_SAME,
	TCMU_CDB_UNMAP,
	TCMU_CDB_INQUIRY,
	TCMU_CDB_READ_CAPACITY_10,
	TCMU_CDB_READ_CAPACITY_16,
	TCMU_CDB_MODE_SENSE,
	TCMU_CDB_REPORT_OPCODES,
};

#define TCMU_CDB_F_FUA		(1u << 0)
#define TCMU_CDB_F_DPO		(1u << 1)
#define TCMU_CDB_F_UNMAP	(1u << 2)	/* WRITE SAME */
#define TCMU_CDB_F_ANCHOR	(1u << 3)	/* WRITE SAME, UNMAP */
#define TCMU_CDB_F_NDOB		(1u << 4)	/* WRITE SAME: no data-out */
#define TCMU_CDB_F_IMMED	(1u << 5)	/* SYNCHRONIZE CACHE */
#define TCMU_CDB_F_TO_END	(1u << 6)	/* count 0: lba to the end */
#define TCMU_CDB_F_EVPD		(1u << 7)	/* INQUIRY: page is a VPD page */
#define TCMU_CDB_F_DBD		(1u << 8)	/* MODE SENSE */
#define TCMU_CDB_F_LLBAA	(1u << 9)	/* MODE SENSE(10) */
#define TCMU_CDB_F_PMI		(1u << 10)	/* READ CAPACITY (obsolete) */
#define TCMU_CDB_F_RCTD		(1u << 11)	/* REPORT SUPPORTED OPCODES */

struct tcmu_cdb {
	enum tcmu_cdb_class cls;
	uint8_t opcode;
	uint8_t len;		/* CDB length from the opcode's group */
	uint32_t flags;		/* TCMU_CDB_F_* */
	uint64_t lba;
	uint32_t blocks;	/* READ/WRITE(6) 0 already made 256 */
	uint32_t alloc_len;	/* allocation or parameter list length */
	uint8_t page;		/* INQUIRY VPD page, MODE SENSE page code */
	uint8_t subpage;	/* MODE SENSE */
	uint8_t pc;		/* MODE SENSE page control */
	uint8_t rso_options;	/* REPORT SUPPORTED OPCODES reporting options */
	uint8_t rso_opcode;
	uint16_t rso_sa;
};

/*
 * The CDB length an opcode's group implies (6, 10, 12 or 16), 0 for the
 * variable-length, reserved and vendor groups.
 */
unsigned int tcmu_cdb_len(uint8_t opcode);

/*
 * Parse the CDB in cdb[0..len) (len is what the caller has, at least the
 * group's length). Returns 0 with *c filled, or -1 with *sense set to the
 * ILLEGAL REQUEST to return (INVALID COMMAND OPERATION CODE, INVALID FIELD
 * IN CDB with the field pointer, or LBA OUT OF RANGE when lba + blocks
 * does not fit in 64 bits).
 */
int tcmu_cdb_parse(const uint8_t *cdb, size_t len, struct tcmu_cdb *c,
		   struct tcmu_sense *sense);

/*
 * Check c's lba and blocks against a medium of nr_blocks: 0, or -1 with
 * LBA OUT OF RANGE in *sense.
 */
int tcmu_cdb_check_range(const struct tcmu_cdb *c, uint64_t nr_blocks,
			 struct tcmu_sense *sense);

/*
 * Check the UNMAP parameter list in param[0..len) (len is the bytes the
 * initiator sent). Returns the number of whole block descriptors (a
 * trailing partial one is ignored, as SBC says), or -1 with *sense set.
 * max_descs 0 means no limit. Each descriptor's range is checked for
 * 64-bit overflow; check it against the medium with tcmu_unmap_get().
 */
int tcmu_unmap_parse(const uint8_t *param, size_t len, uint32_t max_descs,
		     struct tcmu_sense *sense);
/* Descriptor i of a list tcmu_unmap_parse() accepted. */
void tcmu_unmap_get(const uint8_t *param, uint32_t i, uint64_t *lba,
		    uint32_t *blocks);

/* ---- sense ---- */

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

#endif
