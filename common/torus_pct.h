/* SPDX-License-Identifier: GPL-2.0-only */
/* Percent-decoding of URI parts (%XX escapes), shared by the URI parsers. */
#ifndef TORUS_PCT_H
#define TORUS_PCT_H

#include <stddef.h>

static inline int pct_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decodes src[0..len) into dst (size dstlen), NUL-terminated. -1 on an
 * escape that is cut short, not hex or %00, or when dst has no room.
 */
static inline int pct_decode(char *dst, size_t dstlen, const char *src,
			     size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		char c = src[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return -1;
			hi = pct_hexval(src[i + 1]);
			lo = hi < 0 ? -1 : pct_hexval(src[i + 2]);
			if (lo < 0)
				return -1;
			c = (char)(hi << 4 | lo);
			if (!c)
				return -1;
			i += 2;
		}
		if (o + 1 >= dstlen)
			return -1;
		dst[o++] = c;
	}
	dst[o] = '\0';
	return 0;
}

#endif /* TORUS_PCT_H */
