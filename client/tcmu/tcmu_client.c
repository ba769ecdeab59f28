// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's side of a TCMU ring, attached to a handler host (see
 * tcmu_client.h). The ring itself is proto/tcmu/tcmu_ring.c; this file
 * owns the memfd, the eventfds, the socket, and what each command was for.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "tcmu_attach.h"
#include "tcmu_client.h"
#include "tcmu_ring.h"
#include "torus_clock.h"

/* Waits are cut into slices so that a stop request is seen. */
#define SLICE_MS		100
/* A shared ring's cmd_ids: room for this many clients of this depth. */
#define SHARE_SLOTS		8

/* What one cmd_id is for, until the handler completes it. */
struct cmd_rec {
	void *user;
	void *rbuf;
	uint32_t rlen;
	uint64_t start_ns;
	bool busy;
	bool short_ok;		/* set-up: less data-in than asked is fine */
};

struct tcmu_client {
	int sock, region_fd, kick_fd, done_fd, state_fd;
	uint8_t *region;
	uint64_t region_size;
	void *state;			/* shared submitters' state, mapped */
	uint64_t state_size;
	bool shared, joined;
	uint32_t recovered;		/* dead lock holders reported */
	struct tcmu_sub sub;
	struct cmd_rec *cmds;		/* [cmd_id], 1..nr_ids */
	uint32_t max_cmds;		/* this client's commands at once */
	uint32_t nr_ids;		/* the ring's cmd_ids */
	tcmu_complete_fn *complete;	/* where completions go */
	void *complete_arg;
	unsigned int completed;		/* handed on by this reap() */
	unsigned int inflight;		/* queued, not yet completed */
	unsigned int held;		/* queued, cmd_head not yet moved */
	unsigned int unkicked;		/* queued since the last wake-up */
	bool hold;			/* cmd_head moves at submit() */
	bool down;
	bool in_exec;			/* a set-up command: not counted */
	uint64_t pass_ns;		/* this reap pass's first completion */
	struct tcmu_client_work work;	/* the kernel's share, so far */
	unsigned int timeout_s;
	uint64_t next_scan_ns;
	const volatile bool *stop;
	char label[256];
};

/* The one hand-off of a finished command: straight to the caller. */
static void complete(struct tcmu_client *c, const struct tcmu_completion *d)
{
	c->inflight--;
	c->completed++;
	c->complete(c->complete_arg, d);
}

/* Everything outstanding fails: the ring cannot be trusted any more. */
static void take_down(struct tcmu_client *c, int error)
{
	struct tcmu_completion d = { .error = error, .status = 0xff };
	uint32_t id;

	c->down = true;
	for (id = 1; id <= c->nr_ids; id++) {
		if (!c->cmds[id].busy)
			continue;
		c->cmds[id].busy = false;
		d.user = c->cmds[id].user;
		d.cmd_id = id;
		complete(c, &d);
	}
}

/* A read's data, as much as arrived: a short one fails unless allowed. */
static void copy_in(struct tcmu_client *c, const struct tcmu_done *td,
		    const struct cmd_rec *r, uint32_t len,
		    struct tcmu_completion *d)
{
	if (len < r->rlen && !r->short_ok) {
		d->error = EIO;
		snprintf(d->why, sizeof(d->why),
			 "the handler returned %u of %u bytes", len, r->rlen);
		return;
	}
	if (tcmu_sub_copy_out(&c->sub, td->cmd_id, r->rbuf, len)) {
		d->error = EIO;
		snprintf(d->why, sizeof(d->why),
			 "the handler's %u bytes could not be copied out", len);
		return;
	}
	d->data_len = len;
}

/*
 * What the handler answered, as an errno, checked as the kernel checks it:
 * UNKNOWN_OP fails the command; read_len counts only with READ_LEN and
 * when not 0; a read's data comes back with GOOD, or with CHECK CONDITION
 * and a valid read_len. A read succeeds only when its data was copied.
 */
static void on_done(void *arg, const struct tcmu_done *td)
{
	struct tcmu_client *c = arg;
	struct cmd_rec *r = &c->cmds[td->cmd_id];
	struct tcmu_completion d = {
		.user = r->user,
		.cmd_id = td->cmd_id,
		.status = td->status,
	};
	bool is_read = r->rbuf && r->rlen;
	bool len_valid = is_read && (td->uflags & TCMU_UFLAG_READ_LEN) &&
			 td->read_len;
	uint32_t len = r->rlen;

	if (!r->busy)
		return;		/* taken down already */
	r->busy = false;
	/*
	 * The pass's clock, read at its first completion: after the load of
	 * cmd_tail that showed every completion it walks, before any of
	 * their work.
	 */
	if (!c->pass_ns)
		c->pass_ns = now_ns();
	d.seen_ns = c->pass_ns;
	if (len_valid && td->read_len < len)
		len = td->read_len;
	if (td->uflags & TCMU_UFLAG_UNKNOWN_OP) {
		/* The kernel answers CHECK CONDITION, unsupported opcode. */
		d.status = SCSI_STATUS_CHECK_CONDITION;
		tcmu_sense_set(&d.sense, SCSI_SK_ILLEGAL_REQUEST,
			       SCSI_ASC_INVALID_OPCODE, 0);
		d.has_sense = true;
		d.error = EOPNOTSUPP;
		snprintf(d.why, sizeof(d.why),
			 "the handler flagged the command UNKNOWN_OP (it does not support the opcode)");
		complete(c, &d);
		return;
	}
	switch (td->status) {
	case SCSI_STATUS_GOOD:
		if (is_read)
			copy_in(c, td, r, len, &d);
		break;
	case SCSI_STATUS_CHECK_CONDITION:
		if (tcmu_sense_decode(td->sense, TCMU_SENSE_BUFFERSIZE,
				      &d.sense)) {
			d.error = EIO;
			snprintf(d.why, sizeof(d.why),
				 "CHECK CONDITION with no sense data the client can read");
			break;
		}
		d.has_sense = true;
		d.error = tcmu_sense_errno(&d.sense);
		if (d.error || !is_read)
			break;
		/* "No error" sense: a read's data must still have come. */
		if (len_valid) {
			copy_in(c, td, r, len, &d);
			break;
		}
		d.error = EIO;
		snprintf(d.why, sizeof(d.why),
			 "CHECK CONDITION with %s sense and no data (read_len not set)",
			 tcmu_sense_key_str(d.sense.key));
		break;
	default:
		/* BUSY, TASK SET FULL, RESERVATION CONFLICT: not retried. */
		d.error = EIO;
		break;
	}
	complete(c, &d);
}

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
 * The submitters' state for a ring others may join, with cmd_ids for
 * SHARE_SLOTS clients like this one: 0, -errno, or 1 with a message.
 */
static int make_state(struct tcmu_client *c, const struct tcmu_client_cfg *cfg,
		      char *err, size_t errlen)
{
	uint32_t ids = cfg->max_cmds * SHARE_SLOTS;

	if (ids > UINT16_MAX)
		ids = UINT16_MAX;
	c->state_size = tcmu_sub_state_size(c->region, c->region_size,
					    TCMU_DEF_BLK_SIZE, ids,
					    cfg->max_data);
	if (!c->state_size)
		return -EINVAL;
	if (map_memfd(c, "torus-tcmu-submitters", c->state_size,
		      &c->state_fd, &c->state, err, errlen))
		return 1;
	return tcmu_sub_create(&c->sub, c->region, c->region_size, c->state,
			       c->state_size, TCMU_DEF_BLK_SIZE, ids,
			       cfg->max_data);
}

static int make_region(struct tcmu_client *c, const struct tcmu_client_cfg *cfg,
		       char *err, size_t errlen)
{
	uint32_t cmdr_size = cfg->ring_size - TCMU_MB_SIZE;
	int ret;

	c->region_size = tcmu_region_size(cmdr_size, cfg->data_size);
	c->region_fd = memfd_create("torus-tcmu-region", MFD_CLOEXEC);
	if (c->region_fd < 0 || ftruncate(c->region_fd, c->region_size)) {
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
	if (c->shared)
		ret = make_state(c, cfg, err, errlen);
	else
		ret = tcmu_sub_init(&c->sub, c->region, c->region_size,
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
	c->done_fd = eventfd(0, EFD_CLOEXEC);
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
static int join(struct tcmu_client *c, const struct tcmu_client_cfg *cfg,
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
	tcmu_sub_free(&c->sub);
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
	ret = tcmu_sub_join(&c->sub, c->region, c->region_size, c->state,
			    c->state_size, cfg->max_data);
	if (ret == -E2BIG)
		snprintf(err, errlen,
			 "%s: the device's ring, set up by another job, takes commands of at most %u bytes, less than this job's max_transfer=%u: give every job on the device the same max_transfer, or ring=private",
			 c->label, c->sub.max_blks * c->sub.blk_size,
			 cfg->max_data);
	else if (ret == -EUSERS)
		snprintf(err, errlen,
			 "%s: the device's ring has %u submitters already, its most: use ring=private for more jobs",
			 c->label, TCMU_SUB_OWNERS);
	else if (ret)
		snprintf(err, errlen,
			 "%s: joining the device's shared ring: %s", c->label,
			 ret == -EINVAL ? "its submitters' state does not match its region" :
			 strerror(-ret));
	if (ret)
		return -1;
	c->joined = true;
	return 0;
fail:
	while (nfds-- > 0)
		if (nfds < TCMU_SHARED_NFDS)
			close(fds[nfds]);
	return -1;
}

static int attach(struct tcmu_client *c, const char *path,
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
		ret = recv_all(c, buf, sizeof(buf), deadline, fds,
			       TCMU_SHARED_NFDS, &nfds);
	if (ret) {
		for (i = 0; i < nfds && i < TCMU_SHARED_NFDS; i++)
			close(fds[i]);
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
		return join(c, cfg, &rep, fds, nfds, err, errlen);
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
	c->complete = cfg->complete;
	c->complete_arg = cfg->complete_arg;
	if (make_region(c, cfg, err, errlen) ||
	    attach(c, socket_path, cfg, err, errlen))
		goto fail;
	/* A shared ring's ids go to every client: the records are per id. */
	c->nr_ids = c->sub.nr_slots;
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

static int queue_cmd(struct tcmu_client *c, const uint8_t *cdb,
		     uint32_t cdb_len, uint32_t data_len, const void *wbuf,
		     void *rbuf, void *user, bool short_ok)
{
	struct cmd_rec *r;
	int id;

	if (c->down)
		return -ENOTCONN;
	if (c->inflight >= c->max_cmds)
		return -EBUSY;
	id = tcmu_sub_queue(&c->sub, cdb, cdb_len, data_len, wbuf);
	if (id < 0)
		return id;
	r = &c->cmds[id];
	r->user = user;
	r->rbuf = rbuf;
	r->rlen = rbuf ? data_len : 0;
	r->start_ns = c->timeout_s ? now_ns() : 0;
	r->busy = true;
	r->short_ok = short_ok;
	c->inflight++;
	c->unkicked++;
	/* The kernel moves cmd_head as it queues each command. */
	if (c->hold)
		c->held++;
	else
		tcmu_sub_commit(&c->sub);
	return 0;
}

int tcmu_client_queue(struct tcmu_client *c, const uint8_t *cdb,
		      uint32_t cdb_len, uint32_t data_len, const void *wbuf,
		      void *rbuf, void *user)
{
	return queue_cmd(c, cdb, cdb_len, data_len, wbuf, rbuf, user, false);
}

int tcmu_client_submit(struct tcmu_client *c)
{
	uint64_t one = 1;

	if (!c->unkicked || c->down)
		return 0;
	if (c->held)
		tcmu_sub_commit(&c->sub);
	c->held = 0;
	c->unkicked = 0;
	/* One wake-up per batch, as the kernel's one uio_event_notify. */
	if (write(c->kick_fd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	return 0;
}

/* Bytes from tail up to head, going round the ring. */
static uint32_t ring_dist(uint32_t head, uint32_t tail, uint32_t size)
{
	return (head + size - tail) % size;
}

/* What is wrong with the handler's cmd_tail, or NULL. */
static const char *bad_tail(const struct tcmu_sub *s, uint32_t tail,
			    uint32_t cleaned, uint32_t pub)
{
	if (tail % TCMU_OP_ALIGN_SIZE)
		return "is not on an entry's 8-byte boundary";
	if (tail >= s->cmdr_size)
		return "is outside the command ring";
	if (ring_dist(tail, cleaned, s->cmdr_size) >
	    ring_dist(pub, cleaned, s->cmdr_size))
		return "went backwards or past cmd_head";
	return NULL;
}

/*
 * The kernel does this work in the handler's notify: timed per pass, from
 * its first completion (on_done() reads the clock) to the end, two clock
 * reads for however many commands the pass retires; a pass that finds
 * nothing reads none.
 */
static int reap_ring(struct tcmu_client *c)
{
	uint32_t tail, cleaned = 0, pub = 0;
	const char *why;
	int n;

	c->pass_ns = 0;
	n = tcmu_sub_reap(&c->sub, on_done, c);
	if (n > 0 && !c->in_exec) {
		if (c->pass_ns)
			c->work.ns += now_ns() - c->pass_ns;
		c->work.cmds += n;
	}
	if (c->sub.recovered != c->recovered) {
		c->recovered = c->sub.recovered;
		fprintf(stderr,
			"torus: %s: another job sharing the TCMU ring died holding its lock; its commands are released as they complete\n",
			c->label);
	}
	if (n == -EIO) {
		fprintf(stderr,
			"torus: %s: the shared TCMU ring's lock cannot be recovered; failing its outstanding I/O\n",
			c->label);
		take_down(c, EIO);
		return n;
	}
	if (n != -EPROTO)
		return n;
	/* Which rule the handler broke: the tail's, or a completion's. */
	tail = __atomic_load_n(&c->sub.mb->cmd_tail, __ATOMIC_ACQUIRE);
	tcmu_sub_bounds(&c->sub, &cleaned, &pub);
	why = bad_tail(&c->sub, tail, cleaned, pub);
	if (why) {
		fprintf(stderr,
			"torus: %s: the handler broke the TCMU ring: cmd_tail %u %s (ring of %u bytes, completions reclaimed up to %u, cmd_head %u); failing its outstanding I/O\n",
			c->label, tail, why, c->sub.cmdr_size, cleaned, pub);
		take_down(c, EIO);
		return -EPROTO;
	}
	fprintf(stderr,
		"torus: %s: the handler broke the TCMU ring (a completion that matches no command, or cmd_tail inside an entry); failing its outstanding I/O\n",
		c->label);
	take_down(c, EIO);
	return n;
}

/* The oldest command past the timeout takes the ring down: it cannot be skipped. */
static void scan_timeouts(struct tcmu_client *c, uint64_t now)
{
	uint64_t limit = c->timeout_s * 1000000000ull, step = limit / 8;
	uint32_t id;

	if (!c->timeout_s || now < c->next_scan_ns)
		return;
	c->next_scan_ns = now + (step < 1000000000ull ? step : 1000000000ull);
	for (id = 1; id <= c->nr_ids; id++) {
		if (!c->cmds[id].busy || now - c->cmds[id].start_ns < limit)
			continue;
		fprintf(stderr,
			"torus: %s: a command had no completion from the handler within request_timeout=%u s; failing the ring's outstanding I/O\n",
			c->label, c->timeout_s);
		take_down(c, ETIMEDOUT);
		return;
	}
}

int tcmu_client_reap(struct tcmu_client *c, unsigned int min,
		     const struct timespec *timeout)
{
	uint64_t start = now_ns(), limit = 0;
	unsigned int got;
	int ret = 0;

	c->completed = 0;
	if (timeout)
		limit = timeout->tv_sec * 1000000000ull + timeout->tv_nsec;
	if (!c->down)
		reap_ring(c);
	while (c->completed < min && c->inflight && !c->down) {
		struct pollfd pfd[2] = {
			{ .fd = c->done_fd, .events = POLLIN },
			{ .fd = c->sock, .events = POLLIN },
		};
		uint64_t now = now_ns(), count;
		int ms = -1;

		scan_timeouts(c, now);
		if (c->down)
			break;
		if (timeout) {
			if (now - start >= limit)
				break;
			ms = (limit - (now - start) + 999999) / 1000000;
		}
		if (c->timeout_s && (ms < 0 || ms > 1000))
			ms = 1000;
		if (poll(pfd, 2, ms) < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		if (pfd[1].revents) {
			fprintf(stderr,
				"torus: %s: the handler host closed the connection; failing the ring's outstanding I/O\n",
				c->label);
			take_down(c, EIO);
			break;
		}
		if (pfd[0].revents & POLLIN &&
		    read(c->done_fd, &count, sizeof(count)) < 0 &&
		    errno != EAGAIN) {
			ret = -errno;
			break;
		}
		reap_ring(c);
	}
	got = c->completed;
	c->completed = 0;
	return ret ? ret : (int)got;
}

void tcmu_client_cancel(struct tcmu_client *c, int error)
{
	if (!c->down)
		reap_ring(c);
	if (!c->inflight)
		return;
	/* Say why: the caller only sees the errno. */
	fprintf(stderr,
		"torus: %s: %u command%s had no completion from the handler when cancelled (%s); failing them\n",
		c->label, c->inflight, c->inflight == 1 ? "" : "s",
		strerror(error));
	take_down(c, error);
}

unsigned int tcmu_client_held(const struct tcmu_client *c)
{
	return c->held;
}

unsigned int tcmu_client_inflight(const struct tcmu_client *c)
{
	return c->inflight;
}

/* exec()'s own completer: the command's user pointer is where it goes. */
static void exec_done(void *arg, const struct tcmu_completion *d)
{
	*(struct tcmu_completion *)d->user = *d;
}

int tcmu_client_exec(struct tcmu_client *c, const uint8_t *cdb,
		     uint32_t cdb_len, uint32_t data_len, const void *wbuf,
		     void *rbuf, struct tcmu_completion *done)
{
	struct timespec slice = { .tv_nsec = SLICE_MS * 1000000L };
	tcmu_complete_fn *fn = c->complete;
	void *arg = c->complete_arg;
	int ret, n;

	ret = queue_cmd(c, cdb, cdb_len, data_len, wbuf, rbuf, done, true);
	if (!ret)
		ret = tcmu_client_submit(c);
	if (ret)
		return ret;
	c->complete = exec_done;
	c->in_exec = true;
	do {
		n = tcmu_client_reap(c, 1, &slice);
	} while (!n && !(c->stop && *c->stop));
	c->in_exec = false;
	c->complete = fn;
	c->complete_arg = arg;
	if (n < 0)
		return n;
	return n ? 0 : -EINTR;
}

void tcmu_client_work(const struct tcmu_client *c,
		      struct tcmu_client_work *w)
{
	*w = c->work;
}

void tcmu_client_free(struct tcmu_client *c)
{
	if (!c)
		return;
	if (c->sock >= 0)
		close(c->sock);
	if (c->sub.st)
		tcmu_sub_free(&c->sub);
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
