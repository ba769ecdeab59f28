// SPDX-License-Identifier: GPL-2.0-only
/*
 * Command line value parsers of nbd-shim (shims/nbd/parse.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "parse.h"

static void test_size(void **state)
{
	uint64_t v;

	assert_int_equal(parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(parse_size("512K", &v), 0);
	assert_int_equal(v, 512 * 1024);
	assert_int_equal(parse_size("2000M", &v), 0);
	assert_int_equal(v, 2000ULL << 20);
	assert_int_equal(parse_size("30G", &v), 0);
	assert_int_equal(v, 30ULL << 30);
	assert_int_equal(parse_size("1t", &v), 0);
	assert_int_equal(v, 1ULL << 40);
	assert_int_equal(parse_size("4GiB", &v), 0);
	assert_int_equal(v, 4ULL << 30);
	assert_int_equal(parse_size("4GB", &v), 0);
	assert_int_equal(v, 4ULL << 30);
	assert_int_equal(parse_size("", &v), -1);
	assert_int_equal(parse_size("G", &v), -1);
	assert_int_equal(parse_size("-1", &v), -1);
	assert_int_equal(parse_size("12X", &v), -1);
	assert_int_equal(parse_size("1Gx", &v), -1);
	assert_int_equal(parse_size("99999999999P", &v), -1);
}

static void test_rate(void **state)
{
	uint64_t v;

	assert_int_equal(parse_rate("1gbit", &v), 0);
	assert_int_equal(v, 125000000);
	assert_int_equal(parse_rate("125M", &v), 0);
	assert_int_equal(v, 125000000);
	assert_int_equal(parse_rate("100mbit", &v), 0);
	assert_int_equal(v, 12500000);
	assert_int_equal(parse_rate("1G", &v), 0);
	assert_int_equal(v, 1000000000);
	assert_int_equal(parse_rate("1000", &v), 0);
	assert_int_equal(v, 1000);
	assert_int_equal(parse_rate("10MB/s", &v), 0);
	assert_int_equal(v, 10000000);
	assert_int_equal(parse_rate("0", &v), -1);
	assert_int_equal(parse_rate("1gbyte", &v), -1);
	assert_int_equal(parse_rate("fast", &v), -1);
}

static void test_listen(void **state)
{
	struct listen_addr a;

	assert_int_equal(parse_listen("unix:/tmp/x.sock", &a), 0);
	assert_true(a.is_unix);
	assert_string_equal(a.path, "/tmp/x.sock");
	assert_int_equal(parse_listen("tcp:127.0.0.1:10809", &a), 0);
	assert_false(a.is_unix);
	assert_string_equal(a.host, "127.0.0.1");
	assert_int_equal(a.port, 10809);
	assert_int_equal(parse_listen("tcp:[::1]:0", &a), 0);
	assert_string_equal(a.host, "::1");
	assert_int_equal(a.port, 0);
	assert_int_equal(parse_listen("tcp:localhost", &a), -1);
	assert_int_equal(parse_listen("tcp:h:70000", &a), -1);
	assert_int_equal(parse_listen("unix:", &a), -1);
	assert_int_equal(parse_listen("/tmp/x.sock", &a), -1);
}

static void test_backend(void **state)
{
	struct backend_spec b;

	assert_int_equal(parse_backend("memory", &b), 0);
	assert_int_equal(b.kind, BACKEND_MEMORY);
	assert_int_equal(parse_backend("null", &b), 0);
	assert_int_equal(b.kind, BACKEND_NULL);
	assert_int_equal(parse_backend("file:/tmp/disk.img", &b), 0);
	assert_int_equal(b.kind, BACKEND_FILE);
	assert_string_equal(b.path, "/tmp/disk.img");
	assert_int_equal(parse_backend("redis:127.0.0.1:6379", &b), 0);
	assert_int_equal(b.kind, BACKEND_REDIS);
	assert_int_equal(b.nservers, 1);
	assert_int_equal(b.servers[0].port, 6379);
	assert_int_equal(parse_backend("redis:a:1,b:2,c", &b), 0);
	assert_int_equal(b.nservers, 3);
	assert_string_equal(b.servers[1].host, "b");
	assert_int_equal(b.servers[1].port, 2);
	assert_int_equal(b.servers[2].port, 6379);
	assert_int_equal(parse_backend("redis:", &b), -1);
	assert_int_equal(parse_backend("redis:a:1,", &b), -1);
	assert_int_equal(parse_backend("file:", &b), -1);
	assert_int_equal(parse_backend("disk", &b), -1);
}

static void test_hostport_list(void **state)
{
	struct redis_addr a[3];
	int n;

	assert_int_equal(parse_hostport_list("m:7,[::1]:8,h", a, 3, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(a[0].host, "m");
	assert_int_equal(a[0].port, 7);
	assert_string_equal(a[1].host, "::1");
	assert_int_equal(a[1].port, 8);
	assert_int_equal(a[2].port, 6379);
	assert_int_equal(parse_hostport_list("a,b,c,d", a, 3, &n), -1);
	assert_int_equal(parse_hostport_list("a,,b", a, 3, &n), -1);
	assert_int_equal(parse_hostport_list("", a, 3, &n), -1);
	assert_int_equal(parse_hostport_list("a:x", a, 3, &n), -1);
}

static void test_uint(void **state)
{
	uint64_t v;

	assert_int_equal(parse_uint("64", 64, &v), 0);
	assert_int_equal(v, 64);
	assert_int_equal(parse_uint("65", 64, &v), -1);
	assert_int_equal(parse_uint("6x", 64, &v), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_listen),
		cmocka_unit_test(test_backend),
		cmocka_unit_test(test_hostport_list),
		cmocka_unit_test(test_uint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
