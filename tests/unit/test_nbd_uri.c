// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the NBD URI parser (proto/nbd/nbd_uri.c): the accepted forms,
 * what they parse to, and the message each rejected form gets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "nbd_uri.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Room for the longest URIs built below. */
#define URI_MAX		(3 * NBD_URI_EXPORT_MAX + 64)

static void parse_ok(const char *uri, struct nbd_uri *u)
{
	char err[512] = "";

	if (nbd_uri_parse(uri, u, err, sizeof(err)))
		fail_msg("'%s' rejected: %s", uri, err);
}

static void parse_tcp(const char *uri, const char *host, const char *port,
		      const char *export)
{
	struct nbd_uri u;

	parse_ok(uri, &u);
	assert_false(u.unix_socket);
	assert_string_equal(u.host, host);
	assert_string_equal(u.port, port);
	assert_string_equal(u.export_name, export);
	assert_string_equal(u.socket, "");
}

static void parse_unix(const char *uri, const char *socket,
		       const char *export)
{
	struct nbd_uri u;

	parse_ok(uri, &u);
	assert_true(u.unix_socket);
	assert_string_equal(u.socket, socket);
	assert_string_equal(u.export_name, export);
	assert_string_equal(u.host, "");
}

/* uri must be rejected with a message that contains sub. */
static void parse_err(const char *uri, const char *sub)
{
	struct nbd_uri u;
	char err[512] = "";

	if (!nbd_uri_parse(uri, &u, err, sizeof(err)))
		fail_msg("'%s' accepted", uri ? uri : "(null)");
	if (!err[0])
		fail_msg("'%s' rejected without a message", uri);
	if (!strstr(err, sub))
		fail_msg("'%s': message '%s' does not mention '%s'", uri, err,
			 sub);
}

/* ---- nbd:// ------------------------------------------------------------- */

static void test_tcp_host_only(void **state)
{
	parse_tcp("nbd://host", "host", "10809", "");
	parse_tcp("nbd://host/", "host", "10809", "");
	parse_tcp("nbd://localhost/", "localhost", "10809", "");
	parse_tcp("nbd://192.0.2.7", "192.0.2.7", "10809", "");
}

static void test_tcp_port_export(void **state)
{
	parse_tcp("nbd://host:10810/export", "host", "10810", "export");
	parse_tcp("nbd://host:10810", "host", "10810", "");
	parse_tcp("nbd://host:1/x", "host", "1", "x");
	parse_tcp("nbd://host:65535/x", "host", "65535", "x");
	parse_tcp("nbd://192.0.2.7:10809/disk", "192.0.2.7", "10809", "disk");
	/* Everything after the first slash is the name, slashes included. */
	parse_tcp("nbd://host/a/b/c", "host", "10809", "a/b/c");
	parse_tcp("nbd://host//lead", "host", "10809", "/lead");
}

static void test_tcp_default_port(void **state)
{
	struct nbd_uri u;

	parse_ok("nbd://example.org/disk", &u);
	assert_string_equal(u.port, "10809");
	assert_string_equal(u.host, "example.org");
	assert_string_equal(u.export_name, "disk");
}

static void test_tcp_ipv6(void **state)
{
	parse_tcp("nbd://[::1]:1234", "::1", "1234", "");
	parse_tcp("nbd://[::1]:1234/exp", "::1", "1234", "exp");
	parse_tcp("nbd://[::1]/exp", "::1", "10809", "exp");
	parse_tcp("nbd://[::1]", "::1", "10809", "");
	parse_tcp("nbd://[2001:db8::42]:10810/a", "2001:db8::42", "10810", "a");
}

static void test_tcp_percent_decoding(void **state)
{
	parse_tcp("nbd://host/a%2Fb", "host", "10809", "a/b");
	parse_tcp("nbd://host/a%2fb", "host", "10809", "a/b");
	parse_tcp("nbd://host/%41%62c", "host", "10809", "Abc");
	parse_tcp("nbd://host/my%20disk", "host", "10809", "my disk");
	parse_tcp("nbd://host/%e2%82%ac", "host", "10809", "\xe2\x82\xac");
	parse_tcp("nbd://host/100%25", "host", "10809", "100%");
	parse_tcp("nbd://host/%3Fq", "host", "10809", "?q");
}

static void test_tcp_query_ignored(void **state)
{
	/* A query ends the export name; parameters but TLS are ignored. */
	parse_tcp("nbd://host/exp?foo=bar", "host", "10809", "exp");
	parse_tcp("nbd://host:2000?foo=bar", "host", "2000", "");
	parse_tcp("nbd://host?foo=/x", "host", "10809", "");
}

static void test_tcp_tls_query(void **state)
{
	parse_err("nbd://host/exp?tls-certificates=/etc/pki", "TLS");
	parse_err("nbd://host/exp?tls-psk-file=k", "TLS");
}

static void test_tcp_export_limits(void **state)
{
	static char uri[URI_MAX];
	struct nbd_uri u;
	size_t i, n;

	/* 4096 bytes is the longest name, counted after decoding. */
	n = snprintf(uri, sizeof(uri), "nbd://h/");
	memset(uri + n, 'e', NBD_URI_EXPORT_MAX);
	uri[n + NBD_URI_EXPORT_MAX] = 0;
	parse_ok(uri, &u);
	assert_int_equal(strlen(u.export_name), NBD_URI_EXPORT_MAX);

	uri[n + NBD_URI_EXPORT_MAX] = 'e';
	uri[n + NBD_URI_EXPORT_MAX + 1] = 0;
	parse_err(uri, "bad export name");

	n = snprintf(uri, sizeof(uri), "nbd://h/");
	for (i = 0; i < NBD_URI_EXPORT_MAX; i++)
		n += snprintf(uri + n, sizeof(uri) - n, "%%41");
	parse_ok(uri, &u);
	assert_int_equal(strlen(u.export_name), NBD_URI_EXPORT_MAX);
	assert_int_equal(u.export_name[NBD_URI_EXPORT_MAX - 1], 'A');
}

static void test_tcp_host_limits(void **state)
{
	char uri[NBD_URI_HOST_MAX + 64];
	struct nbd_uri u;
	size_t n;

	n = snprintf(uri, sizeof(uri), "nbd://");
	memset(uri + n, 'h', NBD_URI_HOST_MAX - 1);
	strcpy(uri + n + NBD_URI_HOST_MAX - 1, ":99/x");
	parse_ok(uri, &u);
	assert_int_equal(strlen(u.host), NBD_URI_HOST_MAX - 1);
	assert_string_equal(u.port, "99");

	memset(uri + n, 'h', NBD_URI_HOST_MAX);
	strcpy(uri + n + NBD_URI_HOST_MAX, ":99/x");
	parse_err(uri, "host too long");

	n = snprintf(uri, sizeof(uri), "nbd://[");
	memset(uri + n, 'a', NBD_URI_HOST_MAX);
	strcpy(uri + n + NBD_URI_HOST_MAX, "]/x");
	parse_err(uri, "host too long");
}

/* ---- nbd+unix:// -------------------------------------------------------- */

static void test_unix(void **state)
{
	parse_unix("nbd+unix:///exp?socket=/tmp/a.sock", "/tmp/a.sock", "exp");
	parse_unix("nbd+unix:///?socket=/tmp/a.sock", "/tmp/a.sock", "");
	parse_unix("nbd+unix://?socket=/tmp/a.sock", "/tmp/a.sock", "");
	parse_unix("nbd+unix:///a%2Fb?socket=/run/x", "/run/x", "a/b");
	parse_unix("nbd+unix:///exp?socket=rel.sock", "rel.sock", "exp");
}

static void test_unix_query(void **state)
{
	parse_unix("nbd+unix:///e?foo=1&socket=/tmp/s&bar=2", "/tmp/s", "e");
	parse_unix("nbd+unix:///e?socket=/tmp/s&socket=/tmp/t", "/tmp/s", "e");
	parse_unix("nbd+unix:///e?socket=/tmp/a%20b.sock", "/tmp/a b.sock",
		   "e");
	parse_unix("nbd+unix:///e?socket=/tmp/a%26b", "/tmp/a&b", "e");
}

/* Parts that are parsed but ignored are named in u.warning. */
static void test_warnings(void **state)
{
	struct nbd_uri u;

	parse_ok("nbd://h/e", &u);
	assert_string_equal(u.warning, "");
	parse_ok("nbd://user@host:1234/e", &u);
	assert_string_equal(u.host, "host");
	assert_string_equal(u.port, "1234");
	assert_string_equal(u.warning,
			    "the user name 'user' in the uri is ignored (it is only used for TLS, which this engine does not speak)");
	parse_ok("nbd+unix:///e?foo=1&socket=/tmp/s&bar", &u);
	assert_string_equal(u.socket, "/tmp/s");
	assert_string_equal(u.warning,
			    "unknown query parameter 'foo' in the uri is ignored; unknown query parameter 'bar' in the uri is ignored");
	parse_ok("nbd://h/e?socket=/x", &u);
	assert_string_equal(u.warning,
			    "unknown query parameter 'socket' in the uri is ignored");
	parse_err("nbd://h/e?tls-certificates=/etc/pki", "TLS parameters are not supported");
	parse_ok("nbd://h/e?attls=1", &u);
}

static void test_unix_socket_limits(void **state)
{
	char uri[256];
	struct nbd_uri u;
	size_t max = sizeof(u.socket) - 1, n;

	n = snprintf(uri, sizeof(uri), "nbd+unix:///e?socket=/");
	memset(uri + n, 's', max - 1);
	uri[n + max - 1] = 0;
	parse_ok(uri, &u);
	assert_int_equal(strlen(u.socket), max);

	/* One byte more than sun_path holds with its NUL. */
	uri[n + max - 1] = 's';
	uri[n + max] = 0;
	parse_err(uri, "bad socket path");
	uri[n + max] = '&';
	strcpy(uri + n + max + 1, "x=y");
	parse_err(uri, "bad socket path");
}

static void test_unix_errors(void **state)
{
	parse_err("nbd+unix:///exp", "socket=");
	parse_err("nbd+unix:///exp?", "socket=");
	parse_err("nbd+unix:///exp?sock=/tmp/s", "socket=");
	parse_err("nbd+unix:///exp?socket=", "socket=");
	parse_err("nbd+unix:///exp?xsocket=/tmp/s", "socket=");
	parse_err("nbd+unix://", "three slashes");

	parse_err("nbd+unix://host/exp?socket=/tmp/s", "takes no host");
	parse_err("nbd+unix://host/", "takes no host");
	parse_err("nbd+unix://localhost?socket=/tmp/s", "takes no host");

	parse_err("nbd+unix:///%zz?socket=/tmp/s", "bad export name");
	parse_err("nbd+unix:///e?socket=/tmp/%zz", "bad socket path");
	parse_err("nbd+unix:///e?socket=/tmp/%00", "bad socket path");
	parse_err("nbd+unix:///e?socket=/tmp/%2", "bad socket path");
}

/* ---- errors ------------------------------------------------------------- */

static void test_empty(void **state)
{
	parse_err(NULL, "empty uri");
	parse_err("", "empty uri");
	parse_err("", "expected nbd://");
}

static void test_unknown_scheme(void **state)
{
	static const char *const bad[] = {
		"http://host/",
		"host:10809",
		"/tmp/a.sock",
		"nbd:",
		"nbd:/host",
		"nbd:host",
		"nbd+tcp://host/",
		"nbd+vsock://2/",
		"unix:///tmp/a.sock",
		" nbd://host/",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		parse_err(bad[i], "expected nbd://");
	parse_err("http://host/", "nbd+unix:///");
}

static void test_tls_schemes(void **state)
{
	parse_err("nbds://host/exp", "TLS");
	parse_err("nbds://host:10809", "TLS");
	parse_err("nbds+unix:///exp?socket=/tmp/s", "TLS");
}

static void test_no_host(void **state)
{
	parse_err("nbd://", "no host");
	parse_err("nbd:///exp", "no host");
	parse_err("nbd://:10809/exp", "no host");
	parse_err("nbd://[]/exp", "no host");
	parse_err("nbd://?x=y", "no host");
}

static void test_bad_port(void **state)
{
	static const char *const bad[] = {
		"nbd://host:0/",
		"nbd://host:0",
		"nbd://host:70000/",
		"nbd://host:65536/",
		"nbd://host:abc/",
		"nbd://host:abc",
		"nbd://host:/exp",
		"nbd://host:",
		"nbd://host:-1/",
		"nbd://host:12ab/",
		"nbd://host:1:2/",
		"nbd://host:99999999999999999999999/",
		"nbd://[::1]:0/",
		"nbd://[::1]:abc",
		"nbd://[::1]:/",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		parse_err(bad[i], "port must be a number from 1 to 65535");
}

static void test_bad_ipv6(void **state)
{
	parse_err("nbd://[::1/exp", "lacks ']'");
	parse_err("nbd://[::1", "lacks ']'");
	parse_err("nbd://[::1]x/exp", "junk after host");
	parse_err("nbd://[::1]1234/exp", "junk after host");
}

static void test_bad_percent(void **state)
{
	static const char *const bad[] = {
		"nbd://host/%zz",
		"nbd://host/a%zzb",
		"nbd://host/%g1",
		"nbd://host/%1g",
		"nbd://host/%0",
		"nbd://host/a%0",
		"nbd://host/%",
		"nbd://host/a%",
		"nbd://host/%00",
		"nbd://host/a%00b",
		"nbd://host/%0?x=y",
		"nbd://host/%%41",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		parse_err(bad[i], "bad export name");
}

static void test_error_buffer(void **state)
{
	struct nbd_uri u;
	char err[16];

	/* A short buffer gets a truncated, terminated message. */
	memset(err, 'x', sizeof(err));
	assert_int_equal(nbd_uri_parse("bogus", &u, err, sizeof(err)), -1);
	assert_int_equal(strlen(err), sizeof(err) - 1);
	assert_memory_equal(err, "unsupported uri", 15);

	/* The message names the uri it is about. */
	parse_err("nbd://host:0/", "'nbd://host:0/'");
}

static void test_reparse_clears(void **state)
{
	struct nbd_uri u;

	/* A second parse into the same struct leaves nothing behind. */
	parse_ok("nbd+unix:///e?socket=/tmp/s", &u);
	parse_ok("nbd://host", &u);
	assert_false(u.unix_socket);
	assert_string_equal(u.socket, "");
	assert_string_equal(u.export_name, "");
	parse_ok("nbd+unix:///?socket=/tmp/s", &u);
	assert_string_equal(u.host, "");
	assert_string_equal(u.port, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp_host_only),
		cmocka_unit_test(test_tcp_port_export),
		cmocka_unit_test(test_tcp_default_port),
		cmocka_unit_test(test_tcp_ipv6),
		cmocka_unit_test(test_tcp_percent_decoding),
		cmocka_unit_test(test_tcp_query_ignored),
		cmocka_unit_test(test_tcp_tls_query),
		cmocka_unit_test(test_tcp_export_limits),
		cmocka_unit_test(test_tcp_host_limits),
		cmocka_unit_test(test_unix),
		cmocka_unit_test(test_unix_query),
		cmocka_unit_test(test_unix_socket_limits),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_unix_errors),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_unknown_scheme),
		cmocka_unit_test(test_tls_schemes),
		cmocka_unit_test(test_no_host),
		cmocka_unit_test(test_bad_port),
		cmocka_unit_test(test_bad_ipv6),
		cmocka_unit_test(test_bad_percent),
		cmocka_unit_test(test_error_buffer),
		cmocka_unit_test(test_reparse_clears),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
