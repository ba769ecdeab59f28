// SPDX-License-Identifier: GPL-2.0-only
/*
 * Attaching a ring over the socket and serving it (see attach.h).
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
#include <sys/stat.h>
#include <unistd.h>

#include "attach.h"
#include "log.h"
#include "ring.h"
#include "tcmu_attach.h"
#include "torus_clock.h"

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
};

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
	struct backend *sess, *be;
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

/* A client silent for TCMU_ATTACH_HELLO_MS is told what this socket is. */
static void send_hello(struct client *c)
{
	uint8_t buf[TCMU_ATTACH_HELLO_LEN];

	tcmu_attach_hello_encode(buf, TCMU_ATTACH_VERSION);
	c->helloed = true;
	if (send(c->sock, buf, sizeof(buf), MSG_NOSIGNAL) != sizeof(buf))
		shim_debug("%s: the hello did not go out: %s", c->name,
			   strerror(errno));
	else
		shim_debug("%s: nothing from the client within %u ms: sent the host's hello",
			   c->name, TCMU_ATTACH_HELLO_MS);
}

/*
 * The 32-byte request and its fds, within the timeout: 0, -EPROTO as soon
 * as its first 16 bytes are not the request's magic, or another -errno.
 */
static int recv_request(struct client *c, uint8_t *buf, unsigned int timeout_s)
{
	uint64_t start = now_ns();
	uint64_t deadline = timeout_s ? start + timeout_s * 1000000000ull : 0;
	uint64_t hello = start + TCMU_ATTACH_HELLO_MS * 1000000ull;

	while (c->got < TCMU_ATTACH_REQ_LEN) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * 8)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {
			.iov_base = buf + c->got,
			.iov_len = TCMU_ATTACH_REQ_LEN - c->got,
		};
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctl.buf,
			.msg_controllen = sizeof(ctl.buf),
		};
		struct pollfd pfd = { .fd = c->sock, .events = POLLIN };
		uint64_t now = now_ns(), until = deadline;
		int ms = -1;
		ssize_t n;

		if (deadline && now >= deadline)
			return -ETIMEDOUT;
		if (!c->got && !c->helloed) {
			if (now >= hello) {
				send_hello(c);
				continue;
			}
			if (!until || hello < until)
				until = hello;
		}
		if (until)
			ms = (until - now + 999999) / 1000000;
		n = poll(&pfd, 1, ms);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		n = recvmsg(c->sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		tcmu_attach_take_fds(&msg, c->fds, TCMU_SHARED_NFDS, &c->nfds);
		if (n == 0)
			return -ECONNRESET;
		c->got += n;
		if (c->got >= TCMU_ATTACH_MAGIC_LEN &&
		    tcmu_attach_magic(buf, c->got) != TCMU_MAGIC_REQ)
			return -EPROTO;
	}
	return 0;
}

static void send_reply(struct client *c, int status, const char *msg)
{
	struct tcmu_attach_reply rep = {
		.version = c->version,
		.status = status,
	};
	uint8_t buf[TCMU_ATTACH_REPLY_LEN];

	snprintf(rep.msg, sizeof(rep.msg), "%s", msg);
	tcmu_attach_reply_encode(buf, &rep);
	/* 256 bytes into a fresh socket's empty buffer: all or nothing. */
	if (send(c->sock, buf, sizeof(buf), MSG_NOSIGNAL) != sizeof(buf))
		shim_debug("%s: the reply did not go out: %s", c->name,
			   strerror(errno));
}

/* Refuse the ring: the client reads why, our log says it too. */
static void refuse(struct client *c, int status, const char *msg)
{
	shim_err("%s: attach refused: %s", c->name, msg);
	send_reply(c, status, msg);
}

/* Up to 16 bytes as a quoted C string, for the log. */
static void show_bytes(const uint8_t *buf, size_t len, char *out, size_t size)
{
	size_t i, o = 0;

	o += snprintf(out + o, size - o, "\"");
	for (i = 0; i < len && i < TCMU_ATTACH_MAGIC_LEN && o < size; i++) {
		uint8_t b = buf[i];

		if (b == '"' || b == '\\')
			o += snprintf(out + o, size - o, "\\%c", b);
		else if (b >= 0x20 && b < 0x7f)
			o += snprintf(out + o, size - o, "%c", b);
		else
			o += snprintf(out + o, size - o, "\\x%02x", b);
	}
	if (o < size)
		snprintf(out + o, size - o, "\"%s", len > i ? "..." : "");
}

/*
 * A peer that is not a TCMU client: say what it sent (nothing, for an NBD
 * client, which closes on the hello) and that its connection is closed.
 */
static void stranger(struct client *c, const uint8_t *buf, bool closed)
{
	char seen[80];

	if (!c->got) {
		shim_err("%s: not a TCMU client: it sent nothing in %u ms, had the host's hello and closed the connection (an NBD client? a job on this socket needs uri=tcmu+unix:///?socket=PATH)",
			 c->name, TCMU_ATTACH_HELLO_MS);
		return;
	}
	show_bytes(buf, c->got, seen, sizeof(seen));
	shim_err("%s: not a TCMU client: it sent %s (%zu bytes), not an attach request; %s",
		 c->name, seen, c->got,
		 closed ? "it closed the connection" : "refused and closed");
	if (!closed)
		send_reply(c, EPROTO, "not a TCMU attach request (is the client this project's engine?)");
}

static bool is_eventfd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return true;	/* no /proc: let the first read tell */
	target[n] = '\0';
	return !strcmp(target, "anon_inode:[eventfd]");
}

/* The request, the fds and the region: 0, or -1 after refusing. */
static int check_and_map(struct client *c, const uint8_t *buf)
{
	struct tcmu_attach_req req;
	char msg[TCMU_ATTACH_MSG_MAX];
	const char *why;
	struct stat st;

	if (tcmu_attach_req_decode(buf, TCMU_ATTACH_REQ_LEN, &req, &why)) {
		refuse(c, EPROTO, why);
		return -1;
	}
	c->version = req.version;
	c->kind = req.version == TCMU_ATTACH_V1 ? TCMU_ATTACH_PRIVATE :
		  req.flags;
	if (c->kind == TCMU_ATTACH_SHARED && c->nfds != TCMU_SHARED_NFDS) {
		snprintf(msg, sizeof(msg),
			 "the shared-ring attach request carried %d fds; it needs 4 (the region's memfd, the kick eventfd, the done eventfd, the submitters' state memfd)",
			 c->nfds);
		refuse(c, EINVAL, msg);
		return -1;
	}
	if (c->kind == TCMU_ATTACH_PRIVATE && c->nfds != TCMU_ATTACH_NFDS) {
		snprintf(msg, sizeof(msg),
			 "the attach request carried %d fds; it needs 3 (the region's memfd, the kick eventfd, the done eventfd)",
			 c->nfds);
		refuse(c, EINVAL, msg);
		return -1;
	}
	if (!is_eventfd(c->fds[TCMU_FD_KICK]) ||
	    !is_eventfd(c->fds[TCMU_FD_DONE])) {
		refuse(c, EINVAL,
		       "the second and third fds of the attach request must be eventfds (kick, done)");
		return -1;
	}
	if (fstat(c->fds[TCMU_FD_REGION], &st)) {
		snprintf(msg, sizeof(msg), "cannot stat the region's fd: %s",
			 strerror(errno));
		refuse(c, errno, msg);
		return -1;
	}
	if (req.region_size < TCMU_MB_SIZE ||
	    (uint64_t)st.st_size < req.region_size) {
		snprintf(msg, sizeof(msg),
			 "the region is %llu bytes but the request says %llu (at least %u)",
			 (unsigned long long)st.st_size,
			 (unsigned long long)req.region_size, TCMU_MB_SIZE);
		refuse(c, EINVAL, msg);
		return -1;
	}
	c->region = mmap(NULL, req.region_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, c->fds[TCMU_FD_REGION], 0);
	if (c->region == MAP_FAILED) {
		c->region = NULL;
		snprintf(msg, sizeof(msg), "cannot map the %llu-byte region: %s",
			 (unsigned long long)req.region_size, strerror(errno));
		refuse(c, errno, msg);
		return -1;
	}
	c->region_size = req.region_size;
	return 0;
}

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
		  struct backend *be)
{
	char err[256] = "";
	struct backend *sess;
	struct ring ring;
	int ret;

	sess = backend_session(be, err, sizeof(err));
	if (!sess) {
		refuse(c, EIO, err);
		return;
	}
	ret = ring_init(&ring, c->name, c->region, c->region_size, t, sess,
			err, sizeof(err));
	if (ret) {
		refuse(c, -ret, err);
		goto out;
	}
	ring.wait_fd = c->fds[TCMU_FD_KICK];
	ring.notify_fd = c->fds[TCMU_FD_DONE];
	send_reply(c, 0, "attached");
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
	if (sess != be)
		backend_close(sess);
}

/* The reply to a shared request, with the ring's fds when it joins. */
static int send_shared_reply(struct client *c, const struct shared_ring *sr,
			     bool joined, unsigned int n)
{
	struct tcmu_attach_reply rep = {
		.version = c->version,
		.flags = joined ? TCMU_REPLY_JOINED : 0,
		.submitters = n,
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

	sr->sess = backend_session(sr->be, err, sizeof(err));
	if (sr->sess)
		ret = ring_init(&sr->ring, sr->name, sr->region,
				sr->region_size, sr->t, sr->sess, err,
				sizeof(err));
	sr->ring.wait_fd = sr->fds[TCMU_FD_KICK];
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
		for (i = 0; i < sr->peers.n; i++)
			shutdown(sr->socks[i], SHUT_RDWR);
		pthread_mutex_unlock(&shared_lock);
	}
	ring_report(&sr->ring);
	shim_info("%s: detached, one ring for its %u submitters (%llu commands)",
		  sr->name, sr->joins, (unsigned long long)sr->ring.nr_cmds);
	ring_free(&sr->ring);
out:
	if (sr->sess && sr->sess != sr->be)
		backend_close(sr->sess);
	return NULL;
}

/* A new shared ring from this client's fds: 0, or -1 after refusing. */
static int shared_create(struct client *c, const struct scsi_target *t,
			 struct backend *be, struct shared_ring **out)
{
	struct shared_ring *sr = calloc(1, sizeof(*sr));
	int i;

	if (!sr) {
		refuse(c, ENOMEM, "out of memory for the ring");
		return -1;
	}
	snprintf(sr->name, sizeof(sr->name), "%s", c->name);
	for (i = 0; i < TCMU_SHARED_NFDS; i++) {
		sr->fds[i] = c->fds[i];
		c->fds[i] = -1;
	}
	sr->region = c->region;
	sr->region_size = c->region_size;
	c->region = NULL;
	sr->t = t;
	sr->be = be;
	pthread_mutex_init(&sr->peers.lock, NULL);
	sr->creating = true;
	sr->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (sr->stop_fd < 0 ||
	    pthread_create(&sr->thread, NULL, shared_thread, sr)) {
		refuse(c, EAGAIN, "cannot start the ring's thread");
		shared_free(sr);
		return -1;
	}
	shared_cur = sr;
	while (!sr->inited)
		pthread_cond_wait(&shared_cond, &shared_lock);
	if (sr->init_ret) {
		shared_cur = NULL;
		pthread_cond_broadcast(&shared_cond);
		refuse(c, -sr->init_ret, sr->err);
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
			 struct backend *be)
{
	struct shared_ring *sr;
	unsigned int i, n;
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
		if (shared_create(c, t, be, &sr)) {
			pthread_mutex_unlock(&shared_lock);
			return;
		}
		created = true;
		break;
	}
	if (!created && sr->peers.n == RING_PEERS_MAX) {
		pthread_mutex_unlock(&shared_lock);
		refuse(c, EUSERS,
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
	pthread_mutex_lock(&sr->peers.lock);
	n = sr->peers.n;
	sr->peers.fds[n] = done_fd;
	sr->socks[n] = c->sock;
	sr->peers.n = ++n;
	sr->joins++;
	pthread_mutex_unlock(&sr->peers.lock);
	send_shared_reply(c, sr, !created, n);
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
	for (i = 0; i < sr->peers.n && sr->peers.fds[i] != done_fd; i++)
		;
	n = --sr->peers.n;
	sr->peers.fds[i] = sr->peers.fds[n];
	sr->socks[i] = sr->socks[n];
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
		  const struct scsi_target *t, struct backend *be)
{
	uint8_t buf[TCMU_ATTACH_REQ_LEN];
	struct client c = { .sock = sock };
	int i, ret;

	snprintf(c.name, sizeof(c.name), "ring %lu", id);
	c.id = id;
	c.version = TCMU_ATTACH_V1;
	for (i = 0; i < TCMU_SHARED_NFDS; i++)
		c.fds[i] = -1;
	ret = recv_request(&c, buf, cfg->timeout_s);
	if (ret == -EPROTO)
		stranger(&c, buf, false);
	else if (ret == -ECONNRESET &&
		 (c.got ? c.got < TCMU_ATTACH_MAGIC_LEN : c.helloed))
		stranger(&c, buf, true);
	else if (ret == -ECONNRESET)
		shim_debug("%s: closed before attaching", c.name);
	else if (ret == -ETIMEDOUT)
		refuse(&c, ETIMEDOUT,
		       "no complete attach request within --timeout");
	else if (ret)
		shim_err("%s: reading the attach request: %s", c.name,
			 strerror(-ret));
	else if (!check_and_map(&c, buf) && c.kind == TCMU_ATTACH_SHARED)
		serve_shared(&c, t, be);
	else if (c.region)
		serve(&c, t, be);

	if (c.region)
		munmap(c.region, c.region_size);
	for (i = 0; i < TCMU_SHARED_NFDS && i < c.nfds; i++)
		if (c.fds[i] >= 0)
			close(c.fds[i]);
}
