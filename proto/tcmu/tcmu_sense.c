// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sense data out and in (see tcmu_sense.h), written from SPC-4.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "torus_be.h"
#include "tcmu_sense.h"

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
