/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The target's side of SCSI (a handler), no I/O and no allocation:
 * tcmu_cdb_parse() classifies a CDB and checks it, and tcmu_unmap_parse()
 * checks an UNMAP parameter list. On a bad command both fill a struct
 * tcmu_sense that tcmu_sense_fixed() turns into the bytes a CHECK
 * CONDITION carries.
 */
#ifndef TORUS_TCMU_CDB_PARSE_H
#define TORUS_TCMU_CDB_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcmu_sense.h"

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

#endif /* TORUS_TCMU_CDB_PARSE_H */
