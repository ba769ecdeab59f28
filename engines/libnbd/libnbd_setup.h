/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The libnbd transport's set-up: its options, and one connected libnbd
 * handle per call (TLS settings applied, the handshake bounded by
 * request_timeout and fio's stop). The I/O is libnbd_transport.c's.
 */
#ifndef TORUS_LIBNBD_SETUP_H
#define TORUS_LIBNBD_SETUP_H

#include <stddef.h>
#include <stdint.h>

#include "../transport.h"

struct nbd_handle;

/* The options block the glue lays out for this transport. */
struct lnbd_opts {
	unsigned int conns;		/* copied from the nbd transport's */
	char *tls_certificates;
	char *tls_psk_file;
	char *tls_username;
};

int lnbd_check_options(const void *opts, char *err, size_t errlen);

/* A handle ready for commands, or NULL with a full message in err. */
struct nbd_handle *lnbd_connect(const struct torus_params *p, char *err,
				size_t errlen);

uint64_t lnbd_now_ns(void);
const char *lnbd_op_name(enum torus_op op);
/* A command libnbd would not issue: said once per process. */
void lnbd_say_failed(const char *label, unsigned int conn, const char *op,
		     uint32_t len, uint64_t offset);

#endif /* TORUS_LIBNBD_SETUP_H */
