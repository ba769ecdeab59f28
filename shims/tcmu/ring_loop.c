// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ring loop (see ring.h): wait for cmd_head to move, take every new
 * command, execute it, complete it, and tell the producer once per batch.
 * Over a store with asynchronous requests, I/O commands are started and
 * the loop waits on the store's fd too: they complete as the store
 * finishes them, out of order, and one notify covers every completion of
 * a pass.
 *
 * No wake-up is lost: the wait fd is a counter (eventfd, UIO event count)
 * that is read before the ring is walked, and the producer publishes
 * cmd_head before it bumps the counter; a command published after the
 * walk found nothing bumps it again and poll() returns. With a doorbell
 * the producer bumps it only when the loop says it may sleep: the loop
 * says so, then looks at cmd_head once more before it does
 * (tcmu_doorbell.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "ring.h"
#include "ring_stamps.h"
#include "torus_util.h"

/*
 * The most iovecs a command may bring: its data cut into 512-byte pieces
 * (a kernel cuts into 4 KiB data-area blocks and merges neighbours), for
 * the largest transfer or the 1 MiB an emulated command may ask for.
 */
static uint32_t iov_limit(const struct scsi_target *t)
{
	uint64_t bytes = (uint64_t)t->max_xfer * t->block_size;

	if (bytes < (1u << 20))
		bytes = 1u << 20;
	return bytes / 512 + 2;
}

/*
 * The most commands the ring holds at once: entries of the smallest size
 * (no iovec, a 6-byte CDB), within the 16-bit cmd_id.
 */
static uint32_t ring_slots(const struct ring *r)
{
	uint32_t n = r->hdl.cmdr_size / tcmu_cmd_entry_size(0, 6);

	return n < UINT16_MAX ? n : UINT16_MAX;
}

/*
 * The store's asynchronous requests, when it has them: a slot for every
 * command the ring can hold (calloc'd, so only slots used are touched).
 * -ENOMEM, else 0 (a store without them, or that cannot, runs sync).
 */
static int aio_init(struct ring *r, struct store *st)
{
	uint32_t i, n = ring_slots(r);
	int fd;

	r->store_fd = -1;
	/* Completions out of order need a producer that takes them. */
	if (!st->ops->aio || !r->ooo)
		return 0;
	r->cmds = calloc(n, sizeof(*r->cmds));
	r->free_cmds = calloc(n, sizeof(*r->free_cmds));
	if (!r->cmds || !r->free_cmds)
		return -ENOMEM;
	fd = store_aio_open(st, n);
	if (fd < 0) {
		shim_err("%s: the store's asynchronous requests: %s; commands run one at a time",
			 r->name, strerror(-fd));
		return 0;
	}
	/* Not the slots themselves: only those used are touched. */
	for (i = 0; i < n; i++)
		r->free_cmds[i] = &r->cmds[n - 1 - i];
	r->nr_slots = r->nr_free = n;
	r->store_fd = fd;
	return 0;
}

int ring_init(struct ring *r, const char *name, void *region, uint64_t size,
	      const struct scsi_target *t, struct store *st, char *err,
	      size_t errlen)
{
	const struct tcmu_mailbox *mb = region;
	int ret;

	memset(r, 0, sizeof(*r));
	r->wait_fd = r->notify_fd = r->store_fd = -1;
	snprintf(r->name, sizeof(r->name), "%s", name);
	ret = tcmu_hdl_init(&r->hdl, region, size);
	if (ret == -EPROTONOSUPPORT) {
		snprintf(err, errlen,
			 "ring version %u, the handler host speaks TCMU mailbox version %u",
			 (unsigned int)mb->version, TCMU_MAILBOX_VERSION);
		return ret;
	}
	if (ret) {
		snprintf(err, errlen,
			 "the ring's mailbox is inconsistent (cmdr_off %u, cmdr_size %u, cmd_tail %u in a %llu-byte region)",
			 mb->cmdr_off, mb->cmdr_size, mb->cmd_tail,
			 (unsigned long long)size);
		return ret;
	}
	r->read_len = mb->flags & TCMU_MAILBOX_FLAG_CAP_READ_LEN;
	r->ooo = mb->flags & TCMU_MAILBOX_FLAG_CAP_OOOC;
	r->cmd.iov_max = iov_limit(t);
	r->cmd.iov = calloc(r->cmd.iov_max, sizeof(*r->cmd.iov));
	if (!r->cmd.iov || scsi_lu_init(&r->lu, t, st) || aio_init(r, st)) {
		ring_free(r);
		snprintf(err, errlen, "out of memory for the ring's buffers");
		return -ENOMEM;
	}
	ring_stamps_open(r);
	return 0;
}

void ring_free(struct ring *r)
{
	ring_stamps_close(r);
	scsi_lu_free(&r->lu);
	free(r->cmd.iov);
	free(r->cmds);
	free(r->free_cmds);
	r->cmd.iov = NULL;
	r->cmds = NULL;
	r->free_cmds = NULL;
}

void ring_report(const struct ring *r)
{
	if (r->store_fd >= 0)
		shim_info("%s: %llu commands, at most %u in flight to the store",
			  r->name, (unsigned long long)r->nr_cmds,
			  r->max_inflight);
	else
		shim_debug("%s: %llu commands served", r->name,
			   (unsigned long long)r->nr_cmds);
}

/* A command of the submitter tagged @tag completed in this pass. */
static void mark_done(struct ring *r, uint8_t tag)
{
	r->done++;
	if (!r->peers)
		return;
	if (tag && tag <= RING_PEERS_MAX)
		r->wake |= 1ull << (tag - 1);
	else
		r->wake_all = true;
}

/*
 * A shared ring's submitters whose commands this pass completed: one
 * write each. Whoever reaps first walks them all, and hands each to its
 * owner without a wake-up of its own.
 */
static int notify_peers(struct ring *r)
{
	struct ring_peers *p = r->peers;
	uint64_t one = 1, wake = r->wake_all ? ~0ull : r->wake;
	unsigned int i;

	r->wake = 0;
	r->wake_all = false;
	pthread_mutex_lock(&p->lock);
	for (; wake; wake &= wake - 1) {
		i = __builtin_ctzll(wake);
		if (p->fds[i] < 0)
			continue;
		while (write(p->fds[i], &one, sizeof(one)) < 0 &&
		       errno == EINTR)
			;
	}
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/* The producer may reap: one write covers every completion so far. */
static int notify(struct ring *r)
{
	uint64_t one = 1;
	uint32_t any = 1;
	ssize_t n;

	if (r->peers)
		return notify_peers(r);
	do {
		if (r->uio)
			n = write(r->notify_fd, &any, sizeof(any));
		else
			n = write(r->notify_fd, &one, sizeof(one));
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

static void log_failure(const struct ring *r, uint8_t opcode,
			const struct scsi_reply *rep)
{
	struct tcmu_sense s;
	char msg[160];

	if (tcmu_sense_decode(rep->sense, rep->sense_len, &s))
		return;
	tcmu_sense_msg(&s, msg, sizeof(msg));
	if (rep->error)
		shim_err("%s: command 0x%02x failed: %s (%s)", r->name,
			 opcode, msg, strerror(rep->error));
	else
		shim_debug("%s: command 0x%02x: %s", r->name, opcode, msg);
}

/*
 * The reply into the ring, logged, and its timeline record @rec written:
 * 0 or tcmu_hdl_complete()'s error.
 */
static int reply(struct ring *r, uint16_t cmd_id, uint8_t opcode,
		 uint32_t iov_cnt, const struct scsi_reply *rep,
		 struct tl_rec *rec)
{
	int ret;

	if (rep->status != SCSI_STATUS_GOOD)
		log_failure(r, opcode, rep);
	else
		shim_debug("%s: command 0x%02x (%u iovecs): good", r->name,
			   opcode, iov_cnt);
	if (r->tl)
		ring_stamps_reply(rec);
	ret = tcmu_hdl_complete(&r->hdl, cmd_id, rep->status, rep->sense,
				rep->sense_len,
				r->read_len ? rep->read_len : -1);
	if (r->tl && !ret)
		ring_stamps_done(r, rec);
	return ret;
}

/* One command taken from the ring: executed and completed. */
static int serve(struct ring *r)
{
	struct tcmu_hdl_cmd *cmd = &r->cmd;
	struct scsi_reply rep;

	/* A store's synchronous call may take its other replies in. */
	if (r->inflight)
		r->reap_due = true;
	if (r->tl)
		r->rec.t[RS_STARTED] = now_ns();
	scsi_execute(&r->lu, cmd->cdb, cmd->cdb_max, cmd->iov, cmd->iov_cnt,
		     &rep);
	if (r->tl)
		r->rec.t[RS_STORED] = now_ns();
	return reply(r, cmd->cmd_id, cmd->cdb[0], cmd->iov_cnt, &rep, &r->rec);
}

/* The store finished a command's request: its reply, in any order. */
static void cmd_done(struct store_io *bio, int err)
{
	struct ring_cmd *c = container_of(bio, struct ring_cmd, io.bio);
	struct ring *r = c->r;
	struct scsi_reply rep;

	if (r->tl)
		c->rec.t[RS_STORED] = now_ns();
	scsi_finish(&r->lu, &c->io, err, &rep);
	if (reply(r, c->cmd_id, c->opcode, bio->iov_cnt, &rep, &c->rec))
		r->broken = true;
	r->free_cmds[r->nr_free++] = c;
	r->inflight--;
	mark_done(r, c->tag);
}

/*
 * The command's iovecs into @c, neighbours merged (the data area is one
 * mapping): false when more pieces remain than it holds.
 */
static bool copy_iov(struct ring_cmd *c, const struct tcmu_hdl_cmd *cmd)
{
	uint32_t i, n = 0;

	for (i = 0; i < cmd->iov_cnt; i++) {
		const struct iovec *v = &cmd->iov[i];

		if (n && (uint8_t *)c->iov[n - 1].iov_base +
			 c->iov[n - 1].iov_len == (uint8_t *)v->iov_base) {
			c->iov[n - 1].iov_len += v->iov_len;
			continue;
		}
		if (n == RING_CMD_IOV)
			return false;
		c->iov[n++] = *v;
	}
	c->io.bio.iov_cnt = n;
	return true;
}

/*
 * A command for a store with asynchronous requests: I/O is started (1),
 * the rest answered now (0), or -EPROTO.
 */
static int start(struct ring *r)
{
	struct tcmu_hdl_cmd *cmd = &r->cmd;
	struct ring_cmd *c;
	struct scsi_reply rep;
	uint32_t cnt;

	if (!r->nr_free)
		return serve(r);
	c = r->free_cmds[r->nr_free - 1];
	if (!copy_iov(c, cmd))
		return serve(r);
	cnt = c->io.bio.iov_cnt;
	switch (scsi_prepare(&r->lu, cmd->cdb, cmd->cdb_max, c->iov, cnt,
			     &c->io, &rep)) {
	case SCSI_PLAN_DONE:
		return reply(r, cmd->cmd_id, cmd->cdb[0], cmd->iov_cnt, &rep,
			     &r->rec);
	case SCSI_PLAN_SYNC:
		return serve(r);
	case SCSI_PLAN_START:
		break;
	}
	r->nr_free--;
	c->r = r;
	c->cmd_id = cmd->cmd_id;
	c->opcode = cmd->cdb[0];
	c->tag = cmd->kflags;
	c->io.bio.done = cmd_done;
	if (++r->inflight > r->max_inflight)
		r->max_inflight = r->inflight;
	r->started++;
	if (r->tl) {
		c->rec = r->rec;
		c->rec.t[RS_STARTED] = now_ns();
	}
	store_aio_submit(r->lu.st, &c->io.bio);
	return 1;
}

/* An entry whose offsets or lengths do not check out: refused alone. */
static int refuse(struct ring *r)
{
	struct scsi_reply rep = { .read_len = -1 };
	struct tcmu_sense s;
	int ret;

	shim_err("%s: a malformed command entry (cmd_id %u): answered INVALID FIELD IN CDB",
		 r->name, r->cmd.cmd_id);
	tcmu_sense_invalid_field(&s, true, 0, -1);
	scsi_reply_sense(&rep, &s);
	if (r->tl)
		ring_stamps_reply(&r->rec);
	ret = tcmu_hdl_complete(&r->hdl, r->cmd.cmd_id, rep.status,
				rep.sense, rep.sense_len, -1);
	if (r->tl && !ret)
		ring_stamps_done(r, &r->rec);
	return ret;
}

/* Everything published so far taken: 0, or -EPROTO. */
static int drain(struct ring *r)
{
	int ret;

	for (;;) {
		if (r->tl)
			ring_stamps_look(r);
		ret = tcmu_hdl_next(&r->hdl, &r->cmd);
		if (ret == 0)
			return 0;
		if (r->tl && (ret == 1 || ret == -EINVAL))
			ring_stamps_pick(r, ret == 1);
		if (ret == 1 && r->store_fd >= 0)
			ret = start(r);
		else if (ret == 1)
			ret = serve(r);
		else if (ret == -EINVAL)
			ret = refuse(r);
		if (ret < 0)
			return -EPROTO;
		if (ret == 0)
			mark_done(r, r->cmd.kflags);
		r->nr_cmds++;
	}
}

/*
 * Wait for a kick, the stop fd or the store. With requests in flight the
 * store is reaped at least every STORE_AIO_TICK_MS (its timeouts).
 */
static int wait_kick(struct ring *r, int stop_fd)
{
	struct pollfd pfd[3] = {
		{ .fd = r->wait_fd, .events = POLLIN },
		{ .fd = stop_fd, .events = POLLIN | POLLRDHUP },
		{ .fd = r->store_fd, .events = POLLIN },
	};
	int nfds = r->store_fd >= 0 ? 3 : 2, ms, n;
	uint64_t count;
	uint32_t events;

	ms = r->inflight ? STORE_AIO_TICK_MS : -1;
	/* A command published before the flag was seen: no sleep. */
	if (r->bell) {
		tcmu_doorbell_sleep(r->bell);
		if (tcmu_hdl_pending(&r->hdl))
			ms = 0;
	}
	n = poll(pfd, nfds, ms);
	if (r->bell)
		tcmu_doorbell_awake(r->bell);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (pfd[1].revents)
		return 1;
	if (pfd[0].revents & (POLLERR | POLLNVAL))
		return -EIO;
	if (pfd[0].revents & POLLIN) {
		/* The counter is reset (eventfd) or caught up (UIO). */
		if (r->uio)
			n = read(r->wait_fd, &events, sizeof(events));
		else
			n = read(r->wait_fd, &count, sizeof(count));
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
	}
	/* Also when idle: what the store's fd says must be taken. */
	if (r->inflight || (nfds == 3 && pfd[2].revents))
		store_aio_reap(r->lu.st);
	return 0;
}

int ring_run(struct ring *r, int stop_fd)
{
	int ret;

	for (;;) {
		ret = drain(r);
		if (r->started) {
			store_aio_commit(r->lu.st);
			r->started = 0;
			r->reap_due = true;
		}
		/* What failed at once, or came in meanwhile, goes now. */
		if (r->reap_due) {
			r->reap_due = false;
			store_aio_reap(r->lu.st);
		}
		if (!ret && r->broken)
			ret = -EPROTO;
		if (!ret && r->done) {
			r->done = 0;
			ret = notify(r);
		}
		if (!ret)
			ret = wait_kick(r, stop_fd);
		if (ret) {
			/*
			 * Nothing of the store may point into the ring now;
			 * a producer still there (a kernel) sees them fail.
			 */
			if (r->inflight) {
				store_aio_cancel(r->lu.st, -ECANCELED);
				r->wake_all = true;
				notify(r);
			}
			return ret;
		}
	}
}
