/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A client's attach request (proto/tcmu/tcmu_attach.h) as tcmu-shim takes
 * it: received with its fds (a peer silent for TCMU_ATTACH_HELLO_MS gets
 * the host's hello), checked, its region mapped; the reply, or a refusal
 * the log says too. A peer that is not a TCMU client is logged with what
 * it sent, and let go. attach.c serves the ring.
 */
#ifndef TCMU_SHIM_ATTACH_REQ_H
#define TCMU_SHIM_ATTACH_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcmu_attach.h"
#include "tcmu_doorbell.h"

/* One connection to the socket, from its request to its ring's end. */
struct client {
	int sock;
	int fds[TCMU_SHARED_NFDS];
	int nfds;
	unsigned long id;
	uint32_t version;		/* of the request: the reply's */
	uint32_t kind;			/* enum tcmu_attach_kind */
	size_t got;			/* bytes of the request received */
	bool helloed;			/* it had the host's hello */
	char name[64];
	uint8_t *region;
	uint64_t region_size;
	struct tcmu_doorbell *bell;	/* the page past the region, or NULL */
};

/*
 * The request, checked, and its region mapped (c->region), and the
 * doorbell page when the memfd holds one (c->bell): 0, or -1 once it was
 * refused or its peer logged. The fds stay in c->fds either way.
 */
int attach_take_request(struct client *c, unsigned int timeout_s);
/* With status 0 and a doorbell, the reply says that it is kept. */
void attach_reply(struct client *c, int status, const char *msg);
/* The doorbell's page unmapped, if any. */
void attach_bell_unmap(struct tcmu_doorbell *bell);
/* Refuse the ring: the client reads why, the log says it too. */
void attach_refuse(struct client *c, int status, const char *msg);

#endif /* TCMU_SHIM_ATTACH_REQ_H */
