/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The libnbd transport's pieces other than its I/O (libnbd_transport.c):
 * libnbd_setup.c connects one handle (TLS settings applied, the handshake
 * bounded by request_timeout and fio's stop); libnbd_inspect.c holds the
 * options, the uris served, the target a handle describes and the checks.
 */
#ifndef TORUS_LIBNBD_SETUP_H
#define TORUS_LIBNBD_SETUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../transport.h"

struct nbd_handle;

#define LNBD_MAX_CONNS	64

/* The options block the glue lays out for this transport. */
struct lnbd_opts {
	unsigned int conns;		/* copied from the nbd transport's */
	char *tls_certificates;
	char *tls_psk_file;
	char *tls_username;
};

int lnbd_check_options(const void *opts, char *err, size_t errlen);

/* libnbd_inspect.c: for struct torus_transport (and lnbd_options[]). */
bool lnbd_handles(const char *uri);
int lnbd_inspect(const struct torus_params *p, struct torus_target *t,
		 char *err, size_t errlen);
/* The glue's target from a connected handle. */
void lnbd_fill_target(struct nbd_handle *h, const char *uri,
		      struct torus_target *t);
/* Refuses conns>1 without multi-conn, naming the fix. */
int lnbd_check_multi_conn(const struct torus_params *p, struct nbd_handle *h,
			  const char *label, char *err, size_t errlen);
/* Says goodbye if it can without waiting, and closes. */
void lnbd_drop_handle(struct nbd_handle *h);

/* A handle ready for commands, or NULL with a full message in err. */
struct nbd_handle *lnbd_connect(const struct torus_params *p, char *err,
				size_t errlen);

uint64_t lnbd_now_ns(void);
/* libnbd's last error on this thread, never NULL. */
const char *lnbd_error(void);
const char *lnbd_op_name(enum torus_op op);
/* A command libnbd would not issue: said once per process. */
void lnbd_say_failed(const char *label, unsigned int conn, const char *op,
		     uint32_t len, uint64_t offset);

#endif /* TORUS_LIBNBD_SETUP_H */
