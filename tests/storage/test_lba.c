// SPDX-License-Identifier: GPL-2.0-only
/*
 * The 0-Disk block map encoding (shims/nbd/lba.c): sector and slot of a
 * block, hashes placed at slot * 32, nil sectors, key and field names, the
 * blake2b-256 of a block and the server it lands on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lba.h"

static void test_sector_and_slot(void **state)
{
	assert_int_equal(lba_sector_of(0), 0);
	assert_int_equal(lba_slot_of(0), 0);
	assert_int_equal(lba_sector_of(127), 0);
	assert_int_equal(lba_slot_of(127), 127);
	assert_int_equal(lba_sector_of(128), 1);
	assert_int_equal(lba_slot_of(128), 0);
	assert_int_equal(lba_sector_of(1000000), 7812);
	assert_int_equal(lba_slot_of(1000000), 64);
	assert_int_equal(LBA_SECTOR_LEN, 4096);
}

static void test_set_get(void **state)
{
	uint8_t sector[LBA_SECTOR_LEN] = { 0 };
	uint8_t h[LBA_HASH_LEN], out[LBA_HASH_LEN];
	unsigned int i;

	for (i = 0; i < LBA_HASH_LEN; i++)
		h[i] = i + 1;
	assert_true(lba_sector_is_nil(sector));
	assert_false(lba_sector_get(sector, 5, out));
	lba_sector_set(sector, 5, h);
	assert_false(lba_sector_is_nil(sector));
	/* the hash of slot 5 sits at byte 160 */
	assert_memory_equal(sector + 5 * 32, h, 32);
	assert_int_equal(sector[5 * 32 - 1], 0);
	assert_int_equal(sector[6 * 32], 0);
	assert_true(lba_sector_get(sector, 5, out));
	assert_memory_equal(out, h, 32);
	assert_false(lba_sector_get(sector, 4, out));
	lba_sector_set(sector, 5, NULL);
	assert_true(lba_sector_is_nil(sector));
}

static void test_last_slot(void **state)
{
	uint8_t sector[LBA_SECTOR_LEN] = { 0 };
	uint8_t h[LBA_HASH_LEN], out[LBA_HASH_LEN];

	memset(h, 0xff, sizeof(h));
	lba_sector_set(sector, 127, h);
	assert_memory_equal(sector + LBA_SECTOR_LEN - 32, h, 32);
	assert_true(lba_sector_get(sector, 127, out));
}

static void test_names(void **state)
{
	char buf[64];

	assert_int_equal(lba_key(buf, sizeof(buf), "vd1"), 7);
	assert_string_equal(buf, "lba:vd1");
	lba_field(buf, sizeof(buf), 0);
	assert_string_equal(buf, "0");
	lba_field(buf, sizeof(buf), 7812);
	assert_string_equal(buf, "7812");
}

/* blake2b-256 of 4096 zero bytes, as 0-Disk's zeroContentHash */
static void test_hash_zero_block(void **state)
{
	static const uint8_t expect[4] = { 0x68, 0x6e, 0xde, 0x92 };
	uint8_t zero[4096] = { 0 }, h[LBA_HASH_LEN], h2[LBA_HASH_LEN];

	dedup_hash(zero, sizeof(zero), h);
	assert_memory_equal(h, expect, sizeof(expect));
	dedup_hash(zero, sizeof(zero), h2);
	assert_memory_equal(h, h2, sizeof(h));
	zero[4095] = 1;
	dedup_hash(zero, sizeof(zero), h2);
	assert_memory_not_equal(h, h2, sizeof(h));
}

/* blake2b-256("abc"), RFC 7693 test vector family */
static void test_hash_abc(void **state)
{
	static const uint8_t expect[8] = {
		0xbd, 0xdd, 0x81, 0x3c, 0x63, 0x42, 0x39, 0x72,
	};
	uint8_t h[LBA_HASH_LEN];

	dedup_hash("abc", 3, h);
	assert_memory_equal(h, expect, sizeof(expect));
}

static void test_server(void **state)
{
	uint8_t h[LBA_HASH_LEN] = { 0 };

	h[0] = 200;
	assert_int_equal(dedup_server(h, 8), 0);
	h[0] = 13;
	assert_int_equal(dedup_server(h, 8), 5);
	assert_int_equal(dedup_server(h, 1), 0);
	assert_int_equal(dedup_server(h, 3), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sector_and_slot),
		cmocka_unit_test(test_set_get),
		cmocka_unit_test(test_last_slot),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_hash_zero_block),
		cmocka_unit_test(test_hash_abc),
		cmocka_unit_test(test_server),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
