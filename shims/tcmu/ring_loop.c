// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ring loop (see ring.h): wait for cmd_head to move, take every new
 * command, execute it, complete it, and tell the producer once per batch.
 *
 * No wake-up is lost: the wait fd is a counter (eventfd, UIO event count)
 * that is read before the ring is walked, and the producer publishes
 * cmd_head before it bumps the counter; a command published after the
 * walk found nothing bumps it again and poll() returns.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "ring.h"

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

int ring_init(struct ring *r, const char *name, void *region, uint64_t size,
	      const struct scsi_target *t, struct backend *be, char *err,
	      size_t errlen)
{
	const struct tcmu_mailbox *mb = region;
	int ret;

	memset(r, 0, sizeof(*r));
	r->wait_fd = r->notify_fd = -1;
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
	r->cmd.iov_max = iov_limit(t);
	r->cmd.iov = calloc(r->cmd.iov_max, sizeof(*r->cmd.iov));
	if (!r->cmd.iov || scsi_lu_init(&r->lu, t, be)) {
		ring_free(r);
		snprintf(err, errlen, "out of memory for the ring's buffers");
		return -ENOMEM;
	}
	return 0;
}

void ring_free(struct ring *r)
{
	scsi_lu_free(&r->lu);
	free(r->cmd.iov);
	r->cmd.iov = NULL;
}

/* The producer may reap: one write covers every completion so far. */
static int notify(struct ring *r)
{
	uint64_t one = 1;
	uint32_t any = 1;
	ssize_t n;

	do {
		if (r->uio)
			n = write(r->notify_fd, &any, sizeof(any));
		else
			n = write(r->notify_fd, &one, sizeof(one));
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

static void log_failure(const struct ring *r, const uint8_t *cdb,
			const struct scsi_reply *rep)
{
	struct tcmu_sense s;
	char msg[160];

	if (tcmu_sense_decode(rep->sense, rep->sense_len, &s))
		return;
	tcmu_sense_msg(&s, msg, sizeof(msg));
	if (rep->error)
		shim_err("%s: command 0x%02x failed: %s (%s)", r->name,
			 cdb[0], msg, strerror(rep->error));
	else
		shim_debug("%s: command 0x%02x: %s", r->name, cdb[0], msg);
}

/* One command taken from the ring: executed and completed. */
static int serve(struct ring *r)
{
	struct tcmu_hdl_cmd *cmd = &r->cmd;
	struct scsi_reply rep;

	scsi_execute(&r->lu, cmd->cdb, cmd->cdb_max, cmd->iov, cmd->iov_cnt,
		     &rep);
	if (rep.status != SCSI_STATUS_GOOD)
		log_failure(r, cmd->cdb, &rep);
	else
		shim_debug("%s: command 0x%02x (%u iovecs): good", r->name,
			   cmd->cdb[0], cmd->iov_cnt);
	return tcmu_hdl_complete(&r->hdl, cmd->cmd_id, rep.status, rep.sense,
				 rep.sense_len,
				 r->read_len ? rep.read_len : -1);
}

/* An entry whose offsets or lengths do not check out: refused alone. */
static int refuse(struct ring *r)
{
	struct scsi_reply rep = { .read_len = -1 };
	struct tcmu_sense s;

	shim_err("%s: a malformed command entry (cmd_id %u): answered INVALID FIELD IN CDB",
		 r->name, r->cmd.cmd_id);
	tcmu_sense_invalid_field(&s, true, 0, -1);
	scsi_reply_sense(&rep, &s);
	return tcmu_hdl_complete(&r->hdl, r->cmd.cmd_id, rep.status,
				 rep.sense, rep.sense_len, -1);
}

/* Everything published so far: the count completed, or -EPROTO. */
static int drain(struct ring *r)
{
	int done = 0, ret;

	for (;;) {
		ret = tcmu_hdl_next(&r->hdl, &r->cmd);
		if (ret == 0)
			return done;
		if (ret == 1)
			ret = serve(r);
		else if (ret == -EINVAL)
			ret = refuse(r);
		if (ret)
			return -EPROTO;
		done++;
		r->nr_cmds++;
	}
}

static int wait_kick(struct ring *r, int stop_fd)
{
	struct pollfd pfd[2] = {
		{ .fd = r->wait_fd, .events = POLLIN },
		{ .fd = stop_fd, .events = POLLIN | POLLRDHUP },
	};
	uint64_t count;
	uint32_t events;
	ssize_t n;

	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[1].revents)
			return 1;
		if (pfd[0].revents & (POLLERR | POLLNVAL))
			return -EIO;
		if (pfd[0].revents & POLLIN)
			break;
	}
	/* Readable: the counter is reset (eventfd) or caught up (UIO). */
	if (r->uio)
		n = read(r->wait_fd, &events, sizeof(events));
	else
		n = read(r->wait_fd, &count, sizeof(count));
	if (n < 0 && errno != EINTR && errno != EAGAIN)
		return -errno;
	return 0;
}

int ring_run(struct ring *r, int stop_fd)
{
	int ret, done;

	for (;;) {
		done = drain(r);
		if (done < 0)
			return done;
		if (done) {
			ret = notify(r);
			if (ret)
				return ret;
		}
		ret = wait_kick(r, stop_fd);
		if (ret)
			return ret;
	}
}
