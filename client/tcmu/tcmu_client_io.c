// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU client's I/O (see tcmu_client.h): commands queued with their
 * data copied in, wake-ups, completions reaped, checked as the kernel
 * checks them and handed back, read data copied out, timeouts, and the
 * ring taken down when it cannot be trusted. Attaching is
 * tcmu_client_attach.c.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tcmu_client_state.h"
#include "torus_clock.h"

/* The one hand-off of a finished command: straight to the caller. */
static void hand_back(struct tcmu_client *c, const struct tcmu_completion *d)
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
		hand_back(c, &d);
	}
}

/*
 * A read's data, as much as arrived, out of the data area into the
 * caller's buffer: a short one fails unless allowed.
 */
static void copy_out(struct tcmu_client *c, const struct tcmu_done *td,
		     const struct cmd_rec *r, uint32_t len,
		     struct tcmu_completion *d)
{
	if (len < r->rlen && !r->short_ok) {
		d->error = EIO;
		snprintf(d->why, sizeof(d->why),
			 "the handler returned %u of %u bytes", len, r->rlen);
		return;
	}
	if (tcmu_sub_copy_out(&c->sh.sub, td->cmd_id, r->rbuf, len)) {
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
		hand_back(c, &d);
		return;
	}
	switch (td->status) {
	case SCSI_STATUS_GOOD:
		if (is_read)
			copy_out(c, td, r, len, &d);
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
			copy_out(c, td, r, len, &d);
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
	hand_back(c, &d);
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
	id = tcmu_shared_queue(&c->sh, cdb, cdb_len, data_len, wbuf);
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
		tcmu_shared_commit(&c->sh);
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
		tcmu_shared_commit(&c->sh);
	c->held = 0;
	c->unkicked = 0;
	/* One wake-up per batch, as the kernel's one uio_event_notify. */
	if (write(c->kick_fd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	return 0;
}

/* What is wrong with the handler's cmd_tail, or NULL. */
static const char *bad_tail(const struct tcmu_sub *s, uint32_t tail,
			    uint32_t cleaned, uint32_t pub)
{
	if (tail % TCMU_OP_ALIGN_SIZE)
		return "is not on an entry's 8-byte boundary";
	if (tail >= s->cmdr_size)
		return "is outside the command ring";
	if (tcmu_ring_used(tail, cleaned, s->cmdr_size) >
	    tcmu_ring_used(pub, cleaned, s->cmdr_size))
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
	n = tcmu_shared_reap(&c->sh, on_done, c);
	if (n > 0 && !c->in_exec) {
		if (c->pass_ns)
			c->work.ns += now_ns() - c->pass_ns;
		c->work.cmds += n;
	}
	/* A shared ring's walk, before this owner's first completion. */
	if (!c->in_exec)
		c->work.ns += c->sh.walk_ns;
	c->sh.walk_ns = 0;
	if (c->sh.recovered != c->recovered) {
		c->recovered = c->sh.recovered;
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
	tail = __atomic_load_n(&c->sh.sub.mb->cmd_tail, __ATOMIC_ACQUIRE);
	tcmu_shared_bounds(&c->sh, &cleaned, &pub);
	why = bad_tail(&c->sh.sub, tail, cleaned, pub);
	if (why) {
		fprintf(stderr,
			"torus: %s: the handler broke the TCMU ring: cmd_tail %u %s (ring of %u bytes, completions reclaimed up to %u, cmd_head %u); failing its outstanding I/O\n",
			c->label, tail, why, c->sh.sub.cmdr_size, cleaned, pub);
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
	uint64_t start = now_ns();
	int ret, n;

	/*
	 * A shared ring whose room the other jobs hold: each try sleeps for
	 * room (tcmu_shared_queue()), until the command's timeout.
	 */
	do {
		ret = queue_cmd(c, cdb, cdb_len, data_len, wbuf, rbuf, done,
				true);
	} while (ret == -EBUSY && c->shared && !c->inflight &&
		 !(c->stop && *c->stop) &&
		 (!c->timeout_s ||
		  now_ns() - start < c->timeout_s * 1000000000ull));
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
