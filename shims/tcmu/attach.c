// SPDX-License-Identifier: GPL-2.0-only
/*
 * Serving the ring a client attached (see attach.h); its request is
 * attach_req.c's.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "attach.h"
#include "attach_req.h"
#include "log.h"
#include "ring.h"
#include "tcmu_attach.h"

/*
 * The device's shared ring: one per tcmu-shim (one socket, one device),
 * served by one thread whoever submits, as tcmu-runner runs one
 * command-processing thread per device. It stops when its last submitter
 * leaves; a request after that sets up a new one.
 */
struct shared_ring {
	char name[64];
	int fds[TCMU_SHARED_NFDS];	/* region, kick, creator's done, state */
	uint8_t *region;
	uint64_t region_size;
	struct tcmu_doorbell *bell;	/* its creator's, or NULL */
	struct store *sess, *st;
	struct ring ring;
	struct ring_peers peers;
	int socks[RING_PEERS_MAX];	/* shut down if the ring fails */
	int stop_fd;			/* written when the last one leaves */
	const struct scsi_target *t;
	pthread_t thread;
	int init_ret;
	char err[256];
	bool inited;
	bool creating;			/* its first submitter not yet in */
	bool dead;			/* the ring failed: no more joins */
	unsigned int joins;		/* submitters it has had */
};

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shared_ring *shared_cur;

/* After the ring stopped on the socket: a close, or bytes we never expect. */
static void socket_event(struct client *c)
{
	char b;
	ssize_t n = recv(c->sock, &b, 1, MSG_DONTWAIT | MSG_PEEK);

	if (n > 0)
		shim_err("%s: the client sent bytes after attaching; detaching",
			 c->name);
	else
		shim_debug("%s: the client closed its socket: detached",
			   c->name);
}

static void serve(struct client *c, const struct scsi_target *t,
		  struct store *st)
{
	char err[256] = "";
	struct store *sess;
	struct ring ring;
	int ret;

	sess = store_session(st, err, sizeof(err));
	if (!sess) {
		attach_refuse(c, EIO, err);
		return;
	}
	ret = ring_init(&ring, c->name, c->region, c->region_size, t, sess,
			err, sizeof(err));
	if (ret) {
		attach_refuse(c, -ret, err);
		goto out;
	}
	ring.wait_fd = c->fds[TCMU_FD_KICK];
	ring.notify_fd = c->fds[TCMU_FD_DONE];
	ring.bell = c->bell;
	attach_reply(c, 0, "attached");
	shim_debug("%s: attached (%llu-byte region, ring %u bytes)", c->name,
		   (unsigned long long)c->region_size, ring.hdl.cmdr_size);

	ret = ring_run(&ring, c->sock);
	if (ret == 1)
		socket_event(c);
	else if (ret == -EPROTO)
		shim_err("%s: the client broke the ring (an entry or cmd_head that cannot be walked); detaching",
			 c->name);
	else
		shim_err("%s: waiting on or waking the client failed: %s; detaching",
			 c->name, strerror(-ret));
	ring_report(&ring);
	ring_free(&ring);
out:
	if (sess != st)
		store_close(sess);
}

/* The reply to a shared request, with the ring's fds when it joins. */
static int send_shared_reply(struct client *c, const struct shared_ring *sr,
			     bool joined, unsigned int n, unsigned int slot)
{
	struct tcmu_attach_reply rep = {
		.version = c->version,
		.flags = (joined ? TCMU_REPLY_JOINED : 0) |
			 (sr->bell ? TCMU_REPLY_DOORBELL : 0),
		.submitters = n,
		.tag = slot + 1,
		.region_size = sr->region_size,
	};
	int fds[3] = {
		sr->fds[TCMU_FD_REGION], sr->fds[TCMU_FD_KICK],
		sr->fds[TCMU_FD_STATE],
	};
	uint8_t buf[TCMU_ATTACH_REPLY_LEN];
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	snprintf(rep.msg, sizeof(rep.msg), "%s",
		 joined ? "joined" : "attached");
	tcmu_attach_reply_encode(buf, &rep);
	if (joined) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(fds));
		memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	}
	if (sendmsg(c->sock, &msg, MSG_NOSIGNAL) != sizeof(buf)) {
		shim_err("%s: the reply did not go out: %s", c->name,
			 strerror(errno));
		return -1;
	}
	return 0;
}

static pthread_cond_t shared_cond = PTHREAD_COND_INITIALIZER;

static void shared_free(struct shared_ring *sr)
{
	int i;

	if (sr->region)
		munmap(sr->region, sr->region_size);
	attach_bell_unmap(sr->bell);
	for (i = 0; i < TCMU_SHARED_NFDS; i++)
		if (sr->fds[i] >= 0)
			close(sr->fds[i]);
	if (sr->stop_fd >= 0)
		close(sr->stop_fd);
	pthread_mutex_destroy(&sr->peers.lock);
	free(sr);
}

/* The device's one ring thread: set up, then serve until told to stop. */
static void *shared_thread(void *arg)
{
	struct shared_ring *sr = arg;
	char err[256] = "";
	unsigned int i;
	int ret = -EIO;

	sr->sess = store_session(sr->st, err, sizeof(err));
	if (sr->sess)
		ret = ring_init(&sr->ring, sr->name, sr->region,
				sr->region_size, sr->t, sr->sess, err,
				sizeof(err));
	sr->ring.wait_fd = sr->fds[TCMU_FD_KICK];
	sr->ring.bell = sr->bell;
	sr->ring.peers = &sr->peers;
	pthread_mutex_lock(&shared_lock);
	sr->init_ret = ret;
	snprintf(sr->err, sizeof(sr->err), "%s", err);
	sr->inited = true;
	pthread_cond_broadcast(&shared_cond);
	pthread_mutex_unlock(&shared_lock);
	if (ret)
		goto out;

	ret = ring_run(&sr->ring, sr->stop_fd);
	if (ret != 1) {
		if (ret == -EPROTO)
			shim_err("%s: a submitter broke the ring (an entry or cmd_head that cannot be walked); detaching all",
				 sr->name);
		else
			shim_err("%s: waiting on or waking the submitters failed: %s; detaching all",
				 sr->name, strerror(-ret));
		pthread_mutex_lock(&shared_lock);
		sr->dead = true;
		for (i = 0; i < RING_PEERS_MAX; i++)
			if (sr->peers.fds[i] >= 0)
				shutdown(sr->socks[i], SHUT_RDWR);
		pthread_mutex_unlock(&shared_lock);
	}
	ring_report(&sr->ring);
	shim_info("%s: detached, one ring for its %u submitters (%llu commands)",
		  sr->name, sr->joins, (unsigned long long)sr->ring.nr_cmds);
	ring_free(&sr->ring);
out:
	if (sr->sess && sr->sess != sr->st)
		store_close(sr->sess);
	return NULL;
}

/* A new shared ring from this client's fds: 0, or -1 after refusing. */
static int shared_create(struct client *c, const struct scsi_target *t,
			 struct store *st, struct shared_ring **out)
{
	struct shared_ring *sr = calloc(1, sizeof(*sr));
	int i;

	if (!sr) {
		attach_refuse(c, ENOMEM, "out of memory for the ring");
		return -1;
	}
	snprintf(sr->name, sizeof(sr->name), "%s", c->name);
	for (i = 0; i < TCMU_SHARED_NFDS; i++) {
		sr->fds[i] = c->fds[i];
		c->fds[i] = -1;
	}
	sr->region = c->region;
	sr->region_size = c->region_size;
	sr->bell = c->bell;
	c->region = NULL;
	c->bell = NULL;
	sr->t = t;
	sr->st = st;
	pthread_mutex_init(&sr->peers.lock, NULL);
	for (i = 0; i < RING_PEERS_MAX; i++)
		sr->peers.fds[i] = -1;
	sr->creating = true;
	sr->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (sr->stop_fd < 0 ||
	    pthread_create(&sr->thread, NULL, shared_thread, sr)) {
		attach_refuse(c, EAGAIN, "cannot start the ring's thread");
		shared_free(sr);
		return -1;
	}
	shared_cur = sr;
	while (!sr->inited)
		pthread_cond_wait(&shared_cond, &shared_lock);
	if (sr->init_ret) {
		shared_cur = NULL;
		pthread_cond_broadcast(&shared_cond);
		attach_refuse(c, -sr->init_ret, sr->err);
		pthread_join(sr->thread, NULL);
		shared_free(sr);
		return -1;
	}
	*out = sr;
	return 0;
}

/* Wait for the client to close its socket (or the shim to shut it). */
static void wait_gone(struct client *c)
{
	struct pollfd pfd = { .fd = c->sock, .events = POLLIN | POLLRDHUP };

	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
	socket_event(c);
}

/*
 * A submitter of the device's shared ring: the first sets it up, the
 * others join it; each stays until its socket closes, and the last one
 * out stops the ring.
 */
static void serve_shared(struct client *c, const struct scsi_target *t,
			 struct store *st)
{
	struct shared_ring *sr;
	unsigned int slot, n;
	bool created = false, last;
	int done_fd;

	pthread_mutex_lock(&shared_lock);
	for (;;) {
		sr = shared_cur;
		/* Joins wait for the first submitter to be in. */
		if (sr && (!sr->inited || sr->creating)) {
			pthread_cond_wait(&shared_cond, &shared_lock);
			continue;
		}
		if (sr && !sr->dead)
			break;
		if (shared_create(c, t, st, &sr)) {
			pthread_mutex_unlock(&shared_lock);
			return;
		}
		created = true;
		break;
	}
	if (!created && sr->peers.n == RING_PEERS_MAX) {
		pthread_mutex_unlock(&shared_lock);
		attach_refuse(c, EUSERS,
			      "the device's ring has its most submitters; use ring=private for more jobs");
		return;
	}
	if (created) {
		done_fd = sr->fds[TCMU_FD_DONE];
		sr->fds[TCMU_FD_DONE] = -1;
	} else {
		done_fd = c->fds[TCMU_FD_DONE];
		c->fds[TCMU_FD_DONE] = -1;
	}
	/* Its wake tag: the lowest free slot, kept until it leaves. */
	pthread_mutex_lock(&sr->peers.lock);
	for (slot = 0; sr->peers.fds[slot] >= 0; slot++)
		;
	sr->peers.fds[slot] = done_fd;
	sr->socks[slot] = c->sock;
	n = ++sr->peers.n;
	sr->joins++;
	pthread_mutex_unlock(&sr->peers.lock);
	send_shared_reply(c, sr, !created, n, slot);
	if (created)
		shim_info("%s: attached, shared (%llu-byte region, ring %u bytes)",
			  sr->name, (unsigned long long)sr->region_size,
			  sr->ring.hdl.cmdr_size);
	else
		shim_info("%s: job %lu joined (%u submitters)", sr->name,
			  c->id, n);
	sr->creating = false;
	pthread_cond_broadcast(&shared_cond);
	pthread_mutex_unlock(&shared_lock);

	wait_gone(c);

	pthread_mutex_lock(&shared_lock);
	pthread_mutex_lock(&sr->peers.lock);
	sr->peers.fds[slot] = -1;
	sr->socks[slot] = -1;
	n = --sr->peers.n;
	pthread_mutex_unlock(&sr->peers.lock);
	close(done_fd);
	last = !n;
	if (last && shared_cur == sr)
		shared_cur = NULL;
	pthread_mutex_unlock(&shared_lock);
	shim_debug("%s: job %lu left (%u submitters)", sr->name, c->id, n);
	if (last) {
		uint64_t one = 1;

		if (write(sr->stop_fd, &one, sizeof(one)) < 0)
			shim_err("%s: stopping the ring: %s", sr->name,
				 strerror(errno));
		pthread_join(sr->thread, NULL);
		shared_free(sr);
	}
}

void attach_serve(int sock, unsigned long id, const struct shim_config *cfg,
		  const struct scsi_target *t, struct store *st)
{
	struct client c = { .sock = sock };
	int i;

	snprintf(c.name, sizeof(c.name), "ring %lu", id);
	c.id = id;
	c.version = TCMU_ATTACH_V1;
	for (i = 0; i < TCMU_SHARED_NFDS; i++)
		c.fds[i] = -1;
	if (!attach_take_request(&c, cfg->timeout_s)) {
		if (c.kind == TCMU_ATTACH_SHARED)
			serve_shared(&c, t, st);
		else
			serve(&c, t, st);
	}

	if (c.region)
		munmap(c.region, c.region_size);
	attach_bell_unmap(c.bell);
	for (i = 0; i < TCMU_SHARED_NFDS && i < c.nfds; i++)
		if (c.fds[i] >= 0)
			close(c.fds[i]);
}
