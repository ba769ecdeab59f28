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

/*
 * Commands' start times for request_timeout: the coarse clock (a tick's
 * resolution for a limit in seconds) costs a command no clock read of its
 * own. Started and scanned on the same clock.
 */
static uint64_t coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

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
 * caller's buffer: less than asked is a residual, as the kernel's
 * target_complete_cmd_with_length() makes it (data_len says how much).
 */
static void copy_out(struct tcmu_client *c, const struct tcmu_done *td,
		     const struct cmd_rec *r, uint32_t len,
		     struct tcmu_completion *d)
{
	if (tcmu_sub_copy_out(&c->sh.sub, td->cmd_id, r->rbuf, len)) {
		d->error = EIO;
		snprintf(d->why, sizeof(d->why),
			 "the handler's %u bytes could not be copied out", len);
		return;
	}
	d->data_len = len;
}

/*
 * UNKNOWN_OP: the kernel completes the command with CHECK CONDITION and
 * no sense of the handler's, which the target core turns into LOGICAL
 * UNIT COMMUNICATION FAILURE (NOT READY): the initiator sees EIO.
 */
static void unknown_op(const struct cmd_rec *r, struct tcmu_completion *d)
{
	d->status = SCSI_STATUS_CHECK_CONDITION;
	tcmu_sense_set(&d->sense, SCSI_SK_NOT_READY, SCSI_ASC_LU_COMM_FAILURE,
		       0);
	d->has_sense = true;
	d->error = EIO;
	snprintf(d->why, sizeof(d->why),
		 "the handler flagged opcode %#04x UNKNOWN_OP (logical unit communication failure)",
		 r->opcode);
}

/*
 * What the handler answered, as an errno, checked as the kernel checks it:
 * UNKNOWN_OP fails the command; read_len counts only with READ_LEN and
 * when not 0; a read's data comes back with GOOD, or with CHECK CONDITION
 * and a valid read_len. A read succeeds only when its data was copied.
 * Only what the answer uses is filled in: the sense with has_sense, why
 * with a cause (its first byte 0 otherwise).
 */
static void on_done(void *arg, const struct tcmu_done *td)
{
	struct tcmu_client *c = arg;
	struct cmd_rec *r = &c->cmds[td->cmd_id];
	struct tcmu_completion d;
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
	if (!c->pass_ns && c->time_pass)
		c->pass_ns = now_ns();
	d.user = r->user;
	d.cmd_id = td->cmd_id;
	d.error = 0;
	d.status = td->status;
	d.has_sense = false;
	d.data_len = 0;
	d.seen_ns = c->pass_ns;
	d.why[0] = 0;
	if (len_valid && td->read_len < len)
		len = td->read_len;
	if (td->uflags & TCMU_UFLAG_UNKNOWN_OP) {
		unknown_op(r, &d);
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

/*
 * The cost of one clock read, which every timed span holds besides its
 * work (the end of the first read, the start of the last): the least of
 * 16 back-to-back pairs, taken at the first span's end.
 */
static uint64_t clock_cost(void)
{
	uint64_t least = UINT64_MAX;
	int i;

	for (i = 0; i < 16; i++) {
		uint64_t t = now_ns(), d = now_ns() - t;

		if (d < least)
			least = d;
	}
	return least ? least : 1;
}

/* Nanoseconds since t0, a clock read's cost taken off. */
static uint64_t span_ns(struct tcmu_client *c, uint64_t t0)
{
	uint64_t d = now_ns() - t0;

	if (!c->clock_ns)
		c->clock_ns = clock_cost();
	return d > c->clock_ns ? d - c->clock_ns : 0;
}

/*
 * Whether to time this command's submission work, or this kick: about one
 * in SUB_EVERY, at random gaps (xorshift32; *gap counts down the current
 * one), so that a job's own period (a request split in four, a read then
 * a write) cannot line up with the sample; the first is always timed.
 */
#define SUB_EVERY	16

static bool sampled(struct tcmu_client *c, uint32_t *gap)
{
	uint32_t x = c->sub_rand ? c->sub_rand : 2463534242u;

	if (*gap) {
		(*gap)--;
		return false;
	}
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	c->sub_rand = x;
	*gap = x % (2 * SUB_EVERY - 1);
	return true;
}

/*
 * The kernel does this work in a kworker: sampled (sampled()), from
 * before the cmd_id is taken to after cmd_head is published. Set-up
 * commands (exec()'s) are not counted.
 */
static int queue_cmd(struct tcmu_client *c, const uint8_t *cdb,
		     uint32_t cdb_len, uint32_t data_len, const void *wbuf,
		     void *rbuf, void *user)
{
	bool timed = !c->in_exec && sampled(c, &c->sub_gap);
	uint64_t t0 = timed ? now_ns() : 0;
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
	r->start_ns = c->timeout_s ? coarse_ns() : 0;
	r->busy = true;
	r->opcode = cdb[0];
	c->inflight++;
	c->unkicked++;
	/* The kernel moves cmd_head as it queues each command. */
	if (c->hold)
		c->held++;
	else
		tcmu_shared_commit(&c->sh);
	if (timed) {
		c->sub_ns += span_ns(c, t0);
		c->sub_timed++;
	}
	if (!c->in_exec)
		c->sub_cmds++;
	return 0;
}

int tcmu_client_queue(struct tcmu_client *c, const uint8_t *cdb,
		      uint32_t cdb_len, uint32_t data_len, const void *wbuf,
		      void *rbuf, void *user)
{
	return queue_cmd(c, cdb, cdb_len, data_len, wbuf, rbuf, user);
}

/*
 * One wake-up per batch, as the kernel's one uio_event_notify when it
 * unplugs: the kernel's kworker pays for it, so it is timed (sampled) into
 * the submission share. As the kernel's wake_up costs little when the
 * handler is not asleep in poll(), the eventfd is written only when the
 * doorbell says it may be (or there is none).
 */
int tcmu_client_submit(struct tcmu_client *c)
{
	bool timed;
	uint64_t one = 1, t0;
	ssize_t n = sizeof(one);

	if (!c->unkicked || c->down)
		return 0;
	if (c->held)
		tcmu_shared_commit(&c->sh);
	c->held = 0;
	c->unkicked = 0;
	timed = !c->in_exec && sampled(c, &c->kick_gap);
	t0 = timed ? now_ns() : 0;
	if (tcmu_doorbell_ring(c->bell)) {
		n = write(c->kick_fd, &one, sizeof(one));
		if (!c->in_exec)
			c->woken++;
	}
	if (timed) {
		c->kick_ns += span_ns(c, t0);
		c->kick_timed++;
	}
	if (!c->in_exec)
		c->kicks++;
	return n == sizeof(one) ? 0 : -errno;
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
 * reads for however many commands the pass retires (span_ns()); a pass
 * that finds nothing reads none. With one or two commands a pass (fio's
 * pace at any depth) that was two clock reads a command: a sample of the
 * passes is timed unless every pass's clock is wanted anyway (stamp_seen).
 */
static int reap_ring(struct tcmu_client *c)
{
	uint32_t tail, cleaned = 0, pub = 0;
	const char *why;
	int n;

	c->pass_ns = 0;
	c->time_pass = c->stamp_seen || !(c->passes % TCMU_WORK_SAMPLE);
	n = tcmu_shared_reap(&c->sh, on_done, c);
	if (n > 0 && !c->in_exec) {
		if (c->pass_ns) {
			c->timed_ns += span_ns(c, c->pass_ns);
			c->timed_cmds += n;
		}
		c->passes++;
		c->work_cmds += n;
	}
	/* A shared ring's walk, before this owner's first completion. */
	if (!c->in_exec)
		c->walk_ns += c->sh.walk_ns;
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
	tail = __atomic_load_n(tcmu_mb_tail(c->sh.sub.base), __ATOMIC_ACQUIRE);
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
static void scan_timeouts(struct tcmu_client *c)
{
	uint64_t limit = c->timeout_s * 1000000000ull, step = limit / 8, now;
	uint32_t id;

	if (!c->timeout_s)
		return;
	now = coarse_ns();
	if (now < c->next_scan_ns)
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

/*
 * Before a sleep: the done eventfd's count is reset, then the ring looked
 * at once more. A completion posted before the reset is found by that
 * look; the handler's write after one posted later wakes poll(). Reaps
 * that find completions waiting never make this call, so the count only
 * goes back to 0 here: a stale count costs one poll() that returns at
 * once, never a lost wake-up.
 */
static int before_sleep(struct tcmu_client *c)
{
	uint64_t count;

	if (read(c->done_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		return -errno;
	reap_ring(c);
	return 0;
}

int tcmu_client_reap(struct tcmu_client *c, unsigned int min,
		     const struct timespec *timeout)
{
	uint64_t start = 0, limit = 0;
	unsigned int got;
	int ret = 0;

	c->completed = 0;
	if (!c->down)
		reap_ring(c);
	while (c->completed < min && c->inflight && !c->down) {
		struct pollfd pfd[2] = {
			{ .fd = c->done_fd, .events = POLLIN },
			{ .fd = c->sock, .events = POLLIN },
		};
		uint64_t now = now_ns();
		int ms = -1;

		/* The clock only when there is a wait to time. */
		if (!start) {
			start = now;
			if (timeout)
				limit = timeout->tv_sec * 1000000000ull +
					timeout->tv_nsec;
		}
		scan_timeouts(c);
		if (c->down)
			break;
		if (timeout) {
			if (now - start >= limit)
				break;
			ms = (limit - (now - start) + 999999) / 1000000;
		}
		if (c->timeout_s && (ms < 0 || ms > 1000))
			ms = 1000;
		ret = before_sleep(c);
		if (ret || c->completed >= min || c->down)
			break;
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
	c->in_exec = true;
	do {
		ret = queue_cmd(c, cdb, cdb_len, data_len, wbuf, rbuf, done);
	} while (ret == -EBUSY && c->shared && !c->inflight &&
		 !(c->stop && *c->stop) &&
		 (!c->timeout_s ||
		  now_ns() - start < c->timeout_s * 1000000000ull));
	if (!ret)
		ret = tcmu_client_submit(c);
	if (ret) {
		c->in_exec = false;
		return ret;
	}
	c->complete = exec_done;
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
	double sub = c->sub_timed ? (double)c->sub_ns / c->sub_timed : 0;
	double kick = c->kick_timed ? (double)c->kick_ns / c->kick_timed : 0;

	w->cmds = c->work_cmds;
	w->ns = c->timed_cmds ? (uint64_t)((double)c->timed_ns /
					    c->timed_cmds * c->work_cmds) : 0;
	w->ns += c->walk_ns;
	w->sub_cmds = c->sub_cmds;
	w->sub_timed = c->sub_timed;
	w->sub_ns = (uint64_t)(sub * c->sub_cmds + kick * c->kicks);
	w->kicks = c->kicks;
	w->kick_timed = c->kick_timed;
	w->woken = c->woken;
}
