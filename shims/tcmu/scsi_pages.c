// SPDX-License-Identifier: GPL-2.0-only
/*
 * The replies the target builds itself (see scsi_pages.h), from SPC-4 and
 * SBC-3. All fields are big-endian.
 */
#include <string.h>

#include "torus_be.h"
#include "scsi_pages.h"

#define INQ_STD_LEN		74	/* up to the version descriptors */
#define VPD_LIMITS_LEN		64
#define VPD_CHARS_LEN		64
#define VPD_PROV_LEN		8
/*
 * The transfer the Block Limits page offers, as maximum and optimal: the
 * kernel's default hw_max_sectors, which tcmu-runner reports for both, so
 * that an initiator behind a kernel cuts I/O as engine-tcmu does.
 */
#define VPD_XFER_BLOCKS		128u

/* MODE SENSE device-specific parameter: write protected; DPO and FUA. */
#define MODE_WP			0x80
#define MODE_DPOFUA		0x10

/* An ASCII field, space padded as SPC wants. */
static void put_ascii(uint8_t *p, const char *s, size_t n)
{
	size_t len = strlen(s);

	memset(p, ' ', n);
	memcpy(p, s, len < n ? len : n);
}

static int invalid_cdb(struct tcmu_sense *s, uint16_t byte, int bit)
{
	tcmu_sense_invalid_field(s, true, byte, bit);
	return -1;
}

/* ---- INQUIRY ---- */

static int inquiry_std(uint8_t *buf)
{
	memset(buf, 0, INQ_STD_LEN);
	buf[0] = 0x00;			/* connected, direct access block */
	buf[2] = 0x06;			/* SPC-4 */
	buf[3] = 0x12;			/* HISUP, response data format 2 */
	buf[4] = INQ_STD_LEN - 5;
	buf[7] = 0x02;			/* CMDQUE */
	put_ascii(buf + 8, SCSI_VENDOR, 8);
	put_ascii(buf + 16, SCSI_PRODUCT, 16);
	put_ascii(buf + 32, SCSI_REVISION, 4);
	/* Version descriptors: SAM-5, SPC-4, SBC-3. */
	put_be16(buf + 58, 0x00a0);
	put_be16(buf + 60, 0x0460);
	put_be16(buf + 62, 0x04c0);
	return INQ_STD_LEN;
}

static const uint8_t vpd_pages[] = { 0x00, 0x80, 0x83, 0xb0, 0xb1, 0xb2 };

static int vpd_supported(uint8_t *buf)
{
	memcpy(buf + 4, vpd_pages, sizeof(vpd_pages));
	return 4 + sizeof(vpd_pages);
}

static int vpd_serial(const struct scsi_target *t, uint8_t *buf)
{
	size_t n = strlen(t->serial);

	memcpy(buf + 4, t->serial, n);
	return 4 + n;
}

/* An NAA locally assigned name, and the T10 vendor ID with the serial. */
static int vpd_device_id(const struct scsi_target *t, uint8_t *buf)
{
	uint8_t *d = buf + 4;
	size_t n = strlen(t->serial);

	d[0] = 0x01;			/* binary */
	d[1] = 0x03;			/* logical unit, NAA */
	d[3] = 8;
	put_be64(d + 4, 3ull << 60 | (t->id & ((1ull << 60) - 1)));
	d += 12;
	d[0] = 0x02;			/* ASCII */
	d[1] = 0x01;			/* logical unit, T10 vendor ID */
	d[3] = 8 + n;
	put_ascii(d + 4, SCSI_VENDOR, 8);
	memcpy(d + 12, t->serial, n);
	d += 12 + n;
	return d - buf;
}

/*
 * Larger commands, up to max_xfer, are still taken: from initiators that
 * do not read this page (ring-client, engine-tcmu with max_transfer set).
 */
static int vpd_block_limits(const struct scsi_target *t, uint8_t *buf)
{
	uint32_t xfer = t->max_xfer < VPD_XFER_BLOCKS ? t->max_xfer :
			VPD_XFER_BLOCKS;

	buf[4] = 0x01;			/* WSNZ: no WRITE SAME of 0 blocks */
	put_be16(buf + 6, t->granularity);
	put_be32(buf + 8, xfer);	/* MAXIMUM TRANSFER LENGTH */
	put_be32(buf + 12, xfer);	/* OPTIMAL TRANSFER LENGTH */
	put_be32(buf + 28, t->granularity);
	if (!t->thin)
		return VPD_LIMITS_LEN;
	put_be32(buf + 20, t->max_unmap);
	put_be32(buf + 24, SCSI_MAX_UNMAP_DESCS);
	put_be64(buf + 36, t->max_ws);
	return VPD_LIMITS_LEN;
}

static int vpd_characteristics(uint8_t *buf)
{
	put_be16(buf + 4, 0x0001);		/* non-rotating medium */
	return VPD_CHARS_LEN;
}

static int vpd_provisioning(const struct scsi_target *t, uint8_t *buf)
{
	/* Not thin: fully provisioned, no UNMAP, no WRITE SAME's unmap. */
	if (!t->thin)
		return VPD_PROV_LEN;
	buf[5] = 0x80 | 0x40;		/* LBPU, LBPWS */
	if (t->lbprz)
		buf[5] |= 0x04;		/* LBPRZ 001b */
	buf[6] = 0x02;			/* thin provisioned */
	return VPD_PROV_LEN;
}

int scsi_inquiry(const struct scsi_target *t, const struct tcmu_cdb *c,
		 uint8_t *buf, struct tcmu_sense *s)
{
	int len;

	if (!(c->flags & TCMU_CDB_F_EVPD))
		return inquiry_std(buf);
	memset(buf, 0, VPD_LIMITS_LEN);
	switch (c->page) {
	case 0x00:
		len = vpd_supported(buf);
		break;
	case 0x80:
		len = vpd_serial(t, buf);
		break;
	case 0x83:
		len = vpd_device_id(t, buf);
		break;
	case 0xb0:
		len = vpd_block_limits(t, buf);
		break;
	case 0xb1:
		len = vpd_characteristics(buf);
		break;
	case 0xb2:
		len = vpd_provisioning(t, buf);
		break;
	default:
		return invalid_cdb(s, 2, -1);
	}
	buf[1] = c->page;
	put_be16(buf + 2, len - 4);
	return len;
}

/* ---- READ CAPACITY ---- */

int scsi_read_capacity(const struct scsi_target *t, const struct tcmu_cdb *c,
		       uint8_t *buf, struct tcmu_sense *s)
{
	uint64_t last = t->nr_blocks - 1;

	if (c->cls == TCMU_CDB_READ_CAPACITY_10) {
		/* Too big for 32 bits: the initiator must ask with (16). */
		put_be32(buf, last > 0xfffffffeull ? 0xffffffff : last);
		put_be32(buf + 4, t->block_size);
		return 8;
	}
	memset(buf, 0, 32);
	put_be64(buf, last);
	put_be32(buf + 8, t->block_size);
	if (t->thin)
		buf[14] = 0x80 | (t->lbprz ? 0x40 : 0);	/* LBPME, LBPRZ */
	return 32;
}

/* ---- MODE SENSE ---- */

/* Caching (0x08): WCE as the store has it; nothing is changeable. */
static int page_caching(const struct scsi_target *t, uint8_t *p,
			bool changeable)
{
	memset(p, 0, 20);
	p[0] = 0x08;
	p[1] = 0x12;
	if (!changeable && t->write_cache)
		p[2] = 0x04;		/* WCE */
	return 20;
}

/* Control (0x0a): commands may be reordered; descriptor sense off. */
static int page_control(uint8_t *p, bool changeable)
{
	memset(p, 0, 12);
	p[0] = 0x0a;
	p[1] = 0x0a;
	if (!changeable)
		p[3] = 0x10;		/* unrestricted reordering allowed */
	return 12;
}

static int block_descriptor(const struct scsi_target *t, uint8_t *p,
			    bool longlba)
{
	if (longlba) {
		memset(p, 0, 16);
		put_be64(p, t->nr_blocks);
		put_be32(p + 12, t->block_size);
		return 16;
	}
	memset(p, 0, 8);
	put_be32(p, t->nr_blocks > 0xffffffffull ? 0xffffffff : t->nr_blocks);
	put_be32(p + 4, t->block_size);	/* byte 4 is reserved: 24 bits */
	p[4] = 0;
	return 8;
}

int scsi_mode_sense(const struct scsi_target *t, const struct tcmu_cdb *c,
		    uint8_t *buf, struct tcmu_sense *s)
{
	bool ten = c->len == 10, changeable = c->pc == 1;
	bool longlba = ten && (c->flags & TCMU_CDB_F_LLBAA);
	uint8_t devspec = MODE_DPOFUA | (t->write_protect ? MODE_WP : 0);
	int hdr = ten ? 8 : 4, len, bd = 0;

	if (c->pc == 3) {
		tcmu_sense_set(s, SCSI_SK_ILLEGAL_REQUEST,
			       SCSI_ASC_SAVING_PARAMS_UNSUP, 0);
		return -1;
	}
	if (c->page != 0x08 && c->page != 0x0a && c->page != 0x3f)
		return invalid_cdb(s, 2, 5);
	/* No subpages here; 0xff asks for every subpage, i.e. page 0. */
	if (c->subpage != 0 && c->subpage != 0xff)
		return invalid_cdb(s, 3, -1);

	memset(buf, 0, hdr);
	len = hdr;
	if (!(c->flags & TCMU_CDB_F_DBD)) {
		bd = block_descriptor(t, buf + len, longlba);
		len += bd;
	}
	if (c->page == 0x08 || c->page == 0x3f)
		len += page_caching(t, buf + len, changeable);
	if (c->page == 0x0a || c->page == 0x3f)
		len += page_control(buf + len, changeable);

	if (ten) {
		put_be16(buf, len - 2);
		buf[3] = devspec;
		buf[4] = bd == 16 ? 0x01 : 0;	/* LONGLBA */
		put_be16(buf + 6, bd);
	} else {
		buf[0] = len - 1;
		buf[2] = devspec;
		buf[3] = bd;
	}
	return len;
}

/* ---- REPORT SUPPORTED OPERATION CODES ---- */

struct opcode_info {
	uint8_t op;
	bool has_sa;
	uint16_t sa;
	uint8_t len;
	/* The CDB usage data: which bits of each byte the target looks at. */
	uint8_t usage[16];
};

#define LBA4	0xff, 0xff, 0xff, 0xff
#define LBA8	LBA4, LBA4

static const struct opcode_info opcodes[] = {
	{ SCSI_TEST_UNIT_READY, false, 0, 6, { 0x00, 0, 0, 0, 0, 0 } },
	{ SCSI_READ_6, false, 0, 6, { 0x08, 0x1f, 0xff, 0xff, 0xff, 0 } },
	{ SCSI_WRITE_6, false, 0, 6, { 0x0a, 0x1f, 0xff, 0xff, 0xff, 0 } },
	{ SCSI_INQUIRY, false, 0, 6, { 0x12, 0x01, 0xff, 0xff, 0xff, 0 } },
	{ SCSI_MODE_SENSE_6, false, 0, 6,
	  { 0x1a, 0x08, 0xff, 0xff, 0xff, 0 } },
	{ SCSI_READ_CAPACITY_10, false, 0, 10,
	  { 0x25, 0x00, LBA4, 0, 0, 0x01, 0 } },
	{ SCSI_READ_10, false, 0, 10,
	  { 0x28, 0x1e, LBA4, 0x3f, 0xff, 0xff, 0 } },
	{ SCSI_WRITE_10, false, 0, 10,
	  { 0x2a, 0x1a, LBA4, 0x3f, 0xff, 0xff, 0 } },
	{ SCSI_SYNCHRONIZE_CACHE_10, false, 0, 10,
	  { 0x35, 0x06, LBA4, 0x3f, 0xff, 0xff, 0 } },
	{ SCSI_UNMAP, false, 0, 10,
	  { 0x42, 0x00, 0, 0, 0, 0, 0x3f, 0xff, 0xff, 0 } },
	{ SCSI_MODE_SENSE_10, false, 0, 10,
	  { 0x5a, 0x18, 0xff, 0xff, 0, 0, 0, 0xff, 0xff, 0 } },
	{ SCSI_READ_16, false, 0, 16,
	  { 0x88, 0x1e, LBA8, LBA4, 0x3f, 0 } },
	{ SCSI_WRITE_16, false, 0, 16,
	  { 0x8a, 0x1a, LBA8, LBA4, 0x3f, 0 } },
	{ SCSI_SYNCHRONIZE_CACHE_16, false, 0, 16,
	  { 0x91, 0x06, LBA8, LBA4, 0x3f, 0 } },
	{ SCSI_WRITE_SAME_16, false, 0, 16,
	  { 0x93, 0x09, LBA8, LBA4, 0x3f, 0 } },
	{ SCSI_SERVICE_ACTION_IN_16, true, SCSI_SAI_READ_CAPACITY_16, 16,
	  { 0x9e, 0x1f, LBA8, LBA4, 0x01, 0 } },
	{ SCSI_MAINTENANCE_IN, true, SCSI_MI_REPORT_SUPPORTED_OPCODES, 12,
	  { 0xa3, 0x1f, 0x87, 0xff, 0xff, 0xff, LBA4, 0, 0 } },
	{ SCSI_READ_12, false, 0, 12,
	  { 0xa8, 0x1e, LBA4, LBA4, 0x3f, 0 } },
	{ SCSI_WRITE_12, false, 0, 12,
	  { 0xaa, 0x1a, LBA4, LBA4, 0x3f, 0 } },
};

#define NR_OPCODES	(sizeof(opcodes) / sizeof(opcodes[0]))
#define TIMEOUTS_LEN	12

static bool op_has_sa(uint8_t op)
{
	size_t i;

	for (i = 0; i < NR_OPCODES; i++)
		if (opcodes[i].op == op && opcodes[i].has_sa)
			return true;
	return false;
}

static const struct opcode_info *op_find(uint8_t op, bool has_sa,
					 uint16_t sa)
{
	size_t i;

	for (i = 0; i < NR_OPCODES; i++)
		if (opcodes[i].op == op &&
		    (!has_sa || opcodes[i].sa == sa))
			return &opcodes[i];
	return NULL;
}

/* Not thin provisioned: no UNMAP, which LIO leaves out likewise. */
static bool op_offered(const struct scsi_target *t,
		       const struct opcode_info *o)
{
	return t->thin || o->op != SCSI_UNMAP;
}

/* The command timeouts descriptor: no nominal or recommended timeout. */
static int timeouts(uint8_t *p)
{
	memset(p, 0, TIMEOUTS_LEN);
	put_be16(p, TIMEOUTS_LEN - 2);
	return TIMEOUTS_LEN;
}

static int rsoc_all(const struct scsi_target *t, bool rctd, uint8_t *buf)
{
	uint8_t *p = buf + 4;
	size_t i;

	for (i = 0; i < NR_OPCODES; i++) {
		const struct opcode_info *o = &opcodes[i];

		if (!op_offered(t, o))
			continue;
		memset(p, 0, 8);
		p[0] = o->op;
		put_be16(p + 2, o->sa);
		p[5] = (rctd ? 0x02 : 0) | (o->has_sa ? 0x01 : 0);
		put_be16(p + 6, o->len);
		p += 8;
		if (rctd)
			p += timeouts(p);
	}
	put_be32(buf, p - buf - 4);
	return p - buf;
}

int scsi_report_opcodes(const struct scsi_target *t, const struct tcmu_cdb *c,
			uint8_t *buf, struct tcmu_sense *s)
{
	bool rctd = c->flags & TCMU_CDB_F_RCTD, has_sa;
	const struct opcode_info *o;
	int len;

	has_sa = op_has_sa(c->rso_opcode);
	switch (c->rso_options) {
	case 0:
		return rsoc_all(t, rctd, buf);
	case 1:
		/* By operation code alone: not for one with service actions. */
		if (has_sa)
			return invalid_cdb(s, 2, 2);
		break;
	case 2:
		if (!has_sa)
			return invalid_cdb(s, 2, 2);
		break;
	default:
		/* 3: either; a service action is ignored where none exist. */
		break;
	}
	o = op_find(c->rso_opcode, has_sa, c->rso_sa);
	memset(buf, 0, 4);
	if (!o || !op_offered(t, o)) {
		buf[1] = 0x01;		/* not supported */
		return 4;
	}
	buf[1] = (rctd ? 0x80 : 0) | 0x03;	/* supported, as the standard */
	put_be16(buf + 2, o->len);
	memcpy(buf + 4, o->usage, o->len);
	/* WRITE SAME's UNMAP bit is refused when not thin provisioned. */
	if (o->op == SCSI_WRITE_SAME_16 && !t->thin)
		buf[5] &= ~0x08;
	len = 4 + o->len;
	if (rctd)
		len += timeouts(buf + len);
	return len;
}
