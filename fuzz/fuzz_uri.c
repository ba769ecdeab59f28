// SPDX-License-Identifier: GPL-2.0-only
/*
 * nbd_uri_parse() on arbitrary strings: what a user writes in uri=.
 *
 * Input: the URI itself (cut at the first NUL, as a C string would be).
 */
#include <string.h>

#include "fuzz.h"
#include "nbd_uri.h"

static void check_field(const char *s, size_t size)
{
	FUZZ_CHECK(strnlen(s, size) < size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nbd_uri u;
	char *uri, *tiny;
	char err[512];
	long port;
	int ret;

	/* An exact-size copy, so that ASan sees a read past the end. */
	uri = malloc(size + 1);
	memcpy(uri, data, size);
	uri[size] = 0;

	err[0] = 0;
	ret = nbd_uri_parse(uri, &u, err, sizeof(err));
	FUZZ_CHECK(ret == 0 || ret == -1);
	if (ret) {
		FUZZ_CHECK(err[0]);
		check_field(err, sizeof(err));
	} else {
		check_field(u.host, sizeof(u.host));
		check_field(u.port, sizeof(u.port));
		check_field(u.socket, sizeof(u.socket));
		check_field(u.export_name, sizeof(u.export_name));
		check_field(u.warning, sizeof(u.warning));
		if (u.unix_socket) {
			FUZZ_CHECK(u.socket[0]);
		} else {
			FUZZ_CHECK(u.host[0]);
			port = strtol(u.port, NULL, 10);
			FUZZ_CHECK(port >= 1 && port <= 65535);
		}
	}

	/* A one-byte message buffer must only ever hold the terminator. */
	tiny = malloc(1);
	tiny[0] = 'x';
	ret = nbd_uri_parse(uri, &u, tiny, 1);
	FUZZ_CHECK(!ret || !tiny[0]);
	free(tiny);
	free(uri);
	return 0;
}
