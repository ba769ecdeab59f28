// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shim's command line value parsers (shims/nbd/parse.h) on arbitrary
 * strings: sizes, rates, numbers, listen addresses, Redis addresses
 * (storage/hostport.h) and --store through the store registry
 * (storage/store.h), as a user types them.
 *
 * Input: byte 0 picks the parser (mod 6), the rest is the string (cut at
 * the first NUL).
 */
#include <string.h>

#include "fuzz.h"
#include "parse.h"
#include "store.h"

static void check_str(const char *s, size_t size)
{
	FUZZ_CHECK(strnlen(s, size) < size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_spec spec = { 0 };
	char err[1024];
	struct listen_addr la;
	struct redis_addr ra;
	uint64_t v;
	char *s;

	if (!size)
		return 0;
	s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = 0;

	switch (data[0] % 6) {
	case 0:
		parse_size(s, &v);
		break;
	case 1:
		if (!parse_rate(s, &v))
			FUZZ_CHECK(v);
		break;
	case 2:
		if (!parse_uint(s, 65535, &v))
			FUZZ_CHECK(v <= 65535);
		break;
	case 3:
		if (!parse_listen(s, &la)) {
			if (la.is_unix) {
				check_str(la.path, sizeof(la.path));
				FUZZ_CHECK(la.path[0]);
			} else {
				check_str(la.host, sizeof(la.host));
				FUZZ_CHECK(la.host[0]);
				FUZZ_CHECK(la.port >= 0 && la.port <= 65535);
			}
		}
		break;
	case 4:
		if (!parse_hostport(s, &ra)) {
			check_str(ra.host, sizeof(ra.host));
			FUZZ_CHECK(ra.host[0] && ra.port >= 0 &&
				   ra.port <= 65535);
		}
		break;
	case 5:
		err[0] = 0;
		if (!store_parse(&spec, s, err, sizeof(err))) {
			FUZZ_CHECK(spec.type && spec.priv && spec.arg == s);
			store_spec_free(&spec);
		} else {
			FUZZ_CHECK(err[0]);
			check_str(err, sizeof(err));
			FUZZ_CHECK(!spec.type && !spec.priv);
		}
		break;
	}
	free(s);
	return 0;
}
