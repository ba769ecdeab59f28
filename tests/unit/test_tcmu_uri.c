// SPDX-License-Identifier: GPL-2.0-only
/*
 * tcmu+unix:///?socket=PATH (proto/tcmu/tcmu_uri.c): the forms accepted,
 * percent-escapes, the socket path's limit, and every refusal with the
 * reason it gives. Each URI is a heap copy of exactly its bytes, so the
 * sanitized build catches a read past its NUL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcmu_uri.h"

#define SUN_MAX	(sizeof(((struct tcmu_uri *)0)->socket) - 1)

static struct tcmu_uri u;
static char err[512];

static int parse(const char *uri)
{
	char *copy = strdup(uri);
	int ret;

	memset(&u, 0x5a, sizeof(u));
	memset(err, 0, sizeof(err));
	ret = tcmu_uri_parse(copy, &u, err, sizeof(err));
	free(copy);
	if (ret) {
		assert_int_equal(ret, -1);
		assert_true(err[0]);
	} else {
		assert_true(strlen(u.socket) > 0);
	}
	assert_true(memchr(u.socket, 0, sizeof(u.socket)) != NULL);
	assert_true(memchr(u.warning, 0, sizeof(u.warning)) != NULL);
	return ret;
}

static void good(const char *uri, const char *socket)
{
	assert_int_equal(parse(uri), 0);
	assert_string_equal(u.socket, socket);
}

static void bad(const char *uri, const char *why)
{
	assert_int_equal(parse(uri), -1);
	assert_non_null(strstr(err, why));
}

static void test_good_forms(void **state)
{
	good("tcmu+unix:///?socket=/run/tcmu.sock", "/run/tcmu.sock");
	assert_string_equal(u.warning, "");
	good("tcmu+unix://?socket=/s", "/s");
	good("TCMU+Unix:///?socket=rel/s", "rel/s");
	good("tcmu+unix:///?&socket=/s&", "/s");
	assert_string_equal(u.warning, "");
	/* '?' is only special once: the rest belongs to the value. */
	good("tcmu+unix:///?socket=/a?b", "/a?b");
	good("tcmu+unix:///?socket=/a=b", "/a=b");
}

static void test_percent_escapes(void **state)
{
	good("tcmu+unix:///?socket=%2Frun%2ftcmu%20one", "/run/tcmu one");
	good("tcmu+unix:///?socket=%41", "A");
	good("tcmu+unix:///?socket=/x%7e%7E", "/x~~");
	good("tcmu+unix:///?socket=%25", "%");
	good("tcmu+unix:///?socket=%26&x", "&");
	good("tcmu+unix:///?socket=%ff", "\xff");

	/* NUL would cut the path the user meant. */
	bad("tcmu+unix:///?socket=/a%00b", "%-escape");
	bad("tcmu+unix:///?socket=%00", "%-escape");
	/* Truncated at the end of the URI and at the end of the parameter. */
	bad("tcmu+unix:///?socket=/a%4", "%-escape");
	bad("tcmu+unix:///?socket=/a%4&x=1", "%-escape");
	bad("tcmu+unix:///?socket=/a%", "%-escape");
	bad("tcmu+unix:///?socket=/a%&x", "%-escape");
	bad("tcmu+unix:///?socket=%4g", "%-escape");
	bad("tcmu+unix:///?socket=%g4", "%-escape");
	bad("tcmu+unix:///?socket=% 41", "%-escape");
}

static void test_socket_length(void **state)
{
	char uri[1024], want[256];
	size_t n = strlen("tcmu+unix:///?socket=");

	/* The longest path sun_path holds with its NUL. */
	memset(want, 0, sizeof(want));
	want[0] = '/';
	memset(want + 1, 'p', SUN_MAX - 1);
	snprintf(uri, sizeof(uri), "tcmu+unix:///?socket=%s", want);
	good(uri, want);
	assert_int_equal(strlen(u.socket), SUN_MAX);

	/* One more byte does not fit. */
	strcat(uri, "p");
	bad(uri, "too long");

	/* Counted decoded: SUN_MAX escapes fit, SUN_MAX + 1 do not. */
	memcpy(uri, "tcmu+unix:///?socket=", n);
	for (size_t i = 0; i < SUN_MAX; i++)
		memcpy(uri + n + 3 * i, "%2f", 3);
	uri[n + 3 * SUN_MAX] = 0;
	assert_int_equal(parse(uri), 0);
	assert_int_equal(strlen(u.socket), SUN_MAX);
	strcat(uri, "%2f");
	bad(uri, "too long");
}

static void test_missing_socket(void **state)
{
	bad("tcmu+unix://", "no socket=");
	bad("tcmu+unix:///", "no socket=");
	bad("tcmu+unix:///?", "no socket=");
	bad("tcmu+unix:///?sock=/s", "no socket=");
	bad("tcmu+unix:///?Socket=/s", "no socket=");
	/* An empty value is named as such. */
	bad("tcmu+unix:///?socket=", "socket= is empty");
	bad("tcmu+unix:///?socket", "no socket=");
	/* Every refusal shows the expected form. */
	assert_non_null(strstr(err, "tcmu+unix:///?socket=/path/to/socket"));
}

static void test_host_and_path(void **state)
{
	bad("tcmu+unix://localhost/?socket=/s", "no host");
	bad("tcmu+unix://h?socket=/s", "no host");
	bad("tcmu+unix://:1/?socket=/s", "no host");
	bad("tcmu+unix:///dev?socket=/s", "no path");
	bad("tcmu+unix:////?socket=/s", "no path");
	bad("tcmu+unix:///a/b", "no path");
}

static void test_warnings(void **state)
{
	good("tcmu+unix:///?socket=/s&foo=bar", "/s");
	assert_non_null(strstr(u.warning, "unknown parameter 'foo=bar'"));
	good("tcmu+unix:///?flag&socket=/s", "/s");
	assert_non_null(strstr(u.warning, "'flag'"));

	good("tcmu+unix:///?socket=/a&socket=/b", "/b");
	assert_non_null(strstr(u.warning, "twice"));
	/* The first path is refused like any other, even when replaced. */
	bad("tcmu+unix:///?socket=%zz&socket=/b", "%-escape");

	/* A long unknown parameter: the warning is cut, not overrun. */
	{
		char uri[2048];

		snprintf(uri, sizeof(uri), "tcmu+unix:///?socket=/s&%0*d", 1000,
			 7);
		good(uri, "/s");
		assert_int_equal(strlen(u.warning), sizeof(u.warning) - 1);
	}
}

static void test_other_schemes(void **state)
{
	bad("nbd+unix:///?socket=/s", "Unix socket");
	bad("tcmu://?socket=/s", "Unix socket");
	bad("tcmu+tcp:///?socket=/s", "Unix socket");
	bad("tcmu+unix:/?socket=/s", "Unix socket");
	bad("", "Unix socket");

	assert_true(tcmu_uri_is_tcmu("tcmu+unix:///?socket=/s"));
	assert_true(tcmu_uri_is_tcmu("TCMU+anything"));
	assert_true(tcmu_uri_is_tcmu("tcmu://h"));
	assert_true(tcmu_uri_is_tcmu("tcmu:"));
	assert_false(tcmu_uri_is_tcmu("tcmux://h"));
	assert_false(tcmu_uri_is_tcmu("tcm"));
	assert_false(tcmu_uri_is_tcmu("nbd+unix:///"));
	assert_false(tcmu_uri_is_tcmu(""));
	assert_false(tcmu_uri_is_tcmu(NULL));
}

static void test_small_err_buffer(void **state)
{
	char small[16];

	memset(small, 'x', sizeof(small));
	assert_int_equal(tcmu_uri_parse("tcmu+unix://h/", &u, small,
					sizeof(small)), -1);
	assert_int_equal(strlen(small), sizeof(small) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_forms),
		cmocka_unit_test(test_percent_escapes),
		cmocka_unit_test(test_socket_length),
		cmocka_unit_test(test_missing_socket),
		cmocka_unit_test(test_host_and_path),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_other_schemes),
		cmocka_unit_test(test_small_err_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
