// SPDX-License-Identifier: GPL-2.0-only
/*
 * The client's reply stream parser (proto/nbd/nbd_replies.h) fed whatever a
 * server sends, the way the engine feeds it: bytes staged in a receive
 * buffer and presented again until consumed (nbd_rx_feed), and read
 * payloads received in place (nbd_rx_payload_dst/_received).
 *
 * Input:
 *   byte 0     bit 0 structured replies negotiated; bits 1-2 how payloads
 *              arrive: 0 staged only, 1 in place whenever one is due,
 *              2-3 either, chosen each time; bit 3 finished requests are
 *              sent again (same cookie, fresh buffer), as slots are reused
 *   byte 1     max_body, from a table (bits 0-2)
 *   bytes 2-3  which requests of the table are outstanding (big-endian
 *              bit mask, bit i = request i)
 *   bytes 4-7  seed of the receive sizes and choices
 *   the rest   the server's bytes
 *
 * Checked: only outstanding requests are completed, each at most once per
 * sending, with 0 or a positive errno; nothing is consumed beyond what was
 * presented; a full receive buffer always makes progress; payload is only
 * due when everything presented was consumed, and only inside its read's
 * buffer; after -1 errmsg says why. Each READ buffer is its own malloc of
 * exactly len bytes and is freed the moment its request completes, so
 * ASan sees any write outside it or after it.
 */
#include <string.h>

#include "fuzz.h"
#include "nbd_replies.h"

#define HDR_LEN		8
#define NREQ		16
#define MAX_REARMS	64

struct fake_req {
	uint64_t cookie;
	uint16_t type;
	uint64_t offset;
	uint32_t len;
};

/* Offsets near 2^64 and 2^63, odd lengths, an empty read, cookie 0. */
static const struct fake_req table[NREQ] = {
	{ 1, NBD_CMD_READ, 0, 4096 },
	{ 2, NBD_CMD_READ, UINT64_MAX - 4095, 4096 },
	{ 3, NBD_CMD_READ, UINT64_MAX, 1 },
	{ 4, NBD_CMD_READ, 1ULL << 40, 65539 },
	{ 5, NBD_CMD_READ, 512, 0 },
	{ 6, NBD_CMD_WRITE, 4096, 512 },
	{ 7, NBD_CMD_TRIM, 1ULL << 63, UINT32_MAX },
	{ 8, NBD_CMD_FLUSH, 0, 0 },
	{ 9, NBD_CMD_READ, 7, 13 },
	{ 0, NBD_CMD_READ, 0, 1 },
	{ UINT64_MAX, NBD_CMD_READ, UINT64_MAX - 65535, 65536 },
	{ 0x100000001ULL, NBD_CMD_WRITE, UINT64_MAX, 1 },
	{ 1ULL << 63, NBD_CMD_TRIM, 0, 1 },
	{ 12345, NBD_CMD_READ, 4095, 8193 },
	{ 0x42, NBD_CMD_FLUSH, UINT64_MAX, 0 },
	{ 0x10, NBD_CMD_READ, (1ULL << 63) - 1, 2 },
};

static const uint32_t max_bodies[8] = {
	0, 6, 12, 26, 64, 4096, 65536, (256u << 10) - 32,
};

struct owner {
	struct nbd_rx_req req[NREQ];
	bool outstanding[NREQ];
	bool rearm_due[NREQ];
	bool rearm;
	int rearms;
	int completed;
};

static struct owner *the_owner;

static void send_req(struct owner *o, int i)
{
	struct nbd_rx_req *r = &o->req[i];

	r->type = table[i].type;
	r->offset = table[i].offset;
	r->len = table[i].len;
	/* Exactly len bytes (at least one: malloc(0) may return NULL). */
	r->buf = r->type == NBD_CMD_READ ? malloc(r->len ? r->len : 1) : NULL;
	nbd_rx_req_init(r);
	o->outstanding[i] = true;
}

static int req_index(struct owner *o, const struct nbd_rx_req *req)
{
	int i = req - o->req;

	FUZZ_CHECK(i >= 0 && i < NREQ && req == &o->req[i]);
	return i;
}

static struct nbd_rx_req *lookup(void *owner, uint64_t cookie)
{
	struct owner *o = owner;
	int i;

	FUZZ_CHECK(o == the_owner);
	for (i = 0; i < NREQ; i++)
		if (o->outstanding[i] && table[i].cookie == cookie)
			return &o->req[i];
	return NULL;
}

static void complete(void *owner, struct nbd_rx_req *req, int error)
{
	struct owner *o = owner;
	int i = req_index(o, req);

	FUZZ_CHECK(o->outstanding[i]);
	FUZZ_CHECK(error >= 0 && error < 4096);
	o->outstanding[i] = false;
	o->completed++;
	/* The buffer goes back to its user now: later writes are bugs. */
	free(req->buf);
	req->buf = NULL;
	if (o->rearm && o->rearms < MAX_REARMS) {
		o->rearm_due[i] = true;
		o->rearms++;
	}
}

static void notice(void *owner, const char *msg)
{
	FUZZ_CHECK(owner == the_owner);
	FUZZ_CHECK(msg && msg[0]);
}

static const struct nbd_rx_ops ops = {
	.lookup = lookup,
	.complete = complete,
	.notice = notice,
};

/* Requests sent again go out between receives, as in the engine. */
static void rearm_due(struct owner *o)
{
	int i;

	for (i = 0; i < NREQ; i++) {
		if (o->rearm_due[i]) {
			o->rearm_due[i] = false;
			send_req(o, i);
		}
	}
}

/* While payload is due it lies inside the buffer of an outstanding read. */
static uint32_t payload_due(struct owner *o, const struct nbd_rx *rx,
			    uint8_t **dst)
{
	uint32_t left = nbd_rx_payload_dst(rx, dst);
	const struct nbd_rx_req *r;

	if (!left)
		return 0;
	r = rx->req;
	FUZZ_CHECK(r && o->outstanding[req_index(o, r)]);
	FUZZ_CHECK(r->type == NBD_CMD_READ && r->buf);
	FUZZ_CHECK(*dst >= r->buf && left <= r->len &&
		   (size_t)(*dst - r->buf) <= r->len - left);
	return left;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct owner *o;
	struct nbd_rx *rx;
	struct fuzz_rng rng;
	uint8_t *stage, *fed, *dst;
	size_t pos, used, cap, k;
	uint32_t max_body, due;
	unsigned int path;
	uint16_t mask;
	bool in_place;
	long ret;
	int i;

	if (size < HDR_LEN)
		return 0;
	o = calloc(1, sizeof(*o));
	rx = malloc(sizeof(*rx));
	the_owner = o;
	path = (data[0] >> 1) & 3;
	o->rearm = data[0] & 8;
	max_body = max_bodies[data[1] & 7];
	mask = get_be16(data + 2);
	fuzz_rng_init(&rng, get_be32(data + 4));
	for (i = 0; i < NREQ; i++)
		if (mask & (1u << i))
			send_req(o, i);
	nbd_rx_init(rx, &ops, o, data[0] & 1, max_body);

	/* The receive buffer: a whole body of max_body, and a header. */
	cap = max_body + 32;
	stage = malloc(cap);
	used = 0;
	pos = HDR_LEN;
	while (pos < size) {
		due = payload_due(o, rx, &dst);
		in_place = path == 1 ||
			   (path >= 2 && (fuzz_rng_next(&rng) & 1));
		if (due && in_place) {
			/* Straight into the read's buffer, nothing staged. */
			FUZZ_CHECK(!used);
			k = fuzz_split(&rng, size - pos);
			if (k > due)
				k = due;
			memcpy(dst, data + pos, k);
			pos += k;
			nbd_rx_payload_received(rx, k);
			rearm_due(o);
			continue;
		}

		k = fuzz_split(&rng, size - pos);
		if (k > cap - used)
			k = cap - used;
		FUZZ_CHECK(k);
		memcpy(stage + used, data + pos, k);
		used += k;
		pos += k;

		/* Presented as an exact-size copy: ASan sees any overread. */
		fed = malloc(used);
		memcpy(fed, stage, used);
		ret = nbd_rx_feed(rx, fed, used);
		free(fed);
		if (ret < 0) {
			FUZZ_CHECK(ret == -1);
			FUZZ_CHECK(rx->errmsg[0]);
			FUZZ_CHECK(strnlen(rx->errmsg, sizeof(rx->errmsg)) <
				   sizeof(rx->errmsg));
			break;
		}
		FUZZ_CHECK((size_t)ret <= used);
		/* A full buffer that makes no progress would hang the owner. */
		FUZZ_CHECK(used < cap || ret > 0);
		if (payload_due(o, rx, &dst))
			FUZZ_CHECK((size_t)ret == used);
		memmove(stage, stage + ret, used - ret);
		used -= ret;
		rearm_due(o);
	}

	/* The stream ended or broke: the owner fails what is outstanding. */
	for (i = 0; i < NREQ; i++)
		if (o->outstanding[i])
			free(o->req[i].buf);
	free(stage);
	free(rx);
	free(o);
	the_owner = NULL;
	return 0;
}
