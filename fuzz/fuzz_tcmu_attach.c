// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU attach exchange's decoders (proto/tcmu/tcmu_attach.c) on
 * arbitrary bytes: a request as a handler host receives it from any
 * client of its socket, a reply as the engine receives it, the host's
 * hello as any client of the socket may (an NBD client given the wrong
 * uri), and the magic that tells the three apart.
 *
 * Input: byte 0 picks the message (bit 0: request or reply; bit 2: the
 * hello, whatever bit 0 says) and whether the rest follows the right magic
 * (bit 1), so that the fields behind it are reached; the rest is the
 * message, at any length.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "tcmu_attach.h"

static void check_req(const uint8_t *buf, size_t len)
{
	uint8_t again[TCMU_ATTACH_REQ_LEN];
	struct tcmu_attach_req r, r2;
	const char *msg = NULL;

	if (tcmu_attach_req_decode(buf, len, &r, &msg)) {
		FUZZ_CHECK(msg && msg[0]);
		return;
	}
	FUZZ_CHECK(len == TCMU_ATTACH_REQ_LEN);
	FUZZ_CHECK(tcmu_attach_magic(buf, len) == TCMU_MAGIC_REQ);
	FUZZ_CHECK(r.version == TCMU_ATTACH_V1 ? !r.flags :
		   r.version == TCMU_ATTACH_VERSION &&
		   r.flags <= TCMU_ATTACH_SHARED);
	/* what was accepted encodes back to the same bytes */
	tcmu_attach_req_encode(again, &r);
	FUZZ_CHECK(!memcmp(again, buf, TCMU_ATTACH_REQ_LEN));
	FUZZ_CHECK(!tcmu_attach_req_decode(again, sizeof(again), &r2, &msg));
	FUZZ_CHECK(r2.region_size == r.region_size);
}

static void check_reply(const uint8_t *buf, size_t len)
{
	uint8_t again[TCMU_ATTACH_REPLY_LEN];
	struct tcmu_attach_reply r, r2;
	const char *msg = NULL;

	if (tcmu_attach_reply_decode(buf, len, &r, &msg)) {
		FUZZ_CHECK(msg && msg[0]);
		return;
	}
	FUZZ_CHECK(len == TCMU_ATTACH_REPLY_LEN);
	FUZZ_CHECK(tcmu_attach_magic(buf, len) == TCMU_MAGIC_REPLY);
	FUZZ_CHECK(r.version == TCMU_ATTACH_VERSION ||
		   r.version == TCMU_ATTACH_V1);
	/* the message is a C string inside its field, whatever was sent */
	FUZZ_CHECK(strnlen(r.msg, sizeof(r.msg)) < sizeof(r.msg));
	tcmu_attach_reply_encode(again, &r);
	FUZZ_CHECK(!tcmu_attach_reply_decode(again, sizeof(again), &r2, &msg));
	FUZZ_CHECK(r2.status == r.status && !strcmp(r2.msg, r.msg));
	FUZZ_CHECK(r2.flags == r.flags && r2.tag == r.tag &&
		   r2.submitters == r.submitters &&
		   r2.region_size == r.region_size);
}

static void check_hello(const uint8_t *buf, size_t len)
{
	uint8_t again[TCMU_ATTACH_HELLO_LEN];
	const char *msg = NULL;
	uint32_t version;

	if (tcmu_attach_hello_decode(buf, len, &version, &msg)) {
		FUZZ_CHECK(msg && msg[0]);
		return;
	}
	FUZZ_CHECK(len == TCMU_ATTACH_HELLO_LEN);
	FUZZ_CHECK(tcmu_attach_magic(buf, len) == TCMU_MAGIC_HELLO);
	tcmu_attach_hello_encode(again, version);
	FUZZ_CHECK(!memcmp(again, buf, TCMU_ATTACH_HELLO_LEN));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The magics, as the other side writes them (tcmu_attach.c). */
	static const char req_magic[16] = "TORUS-TCMU-RING";
	static const char reply_magic[16] = "TORUS-TCMU-ACK.";
	static const char hello_magic[16] = "TORUS-TCMU-HOST";
	bool reply, magic, hello;
	enum tcmu_attach_magic which;
	uint8_t *buf;
	size_t len;

	if (!size)
		return 0;
	reply = data[0] & 1;
	magic = data[0] & 2;
	hello = data[0] & 4;
	len = size - 1 + (magic ? 16 : 0);
	/* An exact-size copy, so that ASan sees a read past the end. */
	buf = malloc(len ? len : 1);
	if (magic)
		memcpy(buf, hello ? hello_magic : reply ? reply_magic :
		       req_magic, 16);
	memcpy(buf + (magic ? 16 : 0), data + 1, size - 1);
	which = tcmu_attach_magic(buf, len);
	FUZZ_CHECK(which == TCMU_MAGIC_NONE || len >= TCMU_ATTACH_MAGIC_LEN);
	if (hello)
		check_hello(buf, len);
	else if (reply)
		check_reply(buf, len);
	else
		check_req(buf, len);
	free(buf);
	return 0;
}
