/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * NBD client handshake as an explicit state machine that never touches a
 * socket. The driver loop is:
 *
 *	nbd_hs_start(&hs, &cfg);
 *	for (;;) {
 *		send hs.out[0..hs.outlen) if outlen, then hs.outlen = 0;
 *		if (hs.state == NBD_HS_DONE or NBD_HS_FAILED) stop;
 *		read exactly hs.want bytes;
 *		on EOF or reset: nbd_hs_closed(&hs);
 *		else: nbd_hs_feed(&hs, bytes, hs.want);
 *		if (hs.state == NBD_HS_RECONNECT) reconnect, nbd_hs_restart(&hs);
 *	}
 *
 * Legacy servers are handled by visible transitions: a server that drops
 * the connection on NBD_OPT_GO (coreos-torus) or resets it after misparsing it
 * (ZeroOS 0-Disk) moves the machine to NBD_HS_RECONNECT in auto mode, and
 * the retry uses NBD_OPT_EXPORT_NAME only.
 */
#ifndef TORUS_NBD_HANDSHAKE_H
#define TORUS_NBD_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

enum nbd_hs_mode {
	NBD_HS_MODE_AUTO,		/* OPT_GO, then EXPORT_NAME fallbacks */
	NBD_HS_MODE_GO,			/* OPT_GO only */
	NBD_HS_MODE_EXPORT_NAME,	/* NBD_OPT_EXPORT_NAME only */
};

enum nbd_hs_state {
	NBD_HS_MAGIC,		/* reading NBDMAGIC and the second magic */
	NBD_HS_HFLAGS,		/* reading the newstyle handshake flags */
	NBD_HS_OLDSTYLE,	/* reading the oldstyle size and flags */
	NBD_HS_OPTREP_HDR,	/* reading an option reply header */
	NBD_HS_OPTREP_DATA,	/* reading an option reply payload */
	NBD_HS_EXPORT_REPLY,	/* reading the NBD_OPT_EXPORT_NAME reply */
	NBD_HS_DONE,		/* transmission phase reached */
	NBD_HS_FAILED,		/* see errmsg */
	NBD_HS_RECONNECT,	/* reconnect, then nbd_hs_restart() */
};

struct nbd_hs_config {
	const char *export_name;
	enum nbd_hs_mode mode;
	bool structured_replies;	/* ask for NBD_OPT_STRUCTURED_REPLY */
};

/* What the handshake learned about the export. */
struct nbd_export {
	uint64_t size;
	uint16_t hflags;		/* handshake flags the server offered */
	uint16_t tflags;		/* transmission flags */
	bool block_size_known;		/* NBD_INFO_BLOCK_SIZE received */
	uint32_t min_block;
	uint32_t pref_block;
	uint32_t max_block;
	bool structured_replies;
	bool oldstyle;
	bool via_export_name;		/* OPT_GO was not used */
	bool fell_back;			/* auto mode had to reconnect */
};

#define NBD_HS_OUT_MAX		(16 + 4 + NBD_HS_NAME_MAX + 2 + 2 * 4)
#define NBD_HS_NAME_MAX		4096
#define NBD_HS_REPLY_MAX	65536	/* largest option reply payload read */

struct nbd_hs {
	struct nbd_hs_config cfg;
	enum nbd_hs_state state;
	enum nbd_hs_mode mode;		/* current: auto degrades to export-name */
	uint32_t pending_opt;		/* option whose reply is awaited */
	uint32_t rep_type;		/* reply being read (OPTREP_DATA) */
	bool no_zeroes;			/* agreed with the server */
	size_t want;			/* bytes to read next */
	uint8_t out[NBD_HS_OUT_MAX];	/* bytes to send next */
	size_t outlen;
	struct nbd_export exp;
	char errmsg[512];
};

void nbd_hs_start(struct nbd_hs *hs, const struct nbd_hs_config *cfg);
/* After NBD_HS_RECONNECT, on the new connection. */
void nbd_hs_restart(struct nbd_hs *hs);
/* Feed exactly hs->want bytes. */
void nbd_hs_feed(struct nbd_hs *hs, const uint8_t *buf, size_t len);
/* The server closed or reset the connection while hs->want bytes were due. */
void nbd_hs_closed(struct nbd_hs *hs);

const char *nbd_hs_mode_name(enum nbd_hs_mode mode);

#endif /* TORUS_NBD_HANDSHAKE_H */
