// SPDX-License-Identifier: GPL-2.0-only
/*
 * tcmu_uri_parse() and tcmu_uri_is_tcmu() (proto/tcmu/tcmu_uri.c) on
 * arbitrary strings: what a user writes in uri= for the TCMU transport.
 *
 * Input: the URI itself (cut at the first NUL, as a C string would be).
 */
#include <string.h>

#include "fuzz.h"
#include "tcmu_uri.h"

static void check_field(const char *s, size_t size)
{
	FUZZ_CHECK(strnlen(s, size) < size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tcmu_uri u;
	char *uri, *tiny;
	char err[512];
	bool is_tcmu;
	int ret;

	/* An exact-size copy, so that ASan sees a read past the end. */
	uri = malloc(size + 1);
	memcpy(uri, data, size);
	uri[size] = 0;

	is_tcmu = tcmu_uri_is_tcmu(uri);
	err[0] = 0;
	ret = tcmu_uri_parse(uri, &u, err, sizeof(err));
	FUZZ_CHECK(ret == 0 || ret == -1);
	if (ret) {
		FUZZ_CHECK(err[0]);
		check_field(err, sizeof(err));
	} else {
		/* only this transport's scheme parses, to a socket path */
		FUZZ_CHECK(is_tcmu);
		check_field(u.socket, sizeof(u.socket));
		check_field(u.warning, sizeof(u.warning));
		FUZZ_CHECK(u.socket[0]);
	}

	/* A one-byte message buffer must only ever hold the terminator. */
	tiny = malloc(1);
	tiny[0] = 'x';
	ret = tcmu_uri_parse(uri, &u, tiny, 1);
	FUZZ_CHECK(!ret || !tiny[0]);
	free(tiny);
	free(uri);
	return 0;
}
