// SPDX-License-Identifier: GPL-2.0-only
/*
 * SCSI CDBs and sense (proto/tcmu/tcmu_cdb_*.h, tcmu_sense.h) fed whatever an initiator or
 * a target sends: the target side's CDB parser, range check and UNMAP
 * parameter lists, the sense both ways, and the initiator's decoders of
 * READ CAPACITY(16), standard INQUIRY and the Block Limits VPD page.
 *
 * Input:
 *   bytes 0-7  the medium's size in blocks (little-endian)
 *   then records, each: kind:u8 aux:u8 len:u16 (little-endian, cut to
 *   what is left) and len bytes:
 *     kind % 6 == 0  a CDB (tcmu_cdb_parse, tcmu_cdb_check_range)
 *                 1  an UNMAP parameter list, aux = max_descs
 *                 2  raw sense (tcmu_sense_decode), aux % 16 = the size
 *                    of the buffer tcmu_sense_msg writes into
 *                 3  a READ CAPACITY(16) reply
 *                 4  a standard INQUIRY reply
 *                 5  a Block Limits VPD page
 *
 * Checked: a parsed CDB has the length its opcode's group implies, fits
 * in what was given, and lba + blocks does not wrap; a range accepted
 * lies inside the medium and a range refused does not; every refusal is
 * an ILLEGAL REQUEST whose field pointer points into the CDB or list;
 * fixed sense is 18 bytes (0 when the buffer is short, writing nothing)
 * and decodes back to what was encoded; messages and decoded strings are
 * NUL-terminated; decoders that fail say why. Each record is its own
 * malloc of exactly its bytes, so ASan sees any read past it.
 */
#include <string.h>

#include "fuzz.h"
#include "tcmu_cdb_build.h"
#include "tcmu_cdb_parse.h"

static uint64_t get64le(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Exactly @len bytes on the heap, even for 0 (ASan flags any access). */
static uint8_t *dup_exact(const uint8_t *p, size_t len)
{
	uint8_t *b = malloc(len ? len : 1);

	FUZZ_CHECK(b);
	if (len)
		memcpy(b, p, len);
	/* A 0-byte record: the pointer is past the end of nothing. */
	return len ? b : b + 1;
}

static void free_exact(uint8_t *b, size_t len)
{
	free(len ? b : b - 1);
}

static void check_msg(const struct tcmu_sense *s, size_t buflen)
{
	char *buf = malloc(buflen ? buflen : 1);
	const char *ret;

	FUZZ_CHECK(buf);
	ret = tcmu_sense_msg(s, buf, buflen);
	FUZZ_CHECK(ret == buf);
	if (buflen) {
		FUZZ_CHECK(memchr(buf, 0, buflen));
		FUZZ_CHECK(buflen == 1 || buf[0]);
	}
	free(buf);
	FUZZ_CHECK(tcmu_sense_key_str(s->key));
}

/* Encode @s as fixed sense, decode it back: the same condition. */
static void check_fixed(const struct tcmu_sense *s)
{
	uint8_t *buf = malloc(TCMU_SENSE_FIXED_LEN), *small;
	struct tcmu_sense back;
	int err;

	FUZZ_CHECK(buf);
	FUZZ_CHECK(tcmu_sense_fixed(buf, TCMU_SENSE_FIXED_LEN, s) ==
		   TCMU_SENSE_FIXED_LEN);
	/* One byte short: nothing written (ASan watches the 17 bytes). */
	small = malloc(TCMU_SENSE_FIXED_LEN - 1);
	FUZZ_CHECK(small);
	FUZZ_CHECK(!tcmu_sense_fixed(small, TCMU_SENSE_FIXED_LEN - 1, s));
	free(small);

	FUZZ_CHECK(!tcmu_sense_decode(buf, TCMU_SENSE_FIXED_LEN, &back));
	FUZZ_CHECK(back.key == (s->key & 0x0f));
	FUZZ_CHECK(back.asc == s->asc && back.ascq == s->ascq);
	if (s->info_valid && s->info <= UINT32_MAX)
		FUZZ_CHECK(back.info_valid && back.info == s->info);
	else
		FUZZ_CHECK(!back.info_valid);
	FUZZ_CHECK(back.sksv == s->sksv);
	if (s->sksv && back.key == SCSI_SK_ILLEGAL_REQUEST) {
		FUZZ_CHECK(back.cd == s->cd && back.bpv == s->bpv);
		FUZZ_CHECK(back.field == s->field);
		FUZZ_CHECK(!s->bpv || back.bit == (s->bit & 7));
	}
	err = tcmu_sense_errno(&back);
	FUZZ_CHECK(err >= 0 && err < 4096);
	free(buf);
}

/* What a target answers with: an ILLEGAL REQUEST it can explain. */
static void check_refusal(const struct tcmu_sense *s, bool cdb, size_t len)
{
	FUZZ_CHECK(s->key == SCSI_SK_ILLEGAL_REQUEST);
	if (cdb)
		FUZZ_CHECK(s->asc == SCSI_ASC_INVALID_OPCODE ||
			   s->asc == SCSI_ASC_INVALID_FIELD_IN_CDB ||
			   s->asc == SCSI_ASC_LBA_OUT_OF_RANGE);
	else
		FUZZ_CHECK(s->asc == SCSI_ASC_PARAMETER_LIST_LENGTH ||
			   s->asc == SCSI_ASC_INVALID_FIELD_IN_PARAM ||
			   s->asc == SCSI_ASC_LBA_OUT_OF_RANGE);
	FUZZ_CHECK(s->sksv == (s->asc == SCSI_ASC_INVALID_FIELD_IN_CDB ||
			       s->asc == SCSI_ASC_INVALID_FIELD_IN_PARAM));
	if (s->sksv) {
		FUZZ_CHECK(s->cd == cdb);
		/* A short CDB points at its first missing byte. */
		FUZZ_CHECK(s->field <= len && s->field < (cdb ? 16 : 8));
		FUZZ_CHECK(!s->bpv || s->bit < 8);
	}
	check_fixed(s);
	check_msg(s, 128);
}

static void check_range(const struct tcmu_cdb *c, uint64_t nr_blocks)
{
	struct tcmu_sense s;

	if (!tcmu_cdb_check_range(c, nr_blocks, &s)) {
		FUZZ_CHECK(c->lba < nr_blocks);
		FUZZ_CHECK(c->blocks <= nr_blocks - c->lba);
	} else {
		FUZZ_CHECK(c->lba >= nr_blocks ||
			   c->blocks > nr_blocks - c->lba);
		FUZZ_CHECK(s.key == SCSI_SK_ILLEGAL_REQUEST &&
			   s.asc == SCSI_ASC_LBA_OUT_OF_RANGE);
		check_fixed(&s);
	}
}

static void one_cdb(const uint8_t *cdb, size_t len, uint64_t nr_blocks)
{
	struct tcmu_sense s;
	struct tcmu_cdb c;

	if (tcmu_cdb_parse(cdb, len, &c, &s)) {
		check_refusal(&s, true, len);
		return;
	}
	FUZZ_CHECK(len >= 1 && c.opcode == cdb[0]);
	FUZZ_CHECK(c.len && c.len == tcmu_cdb_len(cdb[0]) && c.len <= len);
	FUZZ_CHECK(!c.blocks || c.lba <= UINT64_MAX - c.blocks);
	switch (c.cls) {
	case TCMU_CDB_READ:
	case TCMU_CDB_WRITE:
		if (c.len == 6)
			FUZZ_CHECK(c.blocks >= 1 && c.blocks <= 256 &&
				   c.lba < (1u << 21));
		/* fall through */
	case TCMU_CDB_SYNC:
	case TCMU_CDB_WRITE_SAME:
		FUZZ_CHECK(!(c.flags & TCMU_CDB_F_TO_END) || !c.blocks);
		check_range(&c, nr_blocks);
		break;
	case TCMU_CDB_INQUIRY:
		FUZZ_CHECK(c.page == 0 || (c.flags & TCMU_CDB_F_EVPD));
		break;
	case TCMU_CDB_REPORT_OPCODES:
		FUZZ_CHECK(c.rso_options <= 3);
		break;
	case TCMU_CDB_MODE_SENSE:
		FUZZ_CHECK(c.pc < 4 && c.page < 64);
		break;
	default:
		break;
	}
}

static void one_unmap(const uint8_t *param, size_t len, uint32_t max_descs,
		      uint64_t nr_blocks)
{
	struct tcmu_sense s;
	uint64_t lba;
	uint32_t blocks;
	int n, i;

	n = tcmu_unmap_parse(param, len, max_descs, &s);
	if (n < 0) {
		FUZZ_CHECK(n == -1);
		check_refusal(&s, false, len);
		return;
	}
	FUZZ_CHECK(!max_descs || (uint32_t)n <= max_descs);
	FUZZ_CHECK(!n || 8 + (size_t)n * TCMU_UNMAP_DESC_LEN <= len);
	for (i = 0; i < n; i++) {
		struct tcmu_cdb c = { .cls = TCMU_CDB_UNMAP };

		tcmu_unmap_get(param, i, &lba, &blocks);
		FUZZ_CHECK(!blocks || lba <= UINT64_MAX - blocks);
		/* A handler checks each descriptor as it would a CDB. */
		c.lba = lba;
		c.blocks = blocks;
		check_range(&c, nr_blocks);
	}
}

static void one_sense(const uint8_t *buf, size_t len, size_t msglen)
{
	struct tcmu_sense s;
	int err;

	if (tcmu_sense_decode(buf, len, &s))
		return;
	FUZZ_CHECK(len >= 1);
	FUZZ_CHECK(s.key < 16 && s.bit < 8);
	err = tcmu_sense_errno(&s);
	FUZZ_CHECK(err >= 0 && err < 4096);
	check_msg(&s, msglen);
	check_msg(&s, 128);
	/* What an initiator decoded, a target can send on. */
	check_fixed(&s);
}

static void check_str(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	FUZZ_CHECK(n < size);
	FUZZ_CHECK(!n || s[n - 1] != ' ');
}

static void one_reply(int kind, const uint8_t *buf, size_t len)
{
	struct tcmu_block_limits bl;
	struct tcmu_capacity cap;
	struct tcmu_inquiry inq;
	struct tcmu_mode_info mi;
	const char *msg = NULL;

	switch (kind) {
	case 3:
		if (tcmu_read_capacity16_decode(buf, len, &cap, &msg)) {
			FUZZ_CHECK(msg && msg[0]);
			break;
		}
		FUZZ_CHECK(len >= 12 && cap.block_len);
		FUZZ_CHECK(cap.last_lba != UINT64_MAX && cap.phys_exp < 16);
		break;
	case 4:
		if (tcmu_inquiry_std_decode(buf, len, &inq, &msg)) {
			FUZZ_CHECK(msg && msg[0]);
			break;
		}
		FUZZ_CHECK(len >= TCMU_INQUIRY_STD_LEN);
		FUZZ_CHECK(inq.qualifier < 8 && inq.device_type < 32);
		check_str(inq.vendor, sizeof(inq.vendor));
		check_str(inq.product, sizeof(inq.product));
		check_str(inq.revision, sizeof(inq.revision));
		break;
	default:
		if (tcmu_vpd_block_limits_decode(buf, len, &bl, &msg)) {
			FUZZ_CHECK(msg && msg[0]);
		} else {
			FUZZ_CHECK(len >= 16 &&
				   buf[1] == TCMU_VPD_BLOCK_LIMITS);
		}
		/* The same bytes as a MODE SENSE(6) reply. */
		msg = NULL;
		if (tcmu_mode_sense6_decode(buf, len, &mi, &msg))
			FUZZ_CHECK(msg && msg[0]);
		else
			FUZZ_CHECK(len >= 4 && mi.wp == !!(buf[2] & 0x80));
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t nr_blocks;
	size_t pos, len;
	uint8_t *rec;
	int kind, aux;

	if (size < 8)
		return 0;
	nr_blocks = get64le(data);
	pos = 8;
	while (pos + 4 <= size) {
		kind = data[pos] % 6;
		aux = data[pos + 1];
		len = data[pos + 2] | data[pos + 3] << 8;
		pos += 4;
		if (len > size - pos)
			len = size - pos;
		rec = dup_exact(data + pos, len);
		pos += len;
		switch (kind) {
		case 0:
			one_cdb(rec, len, nr_blocks);
			break;
		case 1:
			one_unmap(rec, len, aux, nr_blocks);
			break;
		case 2:
			one_sense(rec, len, aux % 16);
			break;
		default:
			one_reply(kind, rec, len);
			break;
		}
		free_exact(rec, len);
	}
	return 0;
}
