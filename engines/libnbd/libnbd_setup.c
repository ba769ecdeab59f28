// SPDX-License-Identifier: GPL-2.0-only
/*
 * The libnbd transport's set-up: option checks, TLS settings and the
 * bounded connect + handshake of one handle (libnbd_setup.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#include "libnbd_setup.h"
#include "nbd_uri.h"

/* The connect loop's poll slice: stop and the deadline are seen this fast. */
#define SLICE_MS	200

uint64_t lnbd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

const char *lnbd_error(void)
{
	const char *e = nbd_get_error();

	return e ? e : "no error text from libnbd";
}

const char *lnbd_op_name(enum torus_op op)
{
	static const char *const name[] = {
		[TORUS_OP_READ] = "a read",
		[TORUS_OP_WRITE] = "a write",
		[TORUS_OP_TRIM] = "a trim",
		[TORUS_OP_FLUSH] = "a flush",
	};

	return name[op];
}

void lnbd_say_failed(const char *label, unsigned int conn, const char *op,
		     uint32_t len, uint64_t offset)
{
	static bool said;

	if (said)
		return;
	said = true;
	fprintf(stderr,
		"torus: %s: connection %u: libnbd would not send %s of %u bytes at offset %llu: %s; it fails with EIO (a lost connection: is the server still running?)\n",
		label, conn + 1, op, len, (unsigned long long)offset,
		lnbd_error());
}

static bool set(const char *s)
{
	return s && *s;
}

int lnbd_check_options(const void *opts, char *err, size_t errlen)
{
	const struct lnbd_opts *o = opts;

	if (o->conns < 1 || o->conns > LNBD_MAX_CONNS) {
		snprintf(err, errlen, "conns=%d is out of range: use 1 to %d connections",
			 (int)o->conns, LNBD_MAX_CONNS);
		return -1;
	}
	return 0;
}

static bool uri_has_tls(const char *uri)
{
	return !strncmp(uri, "nbds", 4);
}

/*
 * libnbd's words for a greeting without NBDMAGIC: what a TCMU handler
 * host's hello is to it (proto/tcmu/tcmu_attach.h).
 */
#define NOT_NBD_GREETING	"did not send expected NBD magic"

/* What to check when libnbd could not connect, by the uri's kind. */
static const char *hint(const char *uri, char *buf, size_t len)
{
	int e = nbd_get_errno();
	struct nbd_uri u;
	char ignored[256];

	if (strstr(lnbd_error(), NOT_NBD_GREETING)) {
		snprintf(buf, len,
			 "the server did not greet as an NBD server: if that socket is a TCMU handler host (tcmu-shim), use uri=tcmu+unix:///?socket=%s (transport=tcmu)",
			 !nbd_uri_parse(uri, &u, ignored, sizeof(ignored)) &&
			 u.unix_socket ? u.socket : "PATH");
		return buf;
	}

	/*
	 * The server answered and broke the protocol in its handshake (a
	 * strict libnbd's improper block size constraints among them): no
	 * listener or TLS setting of ours would change that.
	 */
	if (e == EPROTO)
		return "the server's handshake breaks the NBD protocol (libnbd's message says how): the server must be fixed";
	/* Nothing answered: TLS never started, whatever the uri asks. */
	if (e == ENOENT || e == ECONNREFUSED || e == EHOSTUNREACH ||
	    e == ENETUNREACH)
		return "is a server listening there? (docs/libnbd.md)";
	/* libnbd's errno when the server answers NBD_REP_ERR_TLS_REQD. */
	if (!uri_has_tls(uri) && e == ENOTSUP)
		return "the server requires TLS: use nbds:// or nbds+unix:// with tls_certificates=DIR or tls_psk_file=FILE (docs/libnbd.md)";
	if (uri_has_tls(uri))
		return "check that the server speaks TLS and trusts this client: the certificates (tls_certificates=DIR or ?tls-certificates=DIR) must be signed by a CA the server and this client share, or the PSK (tls_psk_file=FILE or ?tls-psk-file=FILE, user tls_username= or nbds://USER@...) must be the server's (docs/libnbd.md)";
	return "is a server listening there? If it requires TLS, use nbds:// or nbds+unix:// with tls_certificates= or tls_psk_file= (docs/libnbd.md)";
}

/* The TLS options, checked and handed to libnbd before connecting. */
static int apply_tls(const struct lnbd_opts *o, const char *uri,
		     struct nbd_handle *h, char *err, size_t errlen)
{
	const char *name = set(o->tls_certificates) ? "tls_certificates" :
			   set(o->tls_psk_file) ? "tls_psk_file" :
			   set(o->tls_username) ? "tls_username" : NULL;
	struct stat st;

	if (!name)
		return 0;
	if (!uri_has_tls(uri)) {
		snprintf(err, errlen,
			 "%s= is set but uri '%s' does not ask for TLS; use nbds:// or nbds+unix://, or drop %s=",
			 name, uri, name);
		return -1;
	}
	if (set(o->tls_certificates)) {
		const char *why = stat(o->tls_certificates, &st) ?
				  strerror(errno) : !S_ISDIR(st.st_mode) ?
				  "not a directory" : NULL;

		if (why) {
			snprintf(err, errlen,
				 "tls_certificates=%s: %s; give the directory holding ca-cert.pem, client-cert.pem and client-key.pem",
				 o->tls_certificates, why);
			return -1;
		}
		if (nbd_set_tls_certificates(h, o->tls_certificates) == -1)
			goto libnbd_err;
	}
	if (set(o->tls_psk_file)) {
		if (access(o->tls_psk_file, R_OK)) {
			snprintf(err, errlen,
				 "tls_psk_file=%s: %s; make one with psktool -u USER -p FILE and give the server the same file",
				 o->tls_psk_file, strerror(errno));
			return -1;
		}
		if (nbd_set_tls_psk_file(h, o->tls_psk_file) == -1)
			goto libnbd_err;
	}
	if (set(o->tls_username) &&
	    nbd_set_tls_username(h, o->tls_username) == -1)
		goto libnbd_err;
	return 0;
libnbd_err:
	snprintf(err, errlen, "%s: libnbd refused %s=: %s", uri, name,
		 lnbd_error());
	return -1;
}

/* Is dir/name a directory? */
static bool have_dir(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;

	if (!dir)
		return false;
	snprintf(path, sizeof(path), "%s%s", dir, name);
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/*
 * nbds:// with no certificates nor PSK anywhere: libnbd 1.14 then
 * encrypts without checking who the server is. Said once per process.
 */
static void warn_unchecked(const struct lnbd_opts *o, const char *uri)
{
	static bool said;

	if (said || !uri_has_tls(uri) || set(o->tls_certificates) ||
	    set(o->tls_psk_file) || strstr(uri, "tls-certificates=") ||
	    strstr(uri, "tls-psk-file=") ||
	    have_dir(getenv("HOME"), "/.pki/libnbd") ||
	    have_dir("/etc/pki/libnbd", ""))
		return;
	said = true;
	fprintf(stderr,
		"torus: warning: %s: no TLS certificates or PSK given (tls_certificates=, tls_psk_file=, the uri's ?tls-certificates= or ?tls-psk-file=, or libnbd's default directories): libnbd encrypts but does not check the server's identity; give tls_certificates=DIR with the CA's certificate to check it\n",
		uri);
}

/* Drives the connect + handshake, bounded by request_timeout and stop. */
static int finish_connect(const struct torus_params *p, struct nbd_handle *h,
			  char *err, size_t errlen)
{
	uint64_t end = lnbd_now_ns() + (uint64_t)p->timeout_s * 1000000000ULL;
	char why[512];

	while (nbd_aio_is_connecting(h) == 1) {
		if (p->stop && *p->stop) {
			snprintf(err, errlen,
				 "%s: the job was stopped while connecting",
				 p->uri);
			return -1;
		}
		if (p->timeout_s && lnbd_now_ns() >= end) {
			snprintf(err, errlen,
				 "%s: the connection and handshake did not finish within %u s (request_timeout=%u): the server stopped answering or answers too slowly",
				 p->uri, p->timeout_s, p->timeout_s);
			return -1;
		}
		if (nbd_poll(h, SLICE_MS) == -1)
			goto failed;
	}
	if (nbd_aio_is_ready(h) == 1)
		return 0;
failed:
	snprintf(err, errlen, "%s: libnbd could not connect: %s; %s", p->uri,
		 lnbd_error(), hint(p->uri, why, sizeof(why)));
	return -1;
}

struct nbd_handle *lnbd_connect(const struct torus_params *p, char *err,
				size_t errlen)
{
	struct nbd_handle *h = nbd_create();
	char why[512];

	if (!h) {
		snprintf(err, errlen, "%s: libnbd could not make a handle: %s",
			 p->uri, lnbd_error());
		return NULL;
	}
	/* ?tls-psk-file= and ?tls-certificates= read local files. */
	if (nbd_set_uri_allow_local_file(h, true) == -1 ||
	    /* fio owns the buffers: no zeroing before each read. */
	    nbd_set_pread_initialize(h, false) == -1) {
		snprintf(err, errlen, "%s: libnbd refused a setting: %s",
			 p->uri, lnbd_error());
		goto fail;
	}
	if (apply_tls(p->opts, p->uri, h, err, errlen))
		goto fail;
	warn_unchecked(p->opts, p->uri);
	if (nbd_aio_connect_uri(h, p->uri) == -1) {
		snprintf(err, errlen, "%s: libnbd could not connect: %s; %s",
			 p->uri, lnbd_error(), hint(p->uri, why, sizeof(why)));
		goto fail;
	}
	if (finish_connect(p, h, err, errlen))
		goto fail;
	return h;
fail:
	nbd_close(h);
	return NULL;
}
