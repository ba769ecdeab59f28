// SPDX-License-Identifier: GPL-2.0-only
/*
 * SCSI CDBs and sense data from byte buffers, written from SBC-3/SBC-4 and
 * SPC-4. No I/O, no allocation.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "torus_be.h"
#include "tcmu_cdb.h"

/* ---- initiator side ---- */

static void cdb16_rw(uint8_t cdb[16], uint8_t op, uint8_t b1, uint64_t lba,
		     uint32_t blocks)
{
	memset(cdb, 0, 16);
	cdb[0] = op;
	cdb[1] = b1;
	put_be64(cdb + 2, lba);
	put_be32(cdb + 10, blocks);
}

void tcmu_cdb_read16(uint8_t cdb[16], uint64_t lba, uint32_t blocks)
{
	cdb16_rw(cdb, SCSI_READ_16, 0, lba, blocks);
}

void tcmu_cdb_write16(uint8_t cdb[16], uint64_t lba, uint32_t blocks,
		      bool fua)
{
	cdb16_rw(cdb, SCSI_WRITE_16, fua ? 0x08 : 0, lba, blocks);
}

void tcmu_cdb_sync16(uint8_t cdb[16], uint64_t lba, uint32_t blocks)
{
	cdb16_rw(cdb, SCSI_SYNCHRONIZE_CACHE_16, 0, lba, blocks);
}

void tcmu_cdb_write_same16(uint8_t cdb[16], uint64_t lba, uint32_t blocks,
			   bool unmap)
{
	cdb16_rw(cdb, SCSI_WRITE_SAME_16, unmap ? 0x08 : 0, lba, blocks);
}

void tcmu_cdb_unmap(uint8_t cdb[10], uint16_t param_len)
{
	memset(cdb, 0, 10);
	cdb[0] = SCSI_UNMAP;
	put_be16(cdb + 7, param_len);
}

size_t tcmu_unmap_param(uint8_t *buf, size_t len, uint64_t lba,
			uint32_t blocks)
{
	if (len < TCMU_UNMAP_PARAM_LEN)
		return 0;
	memset(buf, 0, TCMU_UNMAP_PARAM_LEN);
	/* Both lengths count the bytes after themselves. */
	put_be16(buf, TCMU_UNMAP_PARAM_LEN - 2);
	put_be16(buf + 2, TCMU_UNMAP_DESC_LEN);
	put_be64(buf + 8, lba);
	put_be32(buf + 16, blocks);
	return TCMU_UNMAP_PARAM_LEN;
}

void tcmu_cdb_inquiry(uint8_t cdb[6], bool evpd, uint8_t page,
		      uint16_t alloc_len)
{
	memset(cdb, 0, 6);
	cdb[0] = SCSI_INQUIRY;
	cdb[1] = evpd ? 0x01 : 0;
	cdb[2] = evpd ? page : 0;
	put_be16(cdb + 3, alloc_len);
}

void tcmu_cdb_read_capacity16(uint8_t cdb[16], uint32_t alloc_len)
{
	memset(cdb, 0, 16);
	cdb[0] = SCSI_SERVICE_ACTION_IN_16;
	cdb[1] = SCSI_SAI_READ_CAPACITY_16;
	put_be32(cdb + 10, alloc_len);
}

void tcmu_cdb_mode_sense6(uint8_t cdb[6], bool dbd, uint8_t page,
			  uint8_t alloc_len)
{
	memset(cdb, 0, 6);
	cdb[0] = SCSI_MODE_SENSE_6;
	cdb[1] = dbd ? 0x08 : 0;
	cdb[2] = page & 0x3f;		/* page control 0: current values */
	cdb[4] = alloc_len;
}

static int bad(const char **msg, const char *m)
{
	if (msg)
		*msg = m;
	return -1;
}

int tcmu_read_capacity16_decode(const uint8_t *buf, size_t len,
				struct tcmu_capacity *cap, const char **msg)
{
	memset(cap, 0, sizeof(*cap));
	/* Last LBA and block length are the least a target may return. */
	if (len < 12)
		return bad(msg, "READ CAPACITY(16) reply shorter than 12 bytes");
	cap->last_lba = get_be64(buf);
	cap->block_len = get_be32(buf + 8);
	if (cap->block_len == 0)
		return bad(msg, "READ CAPACITY(16) reports a block length of 0");
	if (cap->last_lba == UINT64_MAX)
		return bad(msg, "READ CAPACITY(16) reports 2^64 blocks");
	if (len >= 13)
		cap->prot_en = buf[12] & 0x01;
	if (len >= 14)
		cap->phys_exp = buf[13] & 0x0f;
	if (len >= 15) {
		cap->lbpme = buf[14] & 0x80;
		cap->lbprz = buf[14] & 0x40;
	}
	return 0;
}

/* Copy an ASCII field without its trailing space padding. */
static void copy_ascii(char *dst, const uint8_t *src, size_t n)
{
	const uint8_t *nul = memchr(src, 0, n);

	/* A NUL ends the string early: strip the spaces before it too. */
	if (nul)
		n = nul - src;
	while (n && src[n - 1] == ' ')
		n--;
	memcpy(dst, src, n);
	dst[n] = 0;
}

int tcmu_inquiry_std_decode(const uint8_t *buf, size_t len,
			    struct tcmu_inquiry *inq, const char **msg)
{
	memset(inq, 0, sizeof(*inq));
	if (len < TCMU_INQUIRY_STD_LEN)
		return bad(msg, "INQUIRY reply shorter than 36 bytes");
	if ((buf[3] & 0x0f) != 2)
		return bad(msg, "INQUIRY response data format is not 2");
	if (buf[4] < TCMU_INQUIRY_STD_LEN - 5)
		return bad(msg, "INQUIRY additional length below 31");
	inq->qualifier = buf[0] >> 5;
	inq->device_type = buf[0] & 0x1f;
	inq->version = buf[2];
	inq->protect = buf[5] & 0x01;
	inq->cmdque = buf[7] & 0x02;
	copy_ascii(inq->vendor, buf + 8, 8);
	copy_ascii(inq->product, buf + 16, 16);
	copy_ascii(inq->revision, buf + 32, 4);
	return 0;
}

int tcmu_vpd_block_limits_decode(const uint8_t *buf, size_t len,
				 struct tcmu_block_limits *bl,
				 const char **msg)
{
	size_t plen;

	memset(bl, 0, sizeof(*bl));
	if (len < 4)
		return bad(msg, "Block Limits VPD reply shorter than 4 bytes");
	if (buf[1] != TCMU_VPD_BLOCK_LIMITS)
		return bad(msg, "VPD reply is not the Block Limits page");
	plen = get_be16(buf + 2);
	/* SBC-2's page ends after the optimal transfer length. */
	if (plen < 0x0c)
		return bad(msg, "Block Limits VPD page length below 12");
	if (len < 4 + plen)
		return bad(msg, "Block Limits VPD reply shorter than its page length");
	bl->opt_granularity = get_be16(buf + 6);
	bl->max_transfer = get_be32(buf + 8);
	bl->opt_transfer = get_be32(buf + 12);
	/* The unmap fields came with SBC-3's 0x3c-byte page. */
	if (plen >= 0x3c) {
		bl->max_unmap_lbas = get_be32(buf + 20);
		bl->max_unmap_descs = get_be32(buf + 24);
		bl->unmap_granularity = get_be32(buf + 28);
		bl->max_write_same = get_be64(buf + 36);
	}
	return 0;
}

int tcmu_mode_sense6_decode(const uint8_t *buf, size_t len,
			    struct tcmu_mode_info *mi, const char **msg)
{
	size_t end, off;

	memset(mi, 0, sizeof(*mi));
	if (len < 4)
		return bad(msg, "MODE SENSE(6) reply shorter than its 4-byte header");
	/* The mode data length does not count itself. */
	end = (size_t)buf[0] + 1;
	if (end < 4)
		return bad(msg, "MODE SENSE(6) data length below its header");
	if (end > len)
		end = len;	/* truncated by the allocation length */
	mi->wp = buf[2] & 0x80;
	mi->dpofua = buf[2] & 0x10;
	off = 4 + (size_t)buf[3];	/* past the block descriptors */
	while (off + 2 <= end) {
		uint8_t code = buf[off] & 0x3f;
		size_t plen = (size_t)buf[off + 1] + 2;

		if (buf[off] & 0x40)	/* a subpage: not ours */
			plen = off + 4 <= end ?
			       (size_t)get_be16(buf + off + 2) + 4 : end - off;
		if (code == TCMU_MODE_PAGE_CACHING && off + 3 <= end) {
			mi->has_caching = true;
			mi->wce = buf[off + 2] & 0x04;
		}
		off += plen;
	}
	return 0;
}

/* ---- sense ---- */

void tcmu_sense_set(struct tcmu_sense *s, uint8_t key, uint8_t asc,
		    uint8_t ascq)
{
	memset(s, 0, sizeof(*s));
	s->key = key;
	s->asc = asc;
	s->ascq = ascq;
}

void tcmu_sense_invalid_field(struct tcmu_sense *s, bool cdb, uint16_t byte,
			      int bit)
{
	tcmu_sense_set(s, SCSI_SK_ILLEGAL_REQUEST,
		       cdb ? SCSI_ASC_INVALID_FIELD_IN_CDB :
			     SCSI_ASC_INVALID_FIELD_IN_PARAM, 0);
	s->sksv = true;
	s->cd = cdb;
	s->field = byte;
	if (bit >= 0) {
		s->bpv = true;
		s->bit = bit & 7;
	}
}

size_t tcmu_sense_fixed(uint8_t *buf, size_t len, const struct tcmu_sense *s)
{
	if (len < TCMU_SENSE_FIXED_LEN)
		return 0;
	memset(buf, 0, TCMU_SENSE_FIXED_LEN);
	buf[0] = 0x70;
	if (s->info_valid && s->info <= UINT32_MAX) {
		buf[0] |= 0x80;
		put_be32(buf + 3, s->info);
	}
	buf[2] = s->key & 0x0f;
	buf[7] = TCMU_SENSE_FIXED_LEN - 8;
	buf[12] = s->asc;
	buf[13] = s->ascq;
	if (s->sksv) {
		buf[15] = 0x80 | (s->cd ? 0x40 : 0) |
			  (s->bpv ? 0x08 | (s->bit & 7) : 0);
		put_be16(buf + 16, s->field);
	}
	return TCMU_SENSE_FIXED_LEN;
}

static void sks_decode(struct tcmu_sense *s, const uint8_t *p)
{
	if (!(p[0] & 0x80))
		return;
	s->sksv = true;
	/* Only ILLEGAL REQUEST's sense-key specific field is a pointer. */
	if (s->key != SCSI_SK_ILLEGAL_REQUEST)
		return;
	s->cd = p[0] & 0x40;
	s->bpv = p[0] & 0x08;
	s->bit = p[0] & 0x07;
	s->field = get_be16(p + 1);
}

int tcmu_sense_decode(const uint8_t *buf, size_t len, struct tcmu_sense *s)
{
	size_t avail, off;
	uint8_t rc;

	memset(s, 0, sizeof(*s));
	if (len < 1)
		return -1;
	rc = buf[0] & 0x7f;
	if (rc == 0x70 || rc == 0x71) {
		if (len < 3)
			return -1;
		s->key = buf[2] & 0x0f;
		/* The additional length bounds what follows byte 7. */
		avail = len < 8 ? len : 8 + (size_t)buf[7];
		if (avail > len)
			avail = len;
		if (buf[0] & 0x80 && avail >= 7) {
			s->info_valid = true;
			s->info = get_be32(buf + 3);
		}
		if (avail >= 14) {
			s->asc = buf[12];
			s->ascq = buf[13];
		}
		if (avail >= 18)
			sks_decode(s, buf + 15);
		return 0;
	}
	if (rc != 0x72 && rc != 0x73)
		return -1;
	if (len < 4)
		return -1;
	s->key = buf[1] & 0x0f;
	s->asc = buf[2];
	s->ascq = buf[3];
	if (len < 8)
		return 0;
	avail = 8 + (size_t)buf[7];
	if (avail > len)
		avail = len;
	/* Each descriptor: type, additional length, then that many bytes. */
	for (off = 8; off + 2 <= avail; off += 2 + (size_t)buf[off + 1]) {
		const uint8_t *d = buf + off;
		size_t dlen = 2 + (size_t)d[1];

		if (off + dlen > avail)
			break;
		if (d[0] == 0x00 && dlen >= 12) {
			s->info_valid = d[2] & 0x80;
			s->info = get_be64(d + 4);
		} else if (d[0] == 0x02 && dlen >= 7) {
			sks_decode(s, d + 4);
		}
	}
	return 0;
}

int tcmu_sense_errno(const struct tcmu_sense *s)
{
	switch (s->key) {
	case SCSI_SK_RECOVERED_ERROR:
	case SCSI_SK_COMPLETED:
		return 0;
	case SCSI_SK_NOT_READY:
		if (s->asc == SCSI_ASC_MEDIUM_NOT_PRESENT)
			return ENOMEDIUM;
		return EBUSY;
	case SCSI_SK_ILLEGAL_REQUEST:
		if (s->asc == SCSI_ASC_INVALID_OPCODE)
			return EOPNOTSUPP;
		if (s->asc == SCSI_ASC_LBA_OUT_OF_RANGE)
			return ERANGE;
		return EINVAL;
	case SCSI_SK_UNIT_ATTENTION:
		return EAGAIN;
	case SCSI_SK_DATA_PROTECT:
		/* A thin target out of space answers with 27/07. */
		if (s->asc == SCSI_ASC_WRITE_PROTECTED && s->ascq == 0x07)
			return ENOSPC;
		if (s->asc == SCSI_ASC_WRITE_PROTECTED)
			return EROFS;
		return EACCES;
	case SCSI_SK_BLANK_CHECK:
		return ENODATA;
	case SCSI_SK_ABORTED_COMMAND:
		return ECANCELED;
	case SCSI_SK_VOLUME_OVERFLOW:
		return ENOSPC;
	case SCSI_SK_MISCOMPARE:
		return EILSEQ;
	default:
		/* NO SENSE with CHECK CONDITION says nothing: still an error. */
		return EIO;
	}
}

const char *tcmu_sense_key_str(uint8_t key)
{
	static const char *const names[16] = {
		"NO SENSE", "RECOVERED ERROR", "NOT READY", "MEDIUM ERROR",
		"HARDWARE ERROR", "ILLEGAL REQUEST", "UNIT ATTENTION",
		"DATA PROTECT", "BLANK CHECK", "VENDOR SPECIFIC",
		"COPY ABORTED", "ABORTED COMMAND", "RESERVED SENSE KEY",
		"VOLUME OVERFLOW", "MISCOMPARE", "COMPLETED",
	};

	return names[key & 0x0f];
}

const char *tcmu_sense_asc_str(uint8_t asc, uint8_t ascq)
{
	static const struct {
		uint8_t asc, ascq;
		const char *text;
	} tab[] = {
		{ 0x00, 0x00, "no additional sense information" },
		{ 0x04, 0x00, "logical unit not ready" },
		{ 0x04, 0x01, "logical unit becoming ready" },
		{ 0x0c, 0x00, "write error" },
		{ 0x11, 0x00, "unrecovered read error" },
		{ 0x1a, 0x00, "parameter list length error" },
		{ 0x20, 0x00, "invalid command operation code" },
		{ 0x21, 0x00, "logical block address out of range" },
		{ 0x24, 0x00, "invalid field in CDB" },
		{ 0x25, 0x00, "logical unit not supported" },
		{ 0x26, 0x00, "invalid field in parameter list" },
		{ 0x27, 0x00, "write protected" },
		{ 0x27, 0x07, "space allocation failed write protect" },
		{ 0x29, 0x00, "power on, reset, or bus device reset occurred" },
		{ 0x2a, 0x09, "capacity data has changed" },
		{ 0x3a, 0x00, "medium not present" },
		{ 0x44, 0x00, "internal target failure" },
		{ 0x55, 0x03, "insufficient resources" },
	};
	size_t i;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (tab[i].asc == asc && tab[i].ascq == ascq)
			return tab[i].text;
	return NULL;
}

const char *tcmu_sense_msg(const struct tcmu_sense *s, char *buf, size_t len)
{
	const char *text = tcmu_sense_asc_str(s->asc, s->ascq);

	if (!len)
		return buf;
	snprintf(buf, len, "%s: %s (asc 0x%02x ascq 0x%02x)",
		 tcmu_sense_key_str(s->key), text ? text : "unknown condition",
		 s->asc, s->ascq);
	return buf;
}

/* ---- target side ---- */

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
