/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The nbd store's two files: store_nbd.c connects, parses and opens;
 * store_nbd_io.c moves the data (synchronous calls and asynchronous
 * requests) through a client it builds on first use. The I/O file calls
 * back only nbd_store_redial(); the opening file reaches the I/O only
 * through the operations table.
 */
#ifndef TORUS_BRIDGES_STORE_NBD_H
#define TORUS_BRIDGES_STORE_NBD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "nbd_client.h"
#include "store_ops.h"
#include "torus_split.h"
#include "torus_util.h"

/* conns=N: the most connections per session. */
#define NBD_STORE_MAX_CONNS	16

struct nbd_store {
	struct store st;
	char uri[4096];			/* as given, for messages and sessions */
	char label[4200];		/* nbd_uri_label(), for the client */
	unsigned int timeout_s;
	struct nbd_export exp;
	uint32_t max_req;
	unsigned int conns;		/* per session */
	int fds[NBD_STORE_MAX_CONNS];	/* until the client owns them */
	unsigned int nfds;
	struct nbd_client *client;
	pthread_t owner;		/* the thread that built the client */
	struct torus_split sync;	/* the synchronous call's pieces */

	/* Asynchronous requests (store_nbd_io.c). */
	unsigned int aio_depth;		/* 0: none opened */
	struct torus_fifo waiting;	/* pieces still to send, in order */
	struct torus_fifo finished;	/* all back, for reap() */
};

static inline struct nbd_store *to_nbd(struct store *st)
{
	return container_of(st, struct nbd_store, st);
}

/* store_nbd.c: the opened store's own connections (see there). */
int nbd_store_redial(struct nbd_store *n);

/* store_nbd_io.c */
int nbd_store_pread(struct store *st, void *buf, size_t len, uint64_t off);
int nbd_store_pwrite(struct store *st, const void *buf, size_t len,
		     uint64_t off);
int nbd_store_zero(struct store *st, size_t len, uint64_t off);
int nbd_store_trim(struct store *st, size_t len, uint64_t off);
int nbd_store_flush(struct store *st);
extern const struct store_aio_ops nbd_aio_ops;

#endif /* TORUS_BRIDGES_STORE_NBD_H */
