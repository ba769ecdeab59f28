// SPDX-License-Identifier: GPL-2.0-only
/*
 * The target's CDB parser and UNMAP lists (see tcmu_cdb_parse.h), written
 * from SBC-3/SBC-4 and SPC-4.
 */
#include <string.h>

#include "torus_be.h"
#include "tcmu_cdb_parse.h"

unsigned int tcmu_cdb_len(uint8_t opcode)
{
	switch (opcode >> 5) {
	case 0:
		return 6;
	case 1:
	case 2:
		return 10;
	case 4:
		return 16;
	case 5:
		return 12;
	default:
		/* 3: variable length and reserved; 6, 7: vendor specific. */
		return 0;
	}
}

static int highest_bit(uint8_t v)
{
	int b = 7;

	while (b > 0 && !(v & (1u << b)))
		b--;
	return b;
}

/*
 * Reject set bits of cdb[byte] under mask: reserved fields, obsolete ones
 * whose meaning we do not offer, and features (protection, duration
 * limits) this target does not claim.
 */
static int chk(const uint8_t *cdb, unsigned int byte, uint8_t mask,
	       struct tcmu_sense *s)
{
	uint8_t v = cdb[byte] & mask;

	if (!v)
		return 0;
	tcmu_sense_invalid_field(s, true, byte, highest_bit(v));
	return -1;
}

static int chk_bytes(const uint8_t *cdb, unsigned int from, unsigned int to,
		     struct tcmu_sense *s)
{
	unsigned int i;

	for (i = from; i <= to; i++)
		if (chk(cdb, i, 0xff, s))
			return -1;
	return 0;
}

static int lba_range(struct tcmu_cdb *c, struct tcmu_sense *s)
{
	/* lba + blocks must not wrap: the last block would not exist. */
	if (c->blocks && c->blocks > UINT64_MAX - c->lba) {
		tcmu_sense_set(s, SCSI_SK_ILLEGAL_REQUEST,
			       SCSI_ASC_LBA_OUT_OF_RANGE, 0);
		return -1;
	}
	return 0;
}

/* READ/WRITE 10, 12, 16: byte 1 and the group-number byte. */
static int parse_rw(const uint8_t *cdb, struct tcmu_cdb *c, bool write,
		    struct tcmu_sense *s)
{
	/*
	 * 7-5: RD/WRPROTECT, no protection information here; 0: RELADR
	 * (obsolete) in 10/12, DLD2 in 16. READ's bit 2 (RARC) is a hint;
	 * bit 1 (FUA_NV, obsolete) may be ignored.
	 */
	uint8_t mask = 0xe1 | (write ? 0x04 : 0);
	unsigned int grp;

	c->cls = write ? TCMU_CDB_WRITE : TCMU_CDB_READ;
	if (chk(cdb, 1, mask, s))
		return -1;
	if (cdb[1] & 0x08)
		c->flags |= TCMU_CDB_F_FUA;
	if (cdb[1] & 0x10)
		c->flags |= TCMU_CDB_F_DPO;
	switch (c->len) {
	case 10:
		c->lba = get_be32(cdb + 2);
		c->blocks = get_be16(cdb + 7);
		grp = 6;
		break;
	case 12:
		c->lba = get_be32(cdb + 2);
		c->blocks = get_be32(cdb + 6);
		grp = 10;
		break;
	default:
		c->lba = get_be64(cdb + 2);
		c->blocks = get_be32(cdb + 10);
		grp = 14;
		break;
	}
	/* Reserved in 10/12, DLD1/DLD0 in 16; the group number is free. */
	if (chk(cdb, grp, 0xc0, s))
		return -1;
	return lba_range(c, s);
}

static int parse_rw6(const uint8_t *cdb, struct tcmu_cdb *c, bool write,
		     struct tcmu_sense *s)
{
	c->cls = write ? TCMU_CDB_WRITE : TCMU_CDB_READ;
	/* Bits 7-5 were SCSI-2's LUN: reserved since. */
	if (chk(cdb, 1, 0xe0, s))
		return -1;
	c->lba = get_be24(cdb + 1) & 0x1fffff;
	/* The 6-byte commands cannot ask for zero blocks: 0 means 256. */
	c->blocks = cdb[4] ? cdb[4] : 256;
	return 0;
}

static int parse_sync(const uint8_t *cdb, struct tcmu_cdb *c,
		      struct tcmu_sense *s)
{
	c->cls = TCMU_CDB_SYNC;
	/* 7-3 reserved, 2 SYNC_NV (obsolete, ignored), 0 RELADR/reserved. */
	if (chk(cdb, 1, 0xf9, s))
		return -1;
	if (cdb[1] & 0x02)
		c->flags |= TCMU_CDB_F_IMMED;
	if (c->len == 10) {
		c->lba = get_be32(cdb + 2);
		c->blocks = get_be16(cdb + 7);
		if (chk(cdb, 6, 0xc0, s))
			return -1;
	} else {
		c->lba = get_be64(cdb + 2);
		c->blocks = get_be32(cdb + 10);
		if (chk(cdb, 14, 0xc0, s))
			return -1;
	}
	if (!c->blocks)
		c->flags |= TCMU_CDB_F_TO_END;
	return lba_range(c, s);
}

static int parse_write_same(const uint8_t *cdb, struct tcmu_cdb *c,
			    struct tcmu_sense *s)
{
	c->cls = TCMU_CDB_WRITE_SAME;
	/* 7-5 WRPROTECT; 2-1 PBDATA/LBDATA, obsolete and not offered. */
	if (chk(cdb, 1, 0xe6, s))
		return -1;
	if (cdb[1] & 0x10)
		c->flags |= TCMU_CDB_F_ANCHOR;
	if (cdb[1] & 0x08)
		c->flags |= TCMU_CDB_F_UNMAP;
	if (cdb[1] & 0x01)
		c->flags |= TCMU_CDB_F_NDOB;
	c->lba = get_be64(cdb + 2);
	c->blocks = get_be32(cdb + 10);
	if (chk(cdb, 14, 0xc0, s))
		return -1;
	if (!c->blocks)
		c->flags |= TCMU_CDB_F_TO_END;
	return lba_range(c, s);
}

static int parse_unmap(const uint8_t *cdb, struct tcmu_cdb *c,
		       struct tcmu_sense *s)
{
	c->cls = TCMU_CDB_UNMAP;
	if (chk(cdb, 1, 0xfe, s) || chk_bytes(cdb, 2, 5, s) ||
	    chk(cdb, 6, 0xc0, s))
		return -1;
	if (cdb[1] & 0x01)
		c->flags |= TCMU_CDB_F_ANCHOR;
	c->alloc_len = get_be16(cdb + 7);
	return 0;
}

static int parse_inquiry(const uint8_t *cdb, struct tcmu_cdb *c,
			 struct tcmu_sense *s)
{
	c->cls = TCMU_CDB_INQUIRY;
	/* Bit 1 was CMDDT, obsolete. */
	if (chk(cdb, 1, 0xfe, s))
		return -1;
	c->page = cdb[2];
	if (cdb[1] & 0x01) {
		c->flags |= TCMU_CDB_F_EVPD;
	} else if (c->page) {
		/* A page code without EVPD asks for nothing that exists. */
		tcmu_sense_invalid_field(s, true, 2, -1);
		return -1;
	}
	c->alloc_len = get_be16(cdb + 3);
	return 0;
}

static int parse_read_capacity10(const uint8_t *cdb, struct tcmu_cdb *c,
				 struct tcmu_sense *s)
{
	c->cls = TCMU_CDB_READ_CAPACITY_10;
	if (chk(cdb, 1, 0xff, s) || chk_bytes(cdb, 6, 7, s) ||
	    chk(cdb, 8, 0xfe, s))
		return -1;
	if (cdb[8] & 0x01)
		c->flags |= TCMU_CDB_F_PMI;
	c->lba = get_be32(cdb + 2);
	/* SBC: an LBA without PMI is an invalid field. */
	if (c->lba && !(c->flags & TCMU_CDB_F_PMI)) {
		tcmu_sense_invalid_field(s, true, 2, -1);
		return -1;
	}
	c->alloc_len = 8;
	return 0;
}

static int parse_sai16(const uint8_t *cdb, struct tcmu_cdb *c,
		       struct tcmu_sense *s)
{
	if (chk(cdb, 1, 0xe0, s))
		return -1;
	/* An unsupported service action is an invalid field (SPC). */
	if ((cdb[1] & 0x1f) != SCSI_SAI_READ_CAPACITY_16) {
		tcmu_sense_invalid_field(s, true, 1, 4);
		return -1;
	}
	c->cls = TCMU_CDB_READ_CAPACITY_16;
	if (chk(cdb, 14, 0xfe, s))
		return -1;
	if (cdb[14] & 0x01)
		c->flags |= TCMU_CDB_F_PMI;
	c->lba = get_be64(cdb + 2);
	if (c->lba && !(c->flags & TCMU_CDB_F_PMI)) {
		tcmu_sense_invalid_field(s, true, 2, -1);
		return -1;
	}
	c->alloc_len = get_be32(cdb + 10);
	return 0;
}

static int parse_mode_sense(const uint8_t *cdb, struct tcmu_cdb *c,
			    struct tcmu_sense *s)
{
	c->cls = TCMU_CDB_MODE_SENSE;
	if (c->len == 6) {
		if (chk(cdb, 1, 0xf7, s))
			return -1;
		c->alloc_len = cdb[4];
	} else {
		if (chk(cdb, 1, 0xe7, s) || chk_bytes(cdb, 4, 6, s))
			return -1;
		if (cdb[1] & 0x10)
			c->flags |= TCMU_CDB_F_LLBAA;
		c->alloc_len = get_be16(cdb + 7);
	}
	if (cdb[1] & 0x08)
		c->flags |= TCMU_CDB_F_DBD;
	c->pc = cdb[2] >> 6;
	c->page = cdb[2] & 0x3f;
	c->subpage = cdb[3];
	return 0;
}

static int parse_maintenance_in(const uint8_t *cdb, struct tcmu_cdb *c,
				struct tcmu_sense *s)
{
	if (chk(cdb, 1, 0xe0, s))
		return -1;
	if ((cdb[1] & 0x1f) != SCSI_MI_REPORT_SUPPORTED_OPCODES) {
		tcmu_sense_invalid_field(s, true, 1, 4);
		return -1;
	}
	c->cls = TCMU_CDB_REPORT_OPCODES;
	if (chk(cdb, 2, 0x78, s) || chk(cdb, 10, 0xff, s))
		return -1;
	c->rso_options = cdb[2] & 0x07;
	/* SPC-4 defines reporting options 0 to 3. */
	if (c->rso_options > 3) {
		tcmu_sense_invalid_field(s, true, 2, 2);
		return -1;
	}
	if (cdb[2] & 0x80)
		c->flags |= TCMU_CDB_F_RCTD;
	c->rso_opcode = cdb[3];
	c->rso_sa = get_be16(cdb + 4);
	c->alloc_len = get_be32(cdb + 6);
	return 0;
}

int tcmu_cdb_parse(const uint8_t *cdb, size_t len, struct tcmu_cdb *c,
		   struct tcmu_sense *s)
{
	unsigned int clen;
	int ret;

	memset(c, 0, sizeof(*c));
	memset(s, 0, sizeof(*s));
	if (len < 1) {
		tcmu_sense_set(s, SCSI_SK_ILLEGAL_REQUEST,
			       SCSI_ASC_INVALID_OPCODE, 0);
		return -1;
	}
	c->opcode = cdb[0];
	clen = tcmu_cdb_len(cdb[0]);
	if (!clen) {
		tcmu_sense_set(s, SCSI_SK_ILLEGAL_REQUEST,
			       SCSI_ASC_INVALID_OPCODE, 0);
		return -1;
	}
	c->len = clen;
	/* A CDB cut short of its group's length: its last fields are gone. */
	if (len < clen) {
		tcmu_sense_invalid_field(s, true, len, -1);
		return -1;
	}

	switch (cdb[0]) {
	case SCSI_TEST_UNIT_READY:
		c->cls = TCMU_CDB_TEST_UNIT_READY;
		ret = chk_bytes(cdb, 1, 4, s);
		break;
	case SCSI_READ_6:
	case SCSI_WRITE_6:
		ret = parse_rw6(cdb, c, cdb[0] == SCSI_WRITE_6, s);
		break;
	case SCSI_READ_10:
	case SCSI_READ_12:
	case SCSI_READ_16:
		ret = parse_rw(cdb, c, false, s);
		break;
	case SCSI_WRITE_10:
	case SCSI_WRITE_12:
	case SCSI_WRITE_16:
		ret = parse_rw(cdb, c, true, s);
		break;
	case SCSI_SYNCHRONIZE_CACHE_10:
	case SCSI_SYNCHRONIZE_CACHE_16:
		ret = parse_sync(cdb, c, s);
		break;
	case SCSI_WRITE_SAME_16:
		ret = parse_write_same(cdb, c, s);
		break;
	case SCSI_UNMAP:
		ret = parse_unmap(cdb, c, s);
		break;
	case SCSI_INQUIRY:
		ret = parse_inquiry(cdb, c, s);
		break;
	case SCSI_READ_CAPACITY_10:
		ret = parse_read_capacity10(cdb, c, s);
		break;
	case SCSI_SERVICE_ACTION_IN_16:
		ret = parse_sai16(cdb, c, s);
		break;
	case SCSI_MODE_SENSE_6:
	case SCSI_MODE_SENSE_10:
		ret = parse_mode_sense(cdb, c, s);
		break;
	case SCSI_MAINTENANCE_IN:
		ret = parse_maintenance_in(cdb, c, s);
		break;
	default:
		tcmu_sense_set(s, SCSI_SK_ILLEGAL_REQUEST,
			       SCSI_ASC_INVALID_OPCODE, 0);
		return -1;
	}
	if (ret)
		return -1;
	/*
	 * Control byte: 5-3 reserved, 2 NACA and 0 LINK (obsolete) ask for
	 * what this target does not do; 7-6 are vendor specific.
	 */
	return chk(cdb, clen - 1, 0x3f, s);
}

int tcmu_cdb_check_range(const struct tcmu_cdb *c, uint64_t nr_blocks,
			 struct tcmu_sense *s)
{
	/* The first block must exist even when no block is transferred. */
	if (c->lba >= nr_blocks || c->blocks > nr_blocks - c->lba) {
		tcmu_sense_set(s, SCSI_SK_ILLEGAL_REQUEST,
			       SCSI_ASC_LBA_OUT_OF_RANGE, 0);
		return -1;
	}
	return 0;
}

int tcmu_unmap_parse(const uint8_t *param, size_t len, uint32_t max_descs,
		     struct tcmu_sense *s)
{
	size_t dlen, n, i;

	memset(s, 0, sizeof(*s));
	if (len == 0)
		return 0;
	/* A list that cannot hold its own header. */
	if (len < 8) {
		tcmu_sense_set(s, SCSI_SK_ILLEGAL_REQUEST,
			       SCSI_ASC_PARAMETER_LIST_LENGTH, 0);
		return -1;
	}
	/* The data length counts from byte 2; it must cover the header. */
	if (get_be16(param) < 6) {
		tcmu_sense_invalid_field(s, false, 0, -1);
		return -1;
	}
	dlen = get_be16(param + 2);
	/* Descriptors the initiator did not send are not there. */
	if (dlen > len - 8)
		dlen = len - 8;
	if (dlen > (size_t)get_be16(param) - 6)
		dlen = get_be16(param) - 6;
	n = dlen / TCMU_UNMAP_DESC_LEN;
	if (max_descs && n > max_descs) {
		tcmu_sense_invalid_field(s, false, 2, -1);
		return -1;
	}
	for (i = 0; i < n; i++) {
		const uint8_t *d = param + 8 + i * TCMU_UNMAP_DESC_LEN;
		uint64_t lba = get_be64(d);
		uint32_t nr = get_be32(d + 8);

		if (nr && nr > UINT64_MAX - lba) {
			tcmu_sense_set(s, SCSI_SK_ILLEGAL_REQUEST,
				       SCSI_ASC_LBA_OUT_OF_RANGE, 0);
			return -1;
		}
	}
	return n;
}

void tcmu_unmap_get(const uint8_t *param, uint32_t i, uint64_t *lba,
		    uint32_t *blocks)
{
	const uint8_t *d = param + 8 + (size_t)i * TCMU_UNMAP_DESC_LEN;

	*lba = get_be64(d);
	*blocks = get_be32(d + 8);
}
