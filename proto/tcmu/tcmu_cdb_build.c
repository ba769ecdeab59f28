// SPDX-License-Identifier: GPL-2.0-only
/*
 * The initiator's CDBs and reply decoders (see tcmu_cdb_build.h), written
 * from SBC-3/SBC-4 and SPC-4.
 */
#include <string.h>

#include "torus_be.h"
#include "tcmu_cdb_build.h"

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

static int malformed(const char **msg, const char *m)
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
		return malformed(msg, "READ CAPACITY(16) reply shorter than 12 bytes");
	cap->last_lba = get_be64(buf);
	cap->block_len = get_be32(buf + 8);
	if (cap->block_len == 0)
		return malformed(msg, "READ CAPACITY(16) reports a block length of 0");
	if (cap->last_lba == UINT64_MAX)
		return malformed(msg, "READ CAPACITY(16) reports 2^64 blocks");
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
		return malformed(msg, "INQUIRY reply shorter than 36 bytes");
	if ((buf[3] & 0x0f) != 2)
		return malformed(msg, "INQUIRY response data format is not 2");
	if (buf[4] < TCMU_INQUIRY_STD_LEN - 5)
		return malformed(msg, "INQUIRY additional length below 31");
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
		return malformed(msg, "Block Limits VPD reply shorter than 4 bytes");
	if (buf[1] != TCMU_VPD_BLOCK_LIMITS)
		return malformed(msg, "VPD reply is not the Block Limits page");
	plen = get_be16(buf + 2);
	/* SBC-2's page ends after the optimal transfer length. */
	if (plen < 0x0c)
		return malformed(msg, "Block Limits VPD page length below 12");
	if (len < 4 + plen)
		return malformed(msg, "Block Limits VPD reply shorter than its page length");
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
		return malformed(msg, "MODE SENSE(6) reply shorter than its 4-byte header");
	/* The mode data length does not count itself. */
	end = (size_t)buf[0] + 1;
	if (end < 4)
		return malformed(msg, "MODE SENSE(6) data length below its header");
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
