// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU client's attach (see tcmu_client.h): the region in a memfd, the
 * eventfds, the socket and the attach request, or the device's shared
 * ring joined in their place; and the teardown. Its I/O is
 * tcmu_client_io.c, the ring's submitters tcmu_shared.c.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "nbd_proto.h"
#include "tcmu_attach.h"
#include "tcmu_client_state.h"
#include "torus_clock.h"

static int send_attach(struct tcmu_client *c, const struct tcmu_client_cfg *cfg)
{
	struct tcmu_attach_req req = {
		.version = TCMU_ATTACH_VERSION,
		.flags = c->shared ? TCMU_ATTACH_SHARED : TCMU_ATTACH_PRIVATE,
		.region_size = c->region_size,
	};
	uint8_t buf[TCMU_ATTACH_REQ_LEN];
	int fds[TCMU_SHARED_NFDS] = {
		[TCMU_FD_REGION] = c->region_fd,
		[TCMU_FD_KICK] = c->kick_fd,
		[TCMU_FD_DONE] = c->done_fd,
		[TCMU_FD_STATE] = c->state_fd,
	};
	size_t nfds = c->shared ? TCMU_SHARED_NFDS : TCMU_ATTACH_NFDS;
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *cm;

	tcmu_attach_req_encode(buf, &req);
	memset(&ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	/* 32 bytes into an empty local socket: all or nothing. */
	return sendmsg(c->sock, &msg, MSG_NOSIGNAL) == sizeof(buf) ? 0 : -errno;
}

/*
 * Reads exactly len bytes within the deadline, and the fds that come with
 * them; -errno, -ETIMEDOUT, -EINTR.
 */
static int recv_all(struct tcmu_client *c, void *buf, size_t len,
		    uint64_t deadline_ns, int *fds, int max, int *nfds)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd pfd = { .fd = c->sock, .events = POLLIN };
		union {
			char buf[CMSG_SPACE(sizeof(int) * 8)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {
			.iov_base = (char *)buf + got,
			.iov_len = len - got,
		};
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctl.buf,
			.msg_controllen = sizeof(ctl.buf),
		};
		ssize_t n;

		if (c->stop && *c->stop)
			return -EINTR;
		if (deadline_ns && now_ns() >= deadline_ns)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, SLICE_MS) < 0 && errno != EINTR)
			return -errno;
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = recvmsg(c->sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n > 0)
			tcmu_attach_take_fds(&msg, fds, max, nfds);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		got += n;
	}
	return 0;
}

/*
 * The reply, after the host's hello when one came first (this client was
 * slow to send). A socket that is not a TCMU host's is told at its first
 * 16 bytes, not after a timeout: an NBD server greets whatever it is
 * sent. 0, -errno, or 1 with a message.
 */
static int recv_reply(struct tcmu_client *c, const char *path, uint8_t *buf,
		      uint64_t deadline, int *fds, int *nfds, char *err,
		      size_t errlen)
{
	uint8_t hello[TCMU_ATTACH_HELLO_LEN - TCMU_ATTACH_MAGIC_LEN];
	struct tcmu_attach_reply rep;
	const char *why;
	bool oldstyle;
	uint16_t hflags;
	int ret;

	ret = recv_all(c, buf, TCMU_ATTACH_MAGIC_LEN, deadline, fds,
		       TCMU_SHARED_NFDS, nfds);
	if (!ret && tcmu_attach_magic(buf, TCMU_ATTACH_MAGIC_LEN) ==
		    TCMU_MAGIC_HELLO) {
		ret = recv_all(c, hello, sizeof(hello), deadline, fds,
			       TCMU_SHARED_NFDS, nfds);
		if (!ret)
			ret = recv_all(c, buf, TCMU_ATTACH_MAGIC_LEN, deadline,
				       fds, TCMU_SHARED_NFDS, nfds);
	}
	if (ret)
		return ret;
	if (nbd_decode_greeting(buf, TCMU_ATTACH_MAGIC_LEN, &oldstyle,
				&hflags) >= 0) {
		snprintf(err, errlen,
			 "%s: that socket speaks NBD (an NBD server's greeting), not TCMU: use uri=nbd+unix:///?socket=%s (transport=nbd; the export's name, if not the default, after the ///)",
			 c->label, path);
		return 1;
	}
	if (tcmu_attach_magic(buf, TCMU_ATTACH_MAGIC_LEN) != TCMU_MAGIC_REPLY) {
		/* Short of a reply: its decoder names what is wrong. */
		tcmu_attach_reply_decode(buf, TCMU_ATTACH_MAGIC_LEN, &rep,
					 &why);
		snprintf(err, errlen, "%s: %s", c->label, why);
		return 1;
	}
	return recv_all(c, buf + TCMU_ATTACH_MAGIC_LEN,
			TCMU_ATTACH_REPLY_LEN - TCMU_ATTACH_MAGIC_LEN, deadline,
			fds, TCMU_SHARED_NFDS, nfds);
}

/* A memfd of @size bytes mapped shared: 0, or -1 with a message. */
static int map_memfd(struct tcmu_client *c, const char *name, uint64_t size,
		     int *fd, void **mem, char *err, size_t errlen)
{
	*fd = memfd_create(name, MFD_CLOEXEC);
	if (*fd < 0 || ftruncate(*fd, size)) {
		snprintf(err, errlen, "%s: memfd for %llu bytes (%s): %s",
			 c->label, (unsigned long long)size, name,
			 strerror(errno));
		return -1;
	}
	*mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (*mem == MAP_FAILED) {
		*mem = NULL;
		snprintf(err, errlen, "%s: mapping %llu bytes (%s): %s",
			 c->label, (unsigned long long)size, name,
			 strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The submitters' state for a ring others may join: a cmd_id for every
 * command the ring can hold, whoever queues them (the block lists' memory
 * permitting; tcmu_client_cmds_for()). 0, -errno, or 1 with a message.
 */
static int make_state(struct tcmu_client *c, const struct tcmu_client_cfg *cfg,
		      char *err, size_t errlen)
{
	uint32_t fit = (cfg->ring_size - TCMU_MB_SIZE) /
		       tcmu_cmd_entry_size(0, 16);
	uint32_t ids = tcmu_client_cmds_for(cfg->data_size, cfg->max_data,
					    fit, cfg->max_cmds);

	c->state_size = tcmu_shared_size(c->region, c->region_size,
					    TCMU_DEF_BLK_SIZE, ids,
					    cfg->max_data);
	if (!c->state_size)
		return -EINVAL;
	if (map_memfd(c, "torus-tcmu-submitters", c->state_size,
		      &c->state_fd, &c->state, err, errlen))
		return 1;
	return tcmu_shared_create(&c->sh, c->region, c->region_size, c->state,
			       c->state_size, TCMU_DEF_BLK_SIZE, ids,
			       cfg->max_data);
}

/*
 * The doorbell's page of the region's memfd @fd, mapped (NULL when it
 * cannot be: the client then kicks every time, as without one).
 */
static struct tcmu_doorbell *map_bell(int fd, uint64_t region_size)
{
	void *p = mmap(NULL, TCMU_DOORBELL_SIZE, PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, tcmu_doorbell_off(region_size));

	return p == MAP_FAILED ? NULL : p;
}

static void unmap_bell(struct tcmu_client *c)
{
	if (c->page)
		munmap(c->page, TCMU_DOORBELL_SIZE);
	c->page = c->bell = NULL;
}

/* The region and the doorbell's page after it, in one memfd. */
static int make_region(struct tcmu_client *c, const struct tcmu_client_cfg *cfg,
		       char *err, size_t errlen)
{
	uint32_t cmdr_size = cfg->ring_size - TCMU_MB_SIZE;
	int ret;

	c->region_size = tcmu_region_size(cmdr_size, cfg->data_size);
	c->region_fd = memfd_create("torus-tcmu-region", MFD_CLOEXEC);
	if (c->region_fd < 0 ||
	    ftruncate(c->region_fd, tcmu_doorbell_off(c->region_size) +
				    TCMU_DOORBELL_SIZE)) {
		snprintf(err, errlen, "%s: memfd for a %llu-byte TCMU region: %s",
			 c->label, (unsigned long long)c->region_size,
			 strerror(errno));
		return -1;
	}
	c->region = mmap(NULL, c->region_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, c->region_fd, 0);
	if (c->region == MAP_FAILED) {
		c->region = NULL;
		snprintf(err, errlen, "%s: mapping the TCMU region (%llu bytes): %s",
			 c->label, (unsigned long long)c->region_size,
			 strerror(errno));
		return -1;
	}
	tcmu_region_layout(c->region, c->region_size, cmdr_size,
			   cfg->data_size, TCMU_RING_FLAGS);
	c->page = map_bell(c->region_fd, c->region_size);
	if (c->shared)
		ret = make_state(c, cfg, err, errlen);
	else
		ret = tcmu_shared_private(&c->sh, c->region, c->region_size,
				    TCMU_DEF_BLK_SIZE, cfg->max_cmds,
				    cfg->max_data);
	if (ret > 0)
		return -1;
	if (ret) {
		snprintf(err, errlen, "%s: setting up the TCMU ring: %s",
			 c->label, strerror(-ret));
		return -1;
	}
	c->kick_fd = eventfd(0, EFD_CLOEXEC);
	/* Read before each sleep, whether or not it counted anything. */
	c->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->kick_fd < 0 || c->done_fd < 0) {
		snprintf(err, errlen, "%s: eventfd: %s", c->label,
			 strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The handler host already serves this device's ring: drop the region
 * made for it and take the ring's (region, kick, state; this client's
 * done eventfd stays its own). 0, or -1 with a message.
 */
static int join_ring(struct tcmu_client *c, const struct tcmu_client_cfg *cfg,
		const struct tcmu_attach_reply *rep, int *fds, int nfds,
		char *err, size_t errlen)
{
	struct stat st;
	int ret;

	if (nfds != TCMU_SHARED_NFDS - 1) {
		snprintf(err, errlen,
			 "%s: the handler host's join reply carried %d fds, not 3 (region, kick, submitters' state)",
			 c->label, nfds);
		goto fail;
	}
	tcmu_shared_free(&c->sh);
	unmap_bell(c);
	munmap(c->region, c->region_size);
	munmap(c->state, c->state_size);
	close(c->region_fd);
	close(c->kick_fd);
	close(c->state_fd);
	c->region = c->state = NULL;
	c->region_fd = fds[TCMU_FD_REGION];
	c->kick_fd = fds[TCMU_FD_KICK];
	/* The done slot carries the state in a join reply. */
	c->state_fd = fds[TCMU_FD_DONE];
	c->region_size = rep->region_size;
	if (fstat(c->state_fd, &st)) {
		snprintf(err, errlen, "%s: the shared ring's state: %s",
			 c->label, strerror(errno));
		return -1;
	}
	c->state_size = st.st_size;
	c->region = mmap(NULL, c->region_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, c->region_fd, 0);
	c->state = mmap(NULL, c->state_size, PROT_READ | PROT_WRITE,
			MAP_SHARED, c->state_fd, 0);
	if (c->region == MAP_FAILED || c->state == MAP_FAILED) {
		if (c->region == MAP_FAILED)
			c->region = NULL;
		if (c->state == MAP_FAILED)
			c->state = NULL;
		snprintf(err, errlen, "%s: mapping the shared ring: %s",
			 c->label, strerror(errno));
		return -1;
	}
	if (rep->flags & TCMU_REPLY_DOORBELL) {
		c->page = map_bell(c->region_fd, c->region_size);
		c->bell = c->page;
	}
	ret = tcmu_shared_join(&c->sh, c->region, c->region_size, c->state,
			    c->state_size, cfg->max_data);
	if (ret == -E2BIG)
		snprintf(err, errlen,
			 "%s: the device's ring, set up by another job, takes commands of at most %u bytes, less than this job's max_transfer=%u: give every job on the device the same max_transfer, or ring=private",
			 c->label, c->sh.sub.max_blks * c->sh.sub.blk_size,
			 cfg->max_data);
	else if (ret == -EUSERS)
		snprintf(err, errlen,
			 "%s: the device's ring has %u submitters already, its most: use ring=private for more jobs",
			 c->label, TCMU_SHARED_OWNERS);
	else if (ret)
		snprintf(err, errlen,
			 "%s: joining the device's shared ring: %s", c->label,
			 ret == -EINVAL ? "its submitters' state does not match its region" :
			 strerror(-ret));
	if (ret)
		return -1;
	c->sh.sub.kflags = rep->tag;
	c->joined = true;
	return 0;
fail:
	while (nfds-- > 0)
		if (nfds < TCMU_SHARED_NFDS)
			close(fds[nfds]);
	return -1;
}

static int attach_ring(struct tcmu_client *c, const char *path,
		  const struct tcmu_client_cfg *cfg, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint8_t buf[TCMU_ATTACH_REPLY_LEN];
	struct tcmu_attach_reply rep;
	uint64_t deadline = cfg->timeout_s ?
		now_ns() + cfg->timeout_s * 1000000000ull : 0;
	int fds[TCMU_SHARED_NFDS], nfds = 0, i;
	const char *why;
	int ret;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	c->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->sock < 0 ||
	    connect(c->sock, (struct sockaddr *)&sa, sizeof(sa))) {
		snprintf(err, errlen,
			 "%s: cannot connect to the handler host: %s%s",
			 c->label, strerror(errno),
			 errno == ENOENT || errno == ECONNREFUSED ?
			 " (is tcmu-shim --socket running there?)" : "");
		return -1;
	}
	ret = send_attach(c, cfg);
	if (!ret)
		ret = recv_reply(c, path, buf, deadline, fds, &nfds, err,
				 errlen);
	if (ret) {
		for (i = 0; i < nfds && i < TCMU_SHARED_NFDS; i++)
			close(fds[i]);
		if (ret > 0)
			return -1;
		snprintf(err, errlen, "%s: attaching the TCMU ring: %s",
			 c->label,
			 ret == -ETIMEDOUT ? "no answer from the handler host within request_timeout" :
			 ret == -EINTR ? "the job was stopped" :
			 ret == -ECONNRESET ? "the handler host closed the connection (see its log)" :
			 strerror(-ret));
		return -1;
	}
	ret = tcmu_attach_reply_decode(buf, sizeof(buf), &rep, &why);
	if (!ret && !rep.status && (rep.flags & TCMU_REPLY_JOINED))
		return join_ring(c, cfg, &rep, fds, nfds, err, errlen);
	for (i = 0; i < nfds && i < TCMU_SHARED_NFDS; i++)
		close(fds[i]);
	if (ret) {
		snprintf(err, errlen, "%s: %s", c->label, why);
		return -1;
	}
	if (rep.status) {
		snprintf(err, errlen, "%s: the handler host refused the ring: %s",
			 c->label, rep.msg[0] ? rep.msg : strerror(rep.status));
		return -1;
	}
	/* The host wakes this client for its own commands only. */
	if (c->shared)
		c->sh.sub.kflags = rep.tag;
	/* It says when its ring thread may sleep: kicks only then. */
	if (rep.flags & TCMU_REPLY_DOORBELL)
		c->bell = c->page;
	return 0;
}

struct tcmu_client *tcmu_client_attach(const char *socket_path,
				       const struct tcmu_client_cfg *cfg,
				       const char *label, char *err,
				       size_t errlen)
{
	struct tcmu_client *c = calloc(1, sizeof(*c));

	if (!c) {
		snprintf(err, errlen, "%s: out of memory", label);
		return NULL;
	}
	c->sock = c->region_fd = c->kick_fd = c->done_fd = c->state_fd = -1;
	c->shared = cfg->shared;
	snprintf(c->label, sizeof(c->label), "%s", label);
	c->max_cmds = cfg->max_cmds;
	c->timeout_s = cfg->timeout_s;
	c->stop = cfg->stop;
	c->hold = cfg->hold;
	c->stamp_seen = cfg->stamp_seen;
	c->complete = cfg->complete;
	c->complete_arg = cfg->complete_arg;
	if (make_region(c, cfg, err, errlen) ||
	    attach_ring(c, socket_path, cfg, err, errlen))
		goto fail;
	/* A shared ring's ids go to every client: the records are per id. */
	c->nr_ids = c->sh.sub.nr_slots;
	c->cmds = calloc(c->nr_ids + 1, sizeof(*c->cmds));
	if (!c->cmds) {
		snprintf(err, errlen, "%s: out of memory for %u commands",
			 label, c->nr_ids);
		goto fail;
	}
	return c;
fail:
	tcmu_client_free(c);
	return NULL;
}

void tcmu_client_free(struct tcmu_client *c)
{
	if (!c)
		return;
	if (c->sock >= 0)
		close(c->sock);
	if (c->sh.sub.st)
		tcmu_shared_free(&c->sh);
	unmap_bell(c);
	if (c->region)
		munmap(c->region, c->region_size);
	if (c->state)
		munmap(c->state, c->state_size);
	if (c->region_fd >= 0)
		close(c->region_fd);
	if (c->state_fd >= 0)
		close(c->state_fd);
	if (c->kick_fd >= 0)
		close(c->kick_fd);
	if (c->done_fd >= 0)
		close(c->done_fd);
	free(c->cmds);
	free(c);
}
