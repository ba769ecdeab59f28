// SPDX-License-Identifier: GPL-2.0-only
/*
 * The data helpers tcmu-runner's daemon gives its handler plugins: iovec
 * walking and copying, CDB fields, fixed-format sense. Pure functions,
 * written to the contracts in tcmu-runner's libtcmu_common.h: a copy into
 * or out of an iovec consumes what it copied (iov_base and iov_len move
 * on), and tcmu_iovec_seek() empties whole entries in place, so that a
 * handler can call it again with the same array and count.
 */
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/types.h>

#include "runner_dev.h"
#include "torus_be.h"
#include "tcmu_cdb_parse.h"

size_t tcmu_iovec_length(struct iovec *iovec, size_t iov_cnt)
{
	size_t len = 0;

	while (iov_cnt--)
		len += iovec++->iov_len;
	return len;
}

/* Returns how many entries were used up. */
size_t tcmu_iovec_seek(struct iovec *iovec, size_t count)
{
	size_t emptied = 0;

	for (; count; iovec++) {
		size_t step = count < iovec->iov_len ? count : iovec->iov_len;

		iovec->iov_base = (uint8_t *)iovec->iov_base + step;
		iovec->iov_len -= step;
		count -= step;
		if (!iovec->iov_len)
			emptied++;
		else
			break;
	}
	return emptied;
}

size_t tcmu_memcpy_into_iovec(struct iovec *iovec, size_t iov_cnt, void *src,
			      size_t len)
{
	size_t done = 0;

	for (; len && iov_cnt; iovec++, iov_cnt--) {
		size_t n = len < iovec->iov_len ? len : iovec->iov_len;

		memcpy(iovec->iov_base, (uint8_t *)src + done, n);
		iovec->iov_base = (uint8_t *)iovec->iov_base + n;
		iovec->iov_len -= n;
		done += n;
		len -= n;
	}
	return done;
}

size_t tcmu_memcpy_from_iovec(void *dest, size_t len, struct iovec *iovec,
			      size_t iov_cnt)
{
	size_t done = 0;

	for (; len && iov_cnt; iovec++, iov_cnt--) {
		size_t n = len < iovec->iov_len ? len : iovec->iov_len;

		memcpy((uint8_t *)dest + done, iovec->iov_base, n);
		iovec->iov_base = (uint8_t *)iovec->iov_base + n;
		iovec->iov_len -= n;
		done += n;
		len -= n;
	}
	return done;
}

/* The offset of the first byte that differs, or -1 when none does. */
off_t tcmu_iovec_compare(void *mem, struct iovec *iovec, size_t size)
{
	const uint8_t *m = mem;
	off_t off = 0;
	size_t i, n;

	for (; size; iovec++) {
		const uint8_t *v = iovec->iov_base;

		n = size < iovec->iov_len ? size : iovec->iov_len;
		if (memcmp(m + off, v, n))
			for (i = 0; i < n; i++)
				if (m[off + i] != v[i])
					return off + i;
		off += n;
		size -= n;
	}
	return -1;
}

/* The CDB's length from its group code (SPC-4, 4.2.5.1). */
int tcmu_cdb_get_length(uint8_t *cdb)
{
	unsigned int len = tcmu_cdb_len(cdb[0]);

	return len ? (int)len : -1;
}

uint64_t tcmu_cdb_get_lba(uint8_t *cdb)
{
	switch (tcmu_cdb_get_length(cdb)) {
	case 6:
		return get_be24(cdb + 1) & 0x1fffff;
	case 10:
	case 12:
		return get_be32(cdb + 2);
	case 16:
		return get_be64(cdb + 2);
	}
	return 0;
}

/* The raw field: READ(6)'s 0 means 256 blocks to the command, not here. */
uint32_t tcmu_cdb_get_xfer_length(uint8_t *cdb)
{
	switch (tcmu_cdb_get_length(cdb)) {
	case 6:
		return cdb[4];
	case 10:
		return get_be16(cdb + 7);
	case 12:
		return get_be32(cdb + 6);
	case 16:
		return get_be32(cdb + 10);
	}
	return 0;
}

/* Fixed-format sense (SPC-4, 4.5.3), current error. */
int tcmu_sense_set_data(uint8_t *sense_buf, uint8_t key, uint16_t asc_ascq)
{
	memset(sense_buf, 0, SENSE_BUFFERSIZE);
	sense_buf[0] = 0x70;
	sense_buf[2] = key;
	sense_buf[7] = 10;		/* additional length: bytes 8..17 */
	sense_buf[12] = asc_ascq >> 8;
	sense_buf[13] = asc_ascq;
	return TCMU_STS_PASSTHROUGH_ERR;
}

/* The INFORMATION field, with VALID. */
void tcmu_sense_set_info(uint8_t *sense_buf, uint32_t info)
{
	sense_buf[0] |= 0x80;
	put_be32(sense_buf + 3, info);
}

/* The SENSE KEY SPECIFIC field, with SKSV. */
void tcmu_sense_set_key_specific_info(uint8_t *sense_buf, uint16_t info)
{
	sense_buf[15] = 0x80;
	put_be16(sense_buf + 16, info);
}
