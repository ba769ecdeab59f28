// SPDX-License-Identifier: GPL-2.0-only
/*
 * The 0-Disk block map encoding; see lba.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <blake2.h>

#include "lba.h"

void lba_sector_set(uint8_t *sector, unsigned int slot, const uint8_t *hash)
{
	uint8_t *p = sector + (size_t)slot * LBA_HASH_LEN;

	if (hash)
		memcpy(p, hash, LBA_HASH_LEN);
	else
		memset(p, 0, LBA_HASH_LEN);
}

static bool hash_is_nil(const uint8_t *p)
{
	unsigned int i;

	for (i = 0; i < LBA_HASH_LEN; i++)
		if (p[i])
			return false;
	return true;
}

bool lba_sector_get(const uint8_t *sector, unsigned int slot, uint8_t *hash)
{
	const uint8_t *p = sector + (size_t)slot * LBA_HASH_LEN;

	memcpy(hash, p, LBA_HASH_LEN);
	return !hash_is_nil(p);
}

bool lba_sector_is_nil(const uint8_t *sector)
{
	unsigned int i;

	for (i = 0; i < LBA_PER_SECTOR; i++)
		if (!hash_is_nil(sector + (size_t)i * LBA_HASH_LEN))
			return false;
	return true;
}

int lba_key(char *buf, size_t len, const char *vdisk)
{
	return snprintf(buf, len, LBA_KEY_PREFIX "%s", vdisk);
}

int lba_field(char *buf, size_t len, uint64_t sector)
{
	return snprintf(buf, len, "%" PRIu64, sector);
}

void dedup_hash(const void *block, size_t len, uint8_t hash[LBA_HASH_LEN])
{
	blake2b(hash, block, NULL, LBA_HASH_LEN, len, 0);
}
