// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU transport's set-up commands (see tcmu_identify.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tcmu_cdb_build.h"
#include "tcmu_identify.h"
#include "torus_bits.h"

/* Runs one set-up command; 0, or -1 with a message naming it. */
static int setup_cmd(struct tcmu_client *c, const char *label,
		     const char *what, const uint8_t *cdb, uint32_t cdb_len,
		     void *buf, uint32_t len, uint32_t *got, bool optional,
		     char *err, size_t errlen)
{
	struct tcmu_completion d;
	char why[160];
	int ret;

	memset(buf, 0, len);
	ret = tcmu_client_exec(c, cdb, cdb_len, len, NULL, buf, &d);
	if (got)
		*got = d.data_len;
	if (ret) {
		snprintf(err, errlen, "%s: %s: %s", label, what,
			 ret == -EINTR ? "the job was stopped" : strerror(-ret));
		return -1;
	}
	if (!d.error)
		return 0;
	if (optional && d.has_sense &&
	    d.sense.key == SCSI_SK_ILLEGAL_REQUEST)
		return 1;
	if (d.has_sense)
		tcmu_sense_msg(&d.sense, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "%s (SCSI status %#x)",
			 strerror(d.error), d.status);
	snprintf(err, errlen, "%s: %s failed: %s", label, what, why);
	return -1;
}

/* INQUIRY, READ CAPACITY(16) and the block limits, as sd asks at attach. */
int tcmu_identify(struct tcmu_client *c, const char *label,
		    struct tcmu_dev *dev, char *err, size_t errlen)
{
	uint8_t cdb[16], buf[TCMU_VPD_BLOCK_LIMITS_LEN];
	struct tcmu_capacity cap;
	uint32_t got;
	struct tcmu_inquiry inq;
	struct tcmu_block_limits bl;
	const char *msg;
	int ret;

	memset(dev, 0, sizeof(*dev));
	tcmu_cdb_inquiry(cdb, false, 0, TCMU_INQUIRY_STD_LEN);
	if (setup_cmd(c, label, "INQUIRY", cdb, 6, buf, TCMU_INQUIRY_STD_LEN,
		      NULL, false, err, errlen))
		return -1;
	if (tcmu_inquiry_std_decode(buf, TCMU_INQUIRY_STD_LEN, &inq, &msg)) {
		snprintf(err, errlen, "%s: bad INQUIRY data: %s", label, msg);
		return -1;
	}
	if (inq.qualifier || inq.device_type) {
		snprintf(err, errlen,
			 "%s: the handler's device is not a disk (peripheral qualifier %u, device type %#x; a direct-access block device is type 0)",
			 label, inq.qualifier, inq.device_type);
		return -1;
	}
	snprintf(dev->product, sizeof(dev->product), "%s %s %s", inq.vendor,
		 inq.product, inq.revision);

	tcmu_cdb_read_capacity16(cdb, TCMU_READ_CAPACITY_16_LEN);
	if (setup_cmd(c, label, "READ CAPACITY(16)", cdb, 16, buf,
		      TCMU_READ_CAPACITY_16_LEN, NULL, false, err, errlen))
		return -1;
	if (tcmu_read_capacity16_decode(buf, TCMU_READ_CAPACITY_16_LEN, &cap,
					&msg)) {
		snprintf(err, errlen, "%s: bad READ CAPACITY(16) data: %s",
			 label, msg);
		return -1;
	}
	if (cap.block_len < 512 || cap.block_len > 65536 ||
	    !is_pow2(cap.block_len)) {
		snprintf(err, errlen,
			 "%s: the handler reports a logical block of %u bytes; only powers of two from 512 to 65536 are supported",
			 label, cap.block_len);
		return -1;
	}
	if (cap.last_lba == UINT64_MAX ||
	    cap.last_lba + 1 > UINT64_MAX / cap.block_len) {
		snprintf(err, errlen,
			 "%s: the handler reports %" PRIu64 " blocks of %u bytes, more than 64 bits of bytes",
			 label, cap.last_lba, cap.block_len);
		return -1;
	}
	dev->block_size = cap.block_len;
	dev->blocks = cap.last_lba + 1;
	dev->thin = cap.lbpme;

	/*
	 * Write protection, FUA and the write cache, as sd learns them. A
	 * handler without MODE SENSE gets flushes (harmless) and no FUA.
	 */
	dev->write_cache = true;
	tcmu_cdb_mode_sense6(cdb, true, TCMU_MODE_PAGE_CACHING,
			     TCMU_MODE_SENSE_CACHING_LEN);
	ret = setup_cmd(c, label, "MODE SENSE(6)", cdb, 6, buf,
			TCMU_MODE_SENSE_CACHING_LEN, &got, true, err, errlen);
	if (ret < 0)
		return -1;
	if (!ret) {
		struct tcmu_mode_info mi;

		if (tcmu_mode_sense6_decode(buf, got, &mi, &msg)) {
			snprintf(err, errlen, "%s: bad MODE SENSE(6) data: %s",
				 label, msg);
			return -1;
		}
		dev->read_only = mi.wp;
		dev->fua = mi.dpofua;
		if (mi.has_caching)
			dev->write_cache = mi.wce;
	}

	tcmu_cdb_inquiry(cdb, true, TCMU_VPD_BLOCK_LIMITS,
			 TCMU_VPD_BLOCK_LIMITS_LEN);
	ret = setup_cmd(c, label, "INQUIRY (block limits VPD page)", cdb, 6,
			buf, TCMU_VPD_BLOCK_LIMITS_LEN, NULL, true, err,
			errlen);
	if (ret < 0)
		return -1;
	if (!ret && !tcmu_vpd_block_limits_decode(buf,
						  TCMU_VPD_BLOCK_LIMITS_LEN,
						  &bl, &msg)) {
		uint64_t mt = (uint64_t)bl.max_transfer * dev->block_size;
		uint64_t mu = (uint64_t)bl.max_unmap_lbas * dev->block_size;

		dev->max_transfer = mt > UINT32_MAX ? 0 : mt;
		dev->max_unmap = mu > UINT32_MAX ? 0 : mu;
	}
	return 0;
}
