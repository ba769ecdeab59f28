/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The 0-Disk deduped volume layout (zero-os/0-Disk nbd/ardb/storage):
 *
 * - the volume is cut in blocks (4 KiB); a block's content is stored once,
 *   as SET <blake2b-256 of the content, 32 raw bytes> <content>, on the
 *   storage server hash[0] % N;
 * - the block map is the Redis hash lba:<vdisk> on the metadata server:
 *   field = decimal sector index (block / 128), value = 128 hashes of 32
 *   bytes, the hash of block (sector * 128 + i) at byte i * 32. A block
 *   never written, or written with zeroes, has the nil hash (32 zero
 *   bytes); a sector of nil hashes is deleted (HDEL) rather than stored.
 *
 * Pure functions over buffers, tested by tests/shims/test_lba.c.
 */
#ifndef TORUS_STORAGE_LBA_H
#define TORUS_STORAGE_LBA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LBA_HASH_LEN		32
#define LBA_PER_SECTOR		128
#define LBA_SECTOR_LEN		(LBA_PER_SECTOR * LBA_HASH_LEN)
#define LBA_KEY_PREFIX		"lba:"

static inline uint64_t lba_sector_of(uint64_t block)
{
	return block / LBA_PER_SECTOR;
}

static inline unsigned int lba_slot_of(uint64_t block)
{
	return block % LBA_PER_SECTOR;
}

/* hash NULL stores the nil hash. */
void lba_sector_set(uint8_t *sector, unsigned int slot, const uint8_t *hash);
/* Copies the hash of slot into hash; false when it is the nil hash. */
bool lba_sector_get(const uint8_t *sector, unsigned int slot, uint8_t *hash);
bool lba_sector_is_nil(const uint8_t *sector);

/* "lba:<vdisk>" and the decimal field name; return snprintf's value. */
int lba_key(char *buf, size_t len, const char *vdisk);
int lba_field(char *buf, size_t len, uint64_t sector);

/* blake2b-256 of a block, and the storage server that holds it. */
void dedup_hash(const void *block, size_t len, uint8_t hash[LBA_HASH_LEN]);

static inline unsigned int dedup_server(const uint8_t *hash,
					unsigned int nservers)
{
	return hash[0] % nservers;
}

#endif /* TORUS_STORAGE_LBA_H */
