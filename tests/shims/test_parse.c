// SPDX-License-Identifier: GPL-2.0-only
/*
 * Command line value parsers of nbd-shim (shims/nbd/parse.c), server
 * addresses (storage/hostport.c) and --store (bridges/store.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "parse.h"
#include "store.h"

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

/*
 * "--store NAME: no such store: use A, B ... or Z", the stores' syntaxes
 * in the registry's order, built from the registry.
 */
static const char *no_such_store(const char *name)
{
	static char want[1024];
	size_t n;
	int i;

	n = snprintf(want, sizeof(want), "--store %s: no such store: use ", name);
	for (i = 0; store_types[i]; i++)
		n += snprintf(want + n, sizeof(want) - n, "%s%s",
			      !i ? "" : store_types[i + 1] ? ", " : " or ",
			      store_types[i]->usage);
	return want;
}

/*
 * Every store of the registry: a unique name, a syntax that starts with
 * it, help and an opener; --store with its name finds it (its own parser
 * may still want an argument).
 */
static void test_registry(void **state)
{
	struct store_spec b = { 0 };
	const struct store_type *t;
	char err[1024];
	size_t len;
	int i, j;

	assert_non_null(store_types[0]);
	for (i = 0; (t = store_types[i]); i++) {
		len = strlen(t->name);
		assert_true(len > 0);
		assert_memory_equal(t->usage, t->name, len);
		assert_true(t->usage[len] == '\0' || t->usage[len] == ':');
		assert_non_null(t->help);
		assert_non_null(t->open);
		for (j = 0; j < i; j++)
			assert_string_not_equal(store_types[j]->name, t->name);
		if (store_parse(&b, t->name, err, sizeof(err)))
			assert_null(strstr(err, "no such store"));
	}
	store_spec_free(&b);
}

/* --store through the store registry (storage/store.h), as both shims. */
static void test_store(void **state)
{
	struct store_spec b = { 0 };
	char err[1024];

	assert_int_equal(store_parse(&b, "memory", err, sizeof(err)), 0);
	assert_string_equal(b.type->name, "memory");
	assert_int_equal(store_parse(&b, "null", err, sizeof(err)), 0);
	assert_string_equal(b.type->name, "null");
	assert_int_equal(store_parse(&b, "file:/tmp/disk.img", err, sizeof(err)), 0);
	assert_string_equal(b.type->name, "file");
	assert_int_equal(store_parse(&b, "file:/tmp/d,direct", err, sizeof(err)), 0);
	assert_int_equal(store_parse(&b, "file:/tmp/d,ro", err, sizeof(err)), 0);
	assert_int_equal(store_parse(&b, "file:/tmp/d,ro,direct", err, sizeof(err)), 0);
	assert_int_equal(store_parse(&b, "redis:127.0.0.1:6379", err, sizeof(err)), 0);
	assert_string_equal(b.type->name, "redis");
	assert_int_equal(store_parse(&b, "redis:a:1,b:2,c", err, sizeof(err)), 0);
	assert_int_equal(store_parse(&b, "nbd:nbd://h/x", err, sizeof(err)), 0);
	assert_string_equal(b.type->name, "nbd");
	assert_int_equal(store_parse(&b, "runner:qcow:/tmp/a.qcow2", err, sizeof(err)), 0);
	assert_string_equal(b.type->name, "runner");
	assert_string_equal(b.arg, "runner:qcow:/tmp/a.qcow2");

	/* a failed parse keeps what was there */
	assert_int_equal(store_parse(&b, "redis:", err, sizeof(err)), -1);
	assert_string_equal(err, "--store redis:: use redis:HOST:PORT[,HOST:PORT...] (at most 64 servers)");
	assert_string_equal(b.type->name, "runner");
	assert_int_equal(store_parse(&b, "redis:a:1,", err, sizeof(err)), -1);
	assert_int_equal(store_parse(&b, "file:", err, sizeof(err)), -1);
	assert_string_equal(err, "--store file:: no path: use file:PATH[,direct][,ro]");
	assert_int_equal(store_parse(&b, "file:,ro", err, sizeof(err)), -1);
	assert_int_equal(store_parse(&b, "file:,direct", err, sizeof(err)), -1);
	assert_int_equal(store_parse(&b, "memory:1G", err, sizeof(err)), -1);
	assert_string_equal(err, "--store memory:1G: this store takes no argument (nothing after \":\")");
	assert_int_equal(store_parse(&b, "nbd:", err, sizeof(err)), -1);
	assert_int_equal(store_parse(&b, "runner:qcow", err, sizeof(err)), -1);
	assert_int_equal(store_parse(&b, "disk", err, sizeof(err)), -1);
	assert_string_equal(err, no_such_store("disk"));

	/* the stores' flags: only for their own store */
	assert_int_equal(store_set_flag(&b, "redis-meta", "m:1", err, sizeof(err)), -1);
	assert_string_equal(err, "--redis-meta is only for --store redis:HOST:PORT[,HOST:PORT...]");
	assert_int_equal(store_set_flag(&b, "plugin-dir", "/tmp", err, sizeof(err)), 0);
	assert_int_equal(store_parse(&b, "redis:a", err, sizeof(err)), 0);
	assert_int_equal(store_set_flag(&b, "redis-meta", "m:1,n", err, sizeof(err)), 0);
	assert_int_equal(store_set_flag(&b, "redis-meta", "m:x", err, sizeof(err)), -1);
	assert_string_equal(err, "--redis-meta m:x: use HOST:PORT[,HOST:PORT...]");
	assert_int_equal(store_set_flag(&b, "vdisk", "v", err, sizeof(err)), 0);
	store_spec_free(&b);
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
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_store),
		cmocka_unit_test(test_hostport_list),
		cmocka_unit_test(test_uint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
