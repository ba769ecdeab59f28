/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A pipelined NBD client over io_uring, for connections whose handshake is
 * done (nbd_connect.h). It knows nothing of fio: a request carries an
 * opaque user pointer, handed to the caller's completer once it finishes.
 *
 * queue() only records a request; submit() sends what is queued, one
 * sendmsg per connection, in one io_uring_enter, except that at depth 16
 * and more a busy connection holds new requests for the next reap();
 * reap() sends anything held before it waits, and parses replies as they
 * arrive, landing read payloads directly in the callers' buffers and
 * handing each finished request to the completer as its reply is parsed.
 * All memory is allocated by nbd_client_new().
 */
#ifndef TORUS_NBD_CLIENT_H
#define TORUS_NBD_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "nbd_handshake.h"
#include "torus_completion.h"
#include "torus_stamps.h"

struct nbd_client;

/*
 * Takes ownership of the connected sockets fds[0..nconns). depth is the
 * most requests ever outstanding. With at most two outstanding, reap()
 * busy-polls up to poll_us microseconds before sleeping (0: never).
 * A request with no reply after timeout_s seconds (0: never) fails with
 * ETIMEDOUT and its connection is closed. Every finished request goes to
 * done, once, from within reap(), cancel() or free(). label names the
 * server in messages.
 */
struct nbd_client *nbd_client_new(const int *fds, unsigned int nconns,
				  unsigned int depth,
				  const struct nbd_export *exp,
				  unsigned int poll_us, unsigned int timeout_s,
				  const struct torus_completer *done,
				  const char *label, char *err, size_t errlen);

/*
 * Timeline: from now on, every request that went on the wire hands its
 * stamps (sent, header, payload; torus_stamps.h) to stamp just before
 * its completion, keyed by the cookie it was sent with. Before any I/O.
 */
void nbd_client_set_stamper(struct nbd_client *c,
			    const struct torus_stamper *stamp);

/*
 * Records a request. buf must stay valid until completion (READ: filled;
 * WRITE: sent). Returns 0, -EBUSY when depth requests are outstanding, or
 * -ENOTCONN when every connection has been lost.
 */
int nbd_client_queue(struct nbd_client *c, uint16_t type, uint16_t flags,
		     uint64_t offset, uint32_t len, void *buf, void *user);

/*
 * Sends what was queued, or holds it for the next reap() while the
 * connection is busy (see start_sends()). Returns 0 or a negative errno.
 */
int nbd_client_submit(struct nbd_client *c);

/*
 * Hands every request that has finished to the completer, waiting until
 * at least min have or timeout (NULL: no limit) expires. Returns how many
 * it handed on, or a negative errno.
 */
int nbd_client_reap(struct nbd_client *c, unsigned int min,
		    const struct timespec *timeout);

/*
 * For a caller that waits in its own poll() (tcmu-shim's ring loop): an
 * fd that polls readable when reap() has replies to parse (the io_uring's),
 * and a send of everything queued, nothing held back, with receives armed
 * for it, before the caller sleeps on that fd. 0 or a negative errno.
 */
int nbd_client_fd(const struct nbd_client *c);
int nbd_client_send_all(struct nbd_client *c);

/*
 * Fails everything outstanding with error (a positive errno), handing it to
 * the completer, and closes the connections: the job is stopping and the
 * server has not answered.
 */
void nbd_client_cancel(struct nbd_client *c, int error);

/* Disconnects politely (NBD_CMD_DISC) and frees everything. */
void nbd_client_free(struct nbd_client *c);

#endif /* TORUS_NBD_CLIENT_H */
